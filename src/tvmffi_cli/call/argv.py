"""Arguments of `tvmffi call` / `tvmffi bench`: the argument tail (flags and
positional values, parsed into specs in the parent) and the schema-typed
reading of positional values (in the child, which knows the type schema).
Single values are read by literals.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, cast

from ..abi.devices import format_device as device_str
from ..abi.devices import parse_device
from ..abi.dtypes import canonical_dtype
from ..errors import InputError
from .literals import (
    _FLOAT_RE,
    _INT_RE,
    _WORDS_NONE,
    _short,
    float_spec,
    infer_positional,
    int64,
    json_to_spec,
    parse_bool,
    parse_bytes,
    parse_float,
    parse_int,
    parse_json,
    parse_shape,
    parse_tensor,
)
from .specs import (
    ArgSpec,
    ArrayArg,
    BoolArg,
    DeviceArg,
    DtypeArg,
    IntArg,
    MapArg,
    NoneArg,
    Positional,
    ShapeArg,
    Spec,
    StrArg,
)

# A schema type: a typeschema.TypeSpec (.key/.name/.args), a {"type", "args"}
# dict, or None (unknown); read by duck typing, hence Any.
SchemaType = Any
_T = TypeVar("_T")

# ---------------------------------------------------------------------------
# schema-typed conversion (used in the child, which knows the type schema)


def _type_name(t: SchemaType) -> Optional[str]:
    # schema.TypeSpec: .key is the schema's own type key ("ffi.Array"), .name a
    # short alias ("Array"); both spellings are recognised below.
    if isinstance(t, dict):
        return t.get("type")
    return getattr(t, "key", None) or getattr(t, "name", None)


def _type_args(t: SchemaType) -> List[SchemaType]:
    if isinstance(t, dict):
        return list(t.get("args") or [])
    return list(getattr(t, "args", None) or [])


_STR_TYPES = {"ffi.String", "str", "String", "std::string", "const char*", "ffi.SmallStr"}
_INT_TYPES = {"int", "int64_t", "int32_t"}
_FLOAT_TYPES = {"float", "double"}
_TENSOR_TYPES = {"ffi.Tensor", "Tensor", "DLTensor*"}
# Any object: what the command line can build as one is an Array or a Map
# (JSON), a Shape, or an owned Tensor (a DLTensor* view is not an object).
_OBJECT_TYPES = {"Object", "ffi.Object", "ObjectRef"}
_OBJECT_FORMS = "a JSON list or object (Array, Map) or a tensor (x.npy, float32[2]:ones)"


def spec_for_type(
    text: str, typ: SchemaType, cwd: Optional[str] = None, where: str = "argument"
) -> Spec:
    """Convert positional `text` by a schema type (a TypeSpec with .name/.args or a
    {"type", "args"} dict). Returns a spec; InputError when it does not fit."""
    name = _type_name(typ)
    args = _type_args(typ)
    label = f"{where} {_short(text)}"
    if name in (None, "Any", "ffi.Any"):
        guessed = infer_positional(text, cwd).spec
        assert guessed is not None  # infer_positional raises rather than leave it unread
        return guessed
    if name in _INT_TYPES:
        return IntArg(_wrap(parse_int, text, label, "int"))
    if name in _FLOAT_TYPES:
        return float_spec(_wrap(parse_float, text, label, "float"))
    if name == "bool":
        return BoolArg(_wrap(parse_bool, text, label, "bool"))
    if name in _STR_TYPES:
        return StrArg(text)
    if name in ("ffi.Bytes", "bytes", "Bytes", "TVMFFIByteArray*", "ffi.SmallBytes"):
        return parse_bytes(text, cwd)
    if name in ("None", "void"):
        if text.strip().lower() not in _WORDS_NONE:
            raise InputError(f"{label}: expected None")
        return NoneArg()
    if name in ("DataType", "dtype", "DLDataType"):
        return DtypeArg(canonical_dtype(text))
    if name in ("Device", "DLDevice"):
        return device_spec(text)
    if name in _TENSOR_TYPES:
        tensor = parse_tensor(text, cwd)
        return tensor if name == "DLTensor*" else dataclasses.replace(tensor, owned=True)
    if name in _OBJECT_TYPES:
        return _object_spec(text, cwd, label, where)
    if name in ("Optional", "ffi.Optional", "std::optional"):
        if text.strip().lower() in _WORDS_NONE:
            return NoneArg()
        return spec_for_type(text, args[0] if args else None, cwd, where)
    if name in ("Variant", "ffi.Variant", "Union"):
        errors = []
        # Any text fits a string alternative: try it last, so "[1, 2]" is an
        # Array and 5 an int when the variant also has those.
        for a in sorted(
            args, key=lambda a: _type_name(a) in ("ffi.String", "str", "String", "std::string")
        ):
            try:
                return spec_for_type(text, a, cwd, where)
            except InputError as e:
                errors.append(str(e))
        raise InputError(f"{label}: fits none of the variant's types ({'; '.join(errors)})")
    # Containers and the rest take JSON.
    if text.strip()[:1] in ("[", "{", '"') or name in ("ffi.Shape", "Shape"):
        if name in ("ffi.Shape", "Shape") and text.strip()[:1] != "[":
            return ShapeArg(tuple(parse_shape(text)))
        return json_for_type(parse_json(text, where), typ, where)
    raise InputError(
        f"{label}: cannot pass a value of type {type_label(typ)} from the command line"
    )


def _object_spec(text: str, cwd: Optional[str], label: str, where: str) -> Spec:
    """A positional for an Object parameter, built as the schema allows."""
    if text.strip()[:1] in ("[", "{"):
        return json_to_spec(parse_json(text, where), where)
    try:
        tensor = parse_tensor(text, cwd)
    except InputError:
        raise InputError(f"{label}: expected an Object: {_OBJECT_FORMS}") from None
    return dataclasses.replace(tensor, owned=True)  # an ffi.Tensor object, not a DLTensor* view


def _wrap(fn: Callable[[str], _T], text: str, label: str, what: str) -> _T:
    try:
        return fn(text)
    except InputError:
        raise InputError(f"{label}: expected {what}") from None


def device_spec(text: str) -> DeviceArg:
    t, i = parse_device(text)
    return DeviceArg(device_str(t, i), t, i)


def type_label(typ: SchemaType) -> str:
    if hasattr(typ, "render"):
        return cast(str, typ.render())
    name = _type_name(typ) or "Any"
    args = _type_args(typ)
    return f"{name}[{', '.join(type_label(a) for a in args)}]" if args else name


def json_for_type(v: Any, typ: SchemaType, where: str = "argument") -> Spec:
    """A decoded JSON value converted by a schema type -> spec (nested)."""
    name = _type_name(typ)
    args = _type_args(typ)
    label = f"{where}: {json.dumps(v)[:40]}"
    if name in (None, "Any", "ffi.Any"):
        return json_to_spec(v, where)
    if name in ("Optional", "ffi.Optional"):
        return NoneArg() if v is None else json_for_type(v, args[0] if args else None, where)
    if name in ("Variant", "ffi.Variant", "Union"):
        errors: List[str] = []
        for a in args:
            try:
                return json_for_type(v, a, where)
            except InputError as e:
                errors.append(str(e))
        raise InputError(f"{label} fits none of the variant's types ({'; '.join(errors)})")
    if name in _INT_TYPES:
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"{label} is not an int")
        return json_to_spec(v, where)
    if name in _FLOAT_TYPES:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{label} is not a number")
        return float_spec(v)
    if name == "bool":
        if not isinstance(v, bool):
            raise InputError(f"{label} is not true/false")
        return BoolArg(v)
    if name in ("None", "void"):
        if v is not None:
            raise InputError(f"{label} is not null")
        return NoneArg()
    if name in _OBJECT_TYPES and isinstance(v, (list, dict)):
        return json_to_spec(v, where)
    if isinstance(v, str) and name not in (
        "ffi.Array",
        "ffi.Map",
        "ffi.Shape",
        "Array",
        "Map",
        "Shape",
        "ffi.List",
        "ffi.Dict",
        "Tuple",
    ):
        return spec_for_type(v, typ, None, where)
    if name in _STR_TYPES:
        raise InputError(f"{label} is not a string")
    if name in ("ffi.Shape", "Shape"):
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
            raise InputError(f"{label} is not a list of ints (a Shape)")
        return ShapeArg(tuple(int64(x, where) for x in v))
    if name in ("Tuple", "std::tuple", "ffi.Tuple") and args:
        if not isinstance(v, list) or len(v) != len(args):
            raise InputError(f"{label} is not a list of {len(args)} items")
        return ArrayArg(tuple(json_for_type(x, a, where) for x, a in zip(v, args)))
    if name in ("ffi.Array", "Array", "ffi.List", "List"):
        if not isinstance(v, list):
            raise InputError(f"{label} is not a JSON list")
        elem = args[0] if args else None
        return ArrayArg(tuple(json_for_type(x, elem, where) for x in v))
    if name in ("ffi.Map", "Map", "ffi.Dict", "Dict"):
        if not isinstance(v, dict):
            raise InputError(f"{label} is not a JSON object")
        kt = args[0] if args else None
        vt = args[1] if len(args) > 1 else None
        items: List[Tuple[Spec, Spec]] = []
        for k, x in v.items():
            ks: Spec
            if _type_name(kt) in _INT_TYPES:
                ks = IntArg(_wrap(parse_int, k, f"{where} key {k!r}", "int"))
            elif _type_name(kt) in (None, "Any", "ffi.Any") or _type_name(kt) in _STR_TYPES:
                ks = StrArg(k)
            else:
                ks = spec_for_type(k, kt, None, f"{where} key")
            items.append((ks, json_for_type(x, vt, where)))
        return MapArg(tuple(items))
    raise InputError(f"{label} cannot be converted to {type_label(typ)}")


# ---------------------------------------------------------------------------
# the argument tail of `tvmffi call` / `tvmffi bench`


class UnknownOption(InputError):
    """An option the command does not have. The CLI prints it in one form
    for every command (cli/fastpath.unknown_option_line); `closest` is the
    nearest known option, if any."""

    def __init__(self, option: str, known: Sequence[str], hint: str = "") -> None:
        import difflib

        close = difflib.get_close_matches(option, list(known), n=1)
        self.option, self.closest, self.hint = option, close[0] if close else None, hint
        super().__init__(
            f"unknown option {option}"
            + (f" (did you mean {self.closest}?)" if self.closest else f" ({hint})" if hint else "")
        )


#: Said when an unknown option has no close match: the user may have meant a value.
TEXT_HINT = "a text starting with '-' goes after --str or after --"

# Flags that take one value and add an argument, in command-line order.
VALUE_FLAGS = {
    "--int": "int64 integer (decimal, 0x.., 0b..)",
    "--float": "double (1.5, 1e-3, nan, inf)",
    "--bool": "true/false (also 1/0, yes/no)",
    "--str": "string, taken verbatim",
    "--bytes": "bytes: hex digits (00ff10) or @file",
    "--dtype": "data type (float32, bfloat16, int8x4, bool)",
    "--device": "device (cpu, cuda:1, rocm:0)",
    "--tensor": "tensor: x.npy, x.npz:key, x.npy@bfloat16 (the ml_dtypes type of raw "
    "elements), or a literal such as float32[2,3]:zeros (zeros/ones/arange/rand); "
    "@cuda[:N] after any of them places it on a CUDA device",
    "--shape": "Shape: 2,3 or [2,3]",
    "--value": "any JSON value: list -> Array, object -> Map (nested), numbers, strings, null",
}
ARG_FLAGS = dict(VALUE_FLAGS, **{"--none": "None (takes no value)"})


def spec_from_flag(flag: str, value: str, cwd: Optional[str] = None) -> Spec:
    if flag == "--int":
        return IntArg(parse_int(value))
    if flag == "--float":
        return float_spec(parse_float(value))
    if flag == "--bool":
        return BoolArg(parse_bool(value))
    if flag == "--str":
        return StrArg(value)
    if flag == "--bytes":
        return parse_bytes(value, cwd)
    if flag == "--dtype":
        return DtypeArg(canonical_dtype(value))
    if flag == "--device":
        return device_spec(value)
    if flag == "--tensor":
        return parse_tensor(value, cwd)
    if flag == "--shape":
        return ShapeArg(tuple(parse_shape(value)))
    if flag == "--value":
        return json_to_spec(parse_json(value), "--value")
    raise InputError(f"unknown argument flag {flag}")


class ArgvSpec:
    """Parsed `LIB FUNC [ARGS...] [options]`."""

    def __init__(self) -> None:
        self.lib: Optional[str] = None
        self.func: Optional[str] = None
        self.args: List[ArgSpec] = []  # specs, in command-line order
        self.options: Dict[str, Any] = {}  # option name -> value (True for flags)
        self.repeated: Dict[str, List[str]] = {}  # option name -> every value given
        self.help = False


#: Options that may be given more than once (their value is a list).
REPEATABLE = frozenset({"--env", "--allow-read", "--allow-write"})


def parse_argv(
    tokens: Sequence[str], options: Mapping[str, bool], cwd: Optional[str] = None
) -> ArgvSpec:
    """Parse the raw argument tail of a command.

    `options` maps each command option ("--json", "--timeout", ...) to whether it
    takes a value. Value flags (ARG_FLAGS) add arguments in order; the first two
    bare words are LIB and FUNC, later ones positional arguments. Mixing
    positionals with value flags is refused. `--` ends option parsing.
    """
    out = ArgvSpec()
    words: List[str] = []
    flagged = False
    i, n = 0, len(tokens)
    only_words = False
    while i < n:
        tok = tokens[i]
        i += 1
        if only_words or not tok.startswith("-") or tok == "-" or _is_number(tok):
            words.append(tok)
            continue
        if tok == "--":
            only_words = True
            continue
        name, eq, inline = tok.partition("=")
        if name in ("-h", "--help"):
            out.help = True
            continue
        if name == "--none":
            if eq:
                raise InputError("--none takes no value")
            out.args.append(NoneArg())
            flagged = True
            continue
        if name in VALUE_FLAGS:
            if eq:
                value = inline
            elif i < n:
                value = tokens[i]
                i += 1
            else:
                raise InputError(f"{name} needs a value")
            out.args.append(spec_from_flag(name, value, cwd))
            flagged = True
            continue
        if name in options:
            if options[name]:
                if eq:
                    value = inline
                elif i < n:
                    value = tokens[i]
                    i += 1
                else:
                    raise InputError(f"{name} needs a value")
                if name in REPEATABLE:
                    out.options.setdefault(name, []).append(value)
                else:
                    out.options[name] = value
                out.repeated.setdefault(name, []).append(value)
            else:
                if eq:
                    raise InputError(f"{name} takes no value")
                out.options[name] = (
                    out.options.get(name, 0) + 1 if name in ("-v", "--verbose") else True
                )
            continue
        if re.fullmatch(r"-v+", tok) and "-v" in options:
            out.options["-v"] = out.options.get("-v", 0) + len(tok) - 1
            continue
        raise UnknownOption(name, [*options, *ARG_FLAGS, "--help"], TEXT_HINT)
    if out.help:
        return out
    if len(words) < 2:
        raise InputError("expected LIB FUNC [ARGS...]" + (" (FUNC is missing)" if words else ""))
    out.lib, out.func = words[0], words[1]
    positionals = words[2:]
    if positionals and flagged:
        raise InputError(
            "mixing positional arguments with typed flags (--int, --tensor, ...) "
            "is ambiguous; use one style"
        )
    if positionals:
        out.args = [_positional(w, cwd) for w in positionals]
    return out


def _positional(text: str, cwd: Optional[str]) -> Positional:
    """A positional argument inferred from its text; text the inference
    refuses (JSON-looking but not JSON: '[a-c]+x') is left for the type
    schema to read in the child: a `str` parameter takes it as it is, and
    without a schema the refusal stands (call/task.py materialize)."""
    try:
        return infer_positional(text, cwd)
    except InputError as e:
        return Positional(text, None, str(e))


def _is_number(tok: str) -> bool:
    return bool(_INT_RE.fullmatch(tok) or _FLOAT_RE.fullmatch(tok)) or tok.lower() in (
        "-inf",
        "-infinity",
        "-nan",
    )
