"""Function signatures from metadata, as far as conform needs them.

Metadata and type schemas of every release (see abi/typeschema.py, the one
parser and the one place their formats are described) become a `Sig`: the
declared parameter types and return type in plain-dict form
(`{"type": key, "args": [...]}`). This module adds what conform needs: which
value kinds a declared type accepts or returns. Pure Python, no ctypes: used by
the parent and by the probe worker.
"""

from __future__ import annotations

from typing import List, TypedDict

from ..abi import constants as C
from ..abi import typeschema as schema
from ..errors import FormatError
from ..text import JsonDict

# Value kinds the probe can build, by the type index they carry.
K_NONE, K_INT, K_BOOL, K_FLOAT = C.kTVMFFINone, C.kTVMFFIInt, C.kTVMFFIBool, C.kTVMFFIFloat
K_DTYPE, K_DEVICE, K_DLTENSOR = C.kTVMFFIDataType, C.kTVMFFIDevice, C.kTVMFFIDLTensorPtr
K_RAWSTR, K_BYTEARRAY = C.kTVMFFIRawStr, C.kTVMFFIByteArrayPtr
K_SMALLSTR, K_SMALLBYTES = C.kTVMFFISmallStr, C.kTVMFFISmallBytes
K_OBJECT, K_STR, K_BYTES, K_FUNCTION = (
    C.kTVMFFIObject,
    C.kTVMFFIStr,
    C.kTVMFFIBytes,
    C.kTVMFFIFunction,
)
K_SHAPE, K_TENSOR, K_ARRAY, K_MAP = C.kTVMFFIShape, C.kTVMFFITensor, C.kTVMFFIArray, C.kTVMFFIMap

_ALIASES = {
    "str": "ffi.String",
    "bytes": "ffi.Bytes",
    "dtype": "DataType",
    "Tensor": "ffi.Tensor",
    "Object": "ffi.Object",
    "void": "None",
}


class TypeDict(TypedDict):
    """A declared type in plain-dict form: `{"type": key, "args": [...]}`."""

    type: str
    args: List[TypeDict]


class SchemaError(ValueError):
    pass


class Sig:
    __slots__ = ("params", "ret")

    params: list[TypeDict]
    ret: TypeDict

    def __init__(self, params: list[TypeDict], ret: TypeDict) -> None:
        self.params = params
        self.ret = ret


def _as_dict(spec: schema.TypeSpec) -> TypeDict:
    """The plain-dict form the probes work with, from abi/typeschema.py's TypeSpec
    (the one parser of type schemas), with C++ spellings normalised."""
    key = _ALIASES.get(spec.key, spec.key)
    return {"type": key, "args": [_as_dict(a) for a in spec.args]}


def _sig(spec: schema.TypeSpec) -> Sig | None:
    if spec.key not in schema.FUNCTION_KEYS:
        raise SchemaError(
            f"type_schema of a function has type {spec.key!r}, expected 'ffi.Function'"
        )
    if spec.params is None:
        return None  # ffi.Function without a signature: an untyped (packed) function
    ret: TypeDict = _as_dict(spec.ret) if spec.ret is not None else {"type": "Any", "args": []}
    return Sig([_as_dict(p) for p in spec.params], ret)


def parse_type_schema(text: str | JsonDict) -> Sig | None:
    """Sig of a function type schema (str or already-decoded dict)."""
    try:
        return _sig(schema.parse_type(text))
    except FormatError as e:
        raise SchemaError(str(e)) from None


def parse_metadata(text: str) -> tuple[JsonDict, Sig | None]:
    """(metadata dict, Sig or None) from the getter's string, or raise SchemaError."""
    try:
        doc, spec = schema.parse_metadata(text)
        return doc, None if spec is None else _sig(spec)
    except FormatError as e:
        raise SchemaError(str(e)) from None


def type_str(t: TypeDict) -> str:
    if t["args"]:
        return f"{t['type']}[{', '.join(type_str(a) for a in t['args'])}]"
    return t["type"]


