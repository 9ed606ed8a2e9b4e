"""Values of TVM-FFI calls: described in the child, rendered in the parent.

describe(value) runs in the child process next to the library: it turns a
decoded value (tvmffi_cli.ffi objects and values, NumPy arrays) into a *description*,
a JSON-able tagged tree such as {"type": "int", "value": 3} or
{"type": "Tensor", "dtype": "float32", "shape": [2, 3], "device": "cpu:0",
"data": [[...]]}. The parent never sees library objects, only descriptions.

to_json(desc) gives the plain JSON value of `--json` output (Shape and Array
as lists, Map as an object, bytes as base64, tensors as objects); to_text(desc)
the human rendering.
"""

from __future__ import annotations

import base64
import json
import math
from types import ModuleType
from typing import TYPE_CHECKING, Any, Union, cast

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    # A description: the JSON-able tagged tree of one value (see module doc).
    Desc = dict[str, Any]
    # A float as JSON carries it: the number, or "NaN" / "Infinity" / "-Infinity".
    JsonFloat = Union[float, str]

# Tensors with at most this many elements carry their values ("data").
SMALL_TENSOR_ELEMENTS = 64
# Containers longer than this are cut (with "truncated": true) so a huge Array
# cannot flood the pipe between child and parent.
MAX_ITEMS = 100_000
MAX_DEPTH = 64
MAX_STR = 1 << 20

# Type names of descriptions, in the order the docs list them.
TYPES = (
    "None",
    "bool",
    "int",
    "float",
    "str",
    "bytes",
    "void*",
    "DataType",
    "Device",
    "Shape",
    "Array",
    "List",
    "Map",
    "Dict",
    "Tensor",
    "DLTensor*",
    "Function",
    "Module",
    "Error",
    "Object",
)


# ---------------------------------------------------------------------------
# child side


def describe(value: object, depth: int = 0) -> Desc:
    """A JSON-able description of a decoded value (see module doc)."""
    from ..ffi import errors as ffi_errors
    from ..ffi import objects, values

    if depth > MAX_DEPTH:
        return {"type": "Object", "type_key": "...", "fields": {}, "truncated": True}
    if value is None:
        return {"type": "None"}
    if value is True or value is False:
        return {"type": "bool", "value": value}
    if isinstance(value, objects.OpaquePtr):
        return {"type": "void*", "value": f"0x{int(value):x}"}
    if isinstance(value, int):
        return {"type": "int", "value": int(value)}
    if isinstance(value, float):
        return {"type": "float", "value": float_json(value)}
    if isinstance(value, objects.DataType):
        return {"type": "DataType", "value": str(value)}
    if isinstance(value, str):
        if len(value) > MAX_STR:
            return {"type": "str", "value": value[:MAX_STR], "truncated": True, "size": len(value)}
        return {"type": "str", "value": value}
    if isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        d: Desc = {"type": "bytes", "size": len(data)}
        if len(data) > MAX_STR:
            data = data[:MAX_STR]
            d["truncated"] = True
        d["base64"] = base64.b64encode(data).decode("ascii")
        return d
    if isinstance(value, objects.Device):
        return {"type": "Device", "value": str(value)}
    if isinstance(value, objects.Shape):
        return {"type": "Shape", "value": [int(x) for x in value]}
    if isinstance(value, (list, tuple)):
        d = {
            "type": "List" if isinstance(value, objects.List) else "Array",
            "items": [describe(x, depth + 1) for x in value[:MAX_ITEMS]],
        }
        if len(value) > MAX_ITEMS:
            d["truncated"] = True
            d["size"] = len(value)
        return d
    if isinstance(value, dict):
        items: list[list[Desc]] = []
        for i, (k, v) in enumerate(value.items()):
            if i >= MAX_ITEMS:
                break
            items.append([describe(k, depth + 1), describe(v, depth + 1)])
        d = {"type": "Dict" if isinstance(value, objects.Dict) else "Map", "items": items}
        if len(value) > MAX_ITEMS:
            d["truncated"] = True
            d["size"] = len(value)
        return d
    if isinstance(value, values.Tensor):
        return describe_tensor(value)
    if isinstance(value, ffi_errors.FFIErrorBase):
        return {
            "type": "Error",
            "kind": value.kind,
            "message": value.message,
            "backtrace": value.backtrace or None,  # null when none (as error.backtrace)
        }
    if isinstance(value, values.Function):
        return {"type": "Function", "type_key": "ffi.Function"}
    if isinstance(value, values.Module):
        try:
            kind = value.kind
        except Exception:  # a module whose kind getter fails is still a module
            kind = None
        return {"type": "Module", "type_key": "ffi.Module", "kind": kind}
    if isinstance(value, values.Object):
        try:
            key = value.type_key
        except Exception:
            key = f"<type {value.type_index}>"
        d = {"type": "Object", "type_key": key, "type_index": value.type_index}
        try:
            d["fields"] = {k: describe(v, depth + 1) for k, v in value.fields.items()}
        except Exception as e:  # a broken getter must not lose the whole result
            d["fields"] = {}
            d["fields_error"] = f"{type(e).__name__}: {e}"
        return d
    np = _numpy_if_loaded()
    if np is not None and isinstance(value, np.ndarray):
        return describe_array(value)
    if np is not None and isinstance(value, np.generic):
        return describe(value.item(), depth)
    return {"type": "Object", "type_key": type(value).__name__, "fields": {}}


