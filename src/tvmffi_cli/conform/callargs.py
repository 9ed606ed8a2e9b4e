"""The arguments of one probe call, told by the parent (no ctypes).

A probe step builds its arguments from the function's parameter types (or,
without metadata, from the step's kinds of objects) with the fixed values of
probe_values.py and the tensor variants of probe_tensors.py: the same values
every time. A finding names them exactly (dtype, shape, strides, byte
offset, device and values of every tensor), and, where `tvmffi call` can
build the same values from its command line, gives that command.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ..abi.devices import kDLCPU
from . import sigs
from .probe_extra import OBJECT_STEPS
from .probe_tensors import BASE, PAGE, VARIANTS, Variant, _shape
from .probe_values import VALID_FLOAT, VALID_INT, VALID_STR, WRONG_INT, WRONG_STR

#: One argument: {"type": ..., "value": ...} or a tensor's fields; "cli" is
#: the `tvmffi call` literal when there is one.
Arg = Dict[str, Any]

_OBJECT_TYPES = {
    "str": "ffi.String",
    "int": "int",
    "array": "ffi.Array[int]",
    "array-float": "ffi.Array[float]",
    "array-str": "ffi.Array[ffi.String]",
    "map": "ffi.Map[ffi.String, int]",
    "nested": "ffi.Array[ffi.Array[int]]",
    "function": "ffi.Function",
}
#: The string the untyped object steps pass (probe_extra._object).
_OBJECT_STR = "tvmffi-conform-probe-object"


def args_of(step: str, params: Optional[List[str]]) -> Optional[List[Arg]]:
    """The arguments of `step` ("valid", "tensor:int8/padded", "objects:4",
    ...), given the parameter types of the function's metadata (None: none);
    None when the step is not one call with known arguments."""
    base, _, how = step.partition("/")
    padded = how == "padded"
    if base == "zero-args" or (base == "threads" and not params):
        return []
    if base.startswith(("objects:", "tensors:")):
        kind, _, variant = base.partition(":")[2].partition(":")
        kinds = OBJECT_STEPS.get(f"{base.split(':')[0]}:{kind}")
        if kinds is None:
            return None
        return [_object(k, variant, padded) for k in kinds]
    if params is None:
        return None
    types = [sigs.type_of_str(p) for p in params]
    if base == "too-few":
        return [_value(t, "", padded) for t in types[:-1]]
    if base.startswith("wrong-type:"):
        i = int(base.split(":")[1])
        wrong = sigs.wrong_kind(types[i]) if i < len(types) else None
        return [_wrong(wrong) if j == i else _value(t, "", padded) for j, t in enumerate(types)]
    if base in ("valid", "threads"):
        return [_value(t, "", padded) for t in types]
    if base.startswith("tensor:"):
        variant = base.split(":", 1)[1]
        return [_value(t, variant, padded) for t in types]
    return None


def words(args: List[Arg]) -> str:
    """The arguments in one line: `(int 2, Tensor float32[1024] ..., ...)`."""
    if not args:
        return "no arguments"
    return "(" + ", ".join(_word(a) for a in args) + ")"


def call_argv(args: List[Arg]) -> Optional[List[str]]:
    """The argument tail of `tvmffi call` that builds these values, or None."""
    out = []
    for a in args:
        cli = a.get("cli")
        if cli is None:
            return None
        out.append(cli)
    return out


def _word(a: Arg) -> str:
    if "dtype" in a:
        shape = ",".join(map(str, a["shape"]))
        strides = ",".join(map(str, a["strides"]))
        kind = "DLTensor*" if a["type"] == "DLTensor*" else "Tensor"
        return (
            f"{kind} {a['dtype']}[{shape}] strides ({strides}) byte_offset {a['byte_offset']} "
            f"{a['device']} {a['values']}"
        )
    v = a.get("value")
    return f"{a['type']} {json.dumps(v) if isinstance(v, (str, list, dict)) else v}"


def _tensor(t: str, variant: str, padded: bool) -> Arg:
    from ..abi.dtypes import format_dtype

    v: Variant = VARIANTS.get(variant, BASE)
    # (a kernel found 2-d by the signature search gets 2-d tensors in the probe
    # child; the step name does not say so, and this shows the 1-d form)
    dims, strides = _shape(v, PAGE, v.ndim or 1)
    a: Arg = {
        "type": t,
        "dtype": format_dtype(*v.dtype),
        "shape": dims,
        "strides": strides,
        "byte_offset": v.offset,
        "device": "cpu:0" if v.device == kDLCPU else "cuda:0",
        "values": "zeros",
        "memory": "padded" if padded else "between guard pages",
    }
    contiguous = strides == [_prod(dims[k + 1 :]) for k in range(len(dims))]
    if v.device == kDLCPU and v.offset == 0 and contiguous:
        a["cli"] = f"{a['dtype']}[{','.join(map(str, dims))}]:zeros"
    return a


def _prod(xs: List[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _value(t: sigs.TypeDict, variant: str, padded: bool) -> Arg:
    key = t["type"]
    name = sigs.type_str(t)
    if key in ("int", "Any"):
        return {"type": "int", "value": VALID_INT, "cli": str(VALID_INT)}
    if key == "bool":
        return {"type": "bool", "value": True, "cli": "true"}
    if key == "float":
        return {"type": "float", "value": VALID_FLOAT, "cli": repr(VALID_FLOAT)}
    if key == "None":
        return {"type": "None", "value": None, "cli": "none"}
    if key == "DataType":
        return {"type": "DataType", "value": "float32", "cli": "float32"}
    if key == "Device":
        return {"type": "Device", "value": "cpu:0", "cli": "cpu:0"}
    if key in ("ffi.String", "ffi.Object"):
        s = VALID_STR.decode()
        return {"type": "ffi.String", "value": s, "cli": s}
    if key == "ffi.Bytes":
        return {"type": "ffi.Bytes", "value": VALID_STR.decode(), "cli": VALID_STR.hex()}
    if key in ("DLTensor*", "ffi.Tensor"):
        return _tensor(key, variant, padded)
    if key == "ffi.Shape":
        return {"type": "ffi.Shape", "value": [2, 3], "cli": "[2, 3]"}
    if key in ("ffi.Array", "ffi.List"):
        elem = t["args"][0] if t["args"] else {"type": "int", "args": []}
        item = _value(elem, variant, padded)
        return _container(name, [item, item])
    if key in ("ffi.Map", "ffi.Dict"):
        kt = t["args"][0] if len(t["args"]) == 2 else {"type": "ffi.String", "args": []}
        vt = t["args"][1] if len(t["args"]) == 2 else {"type": "int", "args": []}
        k, v = _value(kt, variant, padded), _value(vt, variant, padded)
        a: Arg = {"type": name, "value": {str(k.get("value")): v.get("value")}}
        if "value" in k and "value" in v and isinstance(k["value"], str):
            a["cli"] = json.dumps(a["value"])
        return a
    if key in ("Optional", "Variant") and t["args"]:
        return _value(t["args"][0], variant, padded)
    if key == "Optional":
        return {"type": "None", "value": None, "cli": "none"}
    if key == "ffi.Function":
        return {"type": "ffi.Function", "value": "a function returning None"}
    return {"type": name, "value": "(not built: skipped)"}


def _container(name: str, items: List[Arg]) -> Arg:
    a: Arg = {"type": name, "value": [i.get("value") for i in items]}
    if all("cli" in i and "dtype" not in i for i in items):
        a["cli"] = json.dumps(a["value"])
    return a


def _wrong(kind: Optional[int]) -> Arg:
    if kind == sigs.K_STR:
        s = WRONG_STR.decode()
        return {"type": "ffi.String", "value": s, "cli": s}
    return {"type": "int", "value": WRONG_INT, "cli": str(WRONG_INT)}


def _object(kind: str, variant: str, padded: bool) -> Arg:
    if kind == "tensor":
        return _tensor("ffi.Tensor", variant, padded)
    if kind == "int":
        return {"type": "int", "value": VALID_INT, "cli": str(VALID_INT)}
    if kind == "str":
        return {"type": "ffi.String", "value": _OBJECT_STR, "cli": _OBJECT_STR}
    return _value(sigs.type_of_str(_OBJECT_TYPES[kind]), variant, padded)