# --- what a declared type accepts, conservatively ------------------------------
# Used to pick a value a parameter certainly rejects: everything a binding
# might convert implicitly counts as accepted.
_STRINGS = {K_RAWSTR, K_SMALLSTR, K_STR}
_BYTESLIKE = {K_BYTEARRAY, K_SMALLBYTES, K_BYTES}
_ACCEPTS = {
    "int": {K_INT, K_BOOL},
    "bool": {K_BOOL, K_INT},
    "float": {K_FLOAT, K_INT, K_BOOL},
    "None": {K_NONE},
    "ffi.String": _STRINGS,
    "ffi.Bytes": _BYTESLIKE | _STRINGS,
    "DataType": {K_DTYPE} | _STRINGS,
    "Device": {K_DEVICE},
    "DLTensor*": {K_DLTENSOR, K_TENSOR},
    "ffi.Tensor": {K_TENSOR, K_DLTENSOR},
    "ffi.Shape": {K_SHAPE, K_ARRAY},
    "ffi.Array": {K_ARRAY},
    "ffi.List": {K_ARRAY},
    "ffi.Map": {K_MAP},
    "ffi.Dict": {K_MAP},
    "ffi.Function": {K_FUNCTION},
}
# Candidate wrong values, in order of preference (a heap string first: it is an
# object, so the refcount check applies to it too).
WRONG_CANDIDATES = (K_STR, K_INT)


def accepts(t: TypeDict, kind: int) -> bool:
    key = t["type"]
    if key == "Any":
        return True
    if key == "Optional":
        return kind == K_NONE or any(accepts(a, kind) for a in t["args"])
    if key == "Variant":
        return any(accepts(a, kind) for a in t["args"]) or not t["args"]
    if key in _ACCEPTS:
        return kind in _ACCEPTS[key]
    if key == "ffi.Object":
        return kind >= K_OBJECT or kind == K_NONE
    # A registered object type: objects (of a subtype, which we cannot rule
    # out) and None; never a POD value.
    return kind >= K_OBJECT or kind == K_NONE


def wrong_kind(t: TypeDict) -> int | None:
    """A value kind that `t` certainly rejects, or None."""
    for k in WRONG_CANDIDATES:
        if not accepts(t, k):
            return k
    return None


def own_type_converts(t: TypeDict) -> bool:
    """True when a plain value a parameter of type `t` is given may be
    converted rather than refused: a library's own object type can define
    conversions in its C++ type traits (TVM's ir.Expr makes an IntImm of an
    int), which the ABI does not fix; the ffi.* types' rules are fixed."""
    key = t["type"]
    if key in ("Optional", "Variant"):
        return any(own_type_converts(a) for a in t["args"])
    return _own_type(key)


def _own_type(key: str) -> bool:
    """A type the library registers itself (not a POD, not an ffi.* type)."""
    return (
        key not in _ACCEPTS
        and key not in ("Any", "Optional", "Variant")
        and not key.startswith("ffi.")
    )


def type_of_str(text: str) -> TypeDict:
    """The TypeDict `type_str` wrote (`Optional[ir.Expr]`, `Map[K, V]`)."""
    stack: list[TypeDict] = [{"type": "", "args": []}]
    word = ""
    for ch in text + ",":
        if ch in "[,]":
            w = word.strip()
            word = ""
            if w:
                node: TypeDict = {"type": w, "args": []}
                stack[-1]["args"].append(node)
                if ch == "[":
                    stack.append(node)
            if ch == "]" and len(stack) > 1:
                stack.pop()
        else:
            word += ch
    root = stack[0]["args"]
    return root[0] if root else {"type": "Any", "args": []}


# --- what a declared return type allows ----------------------------------------
_RET_KINDS = {
    "int": {K_INT},
    "bool": {K_BOOL},
    "float": {K_FLOAT},
    "None": {K_NONE},
    "ffi.String": {K_SMALLSTR, K_STR},
    "ffi.Bytes": {K_SMALLBYTES, K_BYTES},
    "DataType": {K_DTYPE},
    "Device": {K_DEVICE},
    "DLTensor*": {K_DLTENSOR},
    "ffi.Tensor": {K_TENSOR},
    "ffi.Shape": {K_SHAPE},
    "ffi.Array": {K_ARRAY},
    "ffi.Map": {K_MAP},
    "ffi.Function": {K_FUNCTION},
}