def _numpy_if_loaded() -> ModuleType | None:
    import sys

    return sys.modules.get("numpy")


def float_json(v: float) -> JsonFloat:
    """JSON has no NaN or infinities; they travel as the strings JS uses."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def describe_tensor(t: Any) -> Desc:
    """Description of a values.Tensor (owned Tensor or borrowed DLTensor*)."""
    d: Desc = {"type": "Tensor" if t.handle is not None else "DLTensor*"}
    try:
        d["dtype"] = str(t.dtype)
        d["shape"] = [int(x) for x in t.shape]
        st = t.strides
        # Explicit row-major strides say nothing more than NULL ones.
        d["strides"] = (
            None if st is None or list(st) == _compact_strides(d["shape"]) else [int(x) for x in st]
        )
        d["device"] = str(t.device)
    except Exception as e:
        d["error"] = f"unreadable tensor: {e}"
        return d
    try:
        arr = t.numpy()
    except Exception:  # not on the CPU, or a dtype NumPy lacks: metadata only
        return d
    _add_values(d, arr)
    return d


def _compact_strides(shape: list[int]) -> list[int]:
    out: list[int]
    out, acc = [], 1
    for dim in reversed(shape):
        out.append(acc)
        acc *= dim
    return out[::-1]


def describe_array(
    arr: npt.NDArray[Any], type_name: str = "DLTensor*", device: str = "cpu:0"
) -> Desc:
    """Description of a NumPy array we passed as an argument (after the call)."""
    from . import literals

    code, bits, lanes = _dl_of_numpy(arr.dtype)
    itemsize = arr.itemsize or 1
    compact = arr.flags.c_contiguous
    d: Desc = {
        "type": type_name,
        "dtype": literals.dtype_str(code, bits, lanes),  # type: ignore[attr-defined]
        "shape": [int(x) for x in arr.shape],
        "strides": None if compact else [int(s) // itemsize for s in arr.strides],
        "device": device,
    }
    _add_values(d, arr)
    return d


def _dl_of_numpy(dt: np.dtype[Any]) -> tuple[int, int, int]:
    from ..ffi import mldtypes

    ml = mldtypes.dl_of_numpy(dt)
    if ml is not None:
        return ml
    k = dt.kind
    if k == "b":
        return (6, 8, 1)
    code = {"i": 0, "u": 1, "f": 2, "c": 5}.get(k, 3)
    return (code, dt.itemsize * 8, 1)


def _add_values(d: Desc, arr: npt.NDArray[Any]) -> None:
    import numpy as np

    if arr.size <= SMALL_TENSOR_ELEMENTS:
        d["data"] = _json_data(arr.tolist())
    # A short summary for people: edge items only, so it never walks a big array.
    with np.printoptions(threshold=SMALL_TENSOR_ELEMENTS, edgeitems=3, linewidth=88):
        d["preview"] = np.array2string(arr, separator=", ")


def _json_data(v: object) -> Any:
    if isinstance(v, list):
        return [_json_data(x) for x in v]
    if isinstance(v, float):
        return float_json(v)
    if isinstance(v, complex):
        return [float_json(v.real), float_json(v.imag)]
    return v


# ---------------------------------------------------------------------------
# parent side: JSON


def to_json(d: Desc) -> Any:
    """The plain JSON value of a description."""
    t = d.get("type")
    if t == "None":
        return None
    if t in ("bool", "int", "float", "str", "DataType", "Device", "void*"):
        return d.get("value")
    if t == "bytes":
        return d.get("base64", "")
    if t == "Shape":
        return list(d.get("value", []))
    if t in ("Array", "List"):
        return [to_json(x) for x in d.get("items", [])]
    if t in ("Map", "Dict"):
        return {_json_key(k): to_json(v) for k, v in d.get("items", [])}
    if t in ("Tensor", "DLTensor*"):
        out: dict[str, Any] = {"type": "ffi.Tensor" if t == "Tensor" else "DLTensor*"}
        for k in ("dtype", "shape", "strides", "device", "data"):
            if k in d:
                out[k] = d[k]
        return out
    if t == "Function":
        return {"type": "ffi.Function"}
    if t == "Module":
        return {"type": "ffi.Module", "kind": d.get("kind")}
    if t == "Error":
        return {
            "type": "ffi.Error",
            "kind": d.get("kind"),
            "message": d.get("message"),
            "backtrace": d.get("backtrace") or None,
        }
    if t == "Object":
        return {
            "type": d.get("type_key"),
            "fields": {k: to_json(v) for k, v in d.get("fields", {}).items()},
        }
    return None


def _json_key(k: Desc) -> str:
    """Map keys become JSON object keys: strings as they are, others as JSON text."""
    if k.get("type") == "str":
        return cast(str, k.get("value", ""))
    return json.dumps(to_json(k), separators=(",", ":"))


# ---------------------------------------------------------------------------
# parent side: text


def tensor_header(d: Desc) -> str:
    shape = ", ".join(str(x) for x in d.get("shape", []))
    s = f"{d.get('type')} {d.get('dtype', '?')}[{shape}] on {d.get('device', '?')}"
    if d.get("strides") is not None:
        s += f" strides {d['strides']}"
    return s


def type_label(d: Desc) -> str:
    """A short type label: 'int', 'Tensor float32[2, 3] on cpu:0', 'Object my.Point'."""
    t = d.get("type")
    if t in ("Tensor", "DLTensor*"):
        return tensor_header(d)
    if t == "Object":
        return f"Object {d.get('type_key')}"
    if t in ("Array", "List", "Map", "Dict") and d.get("items") is not None:
        return f"{t} of {d.get('size', len(d['items']))}"
    if t == "bytes":
        return f"bytes ({d.get('size', 0)})"
    return t or "?"


def to_text(d: Desc, indent: int = 0) -> str:
    """Readable one- or multi-line rendering of a description's value."""
    t = d.get("type")
    pad = " " * indent
    if t == "None":
        return "None"
    if t == "bool":
        return "True" if d.get("value") else "False"
    if t == "int":
        return str(d.get("value"))
    if t == "float":
        v = d.get("value")
        return (
            {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(v, repr(v))
            if isinstance(v, str)
            else repr(v)
        )
    if t == "str":
        return _quote(d.get("value", "")) + (" ..." if d.get("truncated") else "")
    if t == "bytes":
        raw = base64.b64decode(d.get("base64", ""))
        return (
            "b" + repr(raw)[1:]
            if len(raw) <= 64
            else f"<{d.get('size')} bytes> {raw[:32].hex()}..."
        )
    if t in ("DataType", "Device", "void*"):
        return str(d.get("value"))
    if t == "Shape":
        return "Shape(" + ", ".join(str(x) for x in d.get("value", [])) + ")"
    if t in ("Array", "List"):
        items = d.get("items", [])
        parts = [to_text(x, indent + 2) for x in items]
        more = ", ..." if d.get("truncated") else ""
        flat = "[" + ", ".join(parts) + more + "]"
        if len(flat) <= 80 and "\n" not in flat:
            return flat
        inner = ",\n".join(pad + "  " + p for p in parts)
        return "[\n" + inner + (",\n" + pad + "  ..." if more else "") + "\n" + pad + "]"
    if t in ("Map", "Dict"):
        parts = [
            f"{to_text(k, indent + 2)}: {to_text(v, indent + 2)}" for k, v in d.get("items", [])
        ]
        flat = "{" + ", ".join(parts) + "}"
        if len(flat) <= 80 and "\n" not in flat:
            return flat
        return "{\n" + ",\n".join(pad + "  " + p for p in parts) + "\n" + pad + "}"
    if t in ("Tensor", "DLTensor*"):
        head = tensor_header(d)
        body = d.get("preview")
        if d.get("error"):
            return f"<{head}: {d['error']}>"
        if body is None:
            return f"<{head}>"
        body = body.replace("\n", "\n" + pad + "  ")
        return f"<{head}>\n{pad}  {body}"
    if t == "Function":
        return "<Function>"
    if t == "Module":
        return f"<Module {d.get('kind') or '?'}>"
    if t == "Error":
        return f"{d.get('kind')}: {d.get('message')}"
    if t == "Object":
        fields = d.get("fields", {})
        parts = [f"{k}={to_text(v, indent + 2)}" for k, v in fields.items()]
        if d.get("fields_error"):
            parts.append(f"<fields unreadable: {d['fields_error']}>")
        flat = f"{d.get('type_key')}(" + ", ".join(parts) + ")"
        if len(flat) <= 80 and "\n" not in flat:
            return flat
        return (
            f"{d.get('type_key')}(\n" + ",\n".join(pad + "  " + p for p in parts) + "\n" + pad + ")"
        )
    return "?"


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)