# Object references that may hold nothing, passed as None without Optional in
# the schema (nullable C++ ObjectRefs; a library's own types are nullable unless
# declared otherwise, which the schema does not say). String, Bytes, Array,
# Map and Shape are never null.
_NULLABLE = ("ffi.Function", "ffi.Tensor", "ffi.Module", "ffi.Error")


def return_ok(t: TypeDict, type_index: int) -> bool:
    """True when a result of `type_index` fits the declared return type `t`.
    Registered object types are accepted for any object index (subtyping is
    checked by the runtime, not here)."""
    key = t["type"]
    if key in ("Any", "ffi.Object"):
        return True
    if type_index == K_NONE and (key in _NULLABLE or _own_type(key)):
        return True
    if key == "Optional":
        return type_index == K_NONE or any(return_ok(a, type_index) for a in t["args"])
    if key == "Variant":
        return any(return_ok(a, type_index) for a in t["args"]) or not t["args"]
    if key in _RET_KINDS:
        return type_index in _RET_KINDS[key]
    if key in ("ffi.List", "ffi.Dict", "ffi.Module", "ffi.Error"):
        return type_index >= K_OBJECT
    return type_index >= K_OBJECT


# --- signatures of functions without metadata, found by search ----------------
# A code names one candidate signature, a letter per parameter: "t" a 1-d
# float32 tensor, "T" a 2-d one, "i" an int, "f" a float. The probe tries
# them in order (conform/probe_kernel.py) and keeps the first that a call
# accepts; "T" codes give every tensor 2 dimensions.
_CODE_TYPES = {"t": "ffi.Tensor", "T": "ffi.Tensor", "i": "int", "f": "float"}

#: Candidates, most common first: tensors alone, tensors and a trailing
#: scalar, 2-d tensors, then scalars alone.
SEARCH_CODES = (
    "t tt ttt T TT TTT tf ttf tttf ti tti ttti Tf TTf Ti TTi i f ii ff iii if fi"
).split()

#: How a parameter type reads in a typed C++ function's argument errors
#: ("`f(0: DLTensor*, 1: float) -> void`"), as a code letter.
_HINT_LETTERS = {
    "DLTensor*": "t",
    "Tensor": "t",
    "ffi.Tensor": "t",
    "TensorView": "t",
    "int": "i",
    "bool": "i",
    "float": "f",
    "double": "f",
}


def code_sig(code: str) -> Sig:
    """The Sig a search code stands for (return type unknown: Any)."""
    return Sig([{"type": _CODE_TYPES[c], "args": []} for c in code], {"type": "Any", "args": []})


def code_ndim(code: str) -> int:
    return 2 if "T" in code else 1


def signature_codes(message: str | None) -> list[str]:
    """The signature a typed C++ function names in its argument error
    ("`f(0: DLTensor*, 1: float) -> void`": "tf", then "Tf"), when a code
    letter stands for each of its parameters; else []."""
    text = (message or "")[:4096]
    start = text.find("(0: ")
    end = text.find(")", start)
    if start < 0 or end < 0:
        return []
    letters = []
    for part in text[start + 1 : end].split(","):
        letter = _HINT_LETTERS.get(part.partition(":")[2].strip())
        if letter is None:
            return []
        letters.append(letter)
    code = "".join(letters)
    return [code, code.replace("t", "T")] if "t" in code else [code]


def hint_codes(message: str | None) -> list[str]:
    """Candidates read off the error a call with no arguments raised: the
    signature it names (signature_codes), else every code of the arity it
    states ("expects 2 arguments", "Expected 2 but got 0"). Library text:
    only a hint, every candidate is still called."""
    named = signature_codes(message)
    if named:
        return named
    arity = _stated_arity((message or "")[:4096])
    return [] if arity is None else [c for c in SEARCH_CODES if len(c) == arity]


def _stated_arity(text: str) -> int | None:
    """N of "expects N argument(s)" / "Expected N but got" in an error."""
    import re

    m = re.search(r"[Ee]xpect(?:s|ed)? (\d{1,2})\b(?: arguments?| but got)", text)
    return int(m.group(1)) if m else None


def search_order(hints: list[str]) -> list[str]:
    """The codes to try: those the error hints at (its signature, or every
    code of the arity it states: the function said what it takes), else all."""
    return list(dict.fromkeys(hints)) if hints else list(SEARCH_CODES)
