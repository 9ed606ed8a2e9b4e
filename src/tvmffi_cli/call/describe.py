"""Values of TVM-FFI calls: described in the child, read back in the parent.

describe(value) runs in the child process next to the library: it turns a
decoded value (tvmffi_cli.ffi objects and values, NumPy arrays) into a
*description*, a frozen tree of the classes below (Scalar, Text, Blob,
ShapeValue, Items, Pairs, TensorValue, ErrorValue, Handle, ObjectValue). The
parent never sees library objects, only descriptions.

encode_desc/decode_desc are their form on the channel (a JSON object tagged
by "type", e.g. {"type": "int", "value": 3}); decode_desc refuses anything
else (MessageError): the worker is not trusted. value_json(desc) is the
plain JSON value of `--json` output (Shape and Array as lists, Map as an
object, bytes as base64, tensors as objects); render/call.py has the human
rendering.
"""

from __future__ import annotations

import base64
import json
import math
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Tuple, Union

from ..sandbox.messages import Fields, Frozen, MessageError
from ..sandbox.messages import JsonDict as JsonDict  # re-exported: call's modules, api
from ..sandbox.messages import JsonValue as JsonValue

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: A float as JSON carries it: the number, or "NaN" / "Infinity" / "-Infinity".
JsonFloat = Union[float, str]

# Tensors with at most this many elements carry their values ("data").
SMALL_TENSOR_ELEMENTS = 64
# Containers longer than this are cut (size: their length) so a huge Array
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
_FLOAT_WORDS = ("NaN", "Infinity", "-Infinity")

# ---------------------------------------------------------------------------
# the descriptions


class Scalar(Frozen):
    """None, bool, int, float, DataType, Device or void*: its JSON value (a
    float's NaN and infinities as "NaN"/"Infinity"/"-Infinity", a void* as
    "0x..", a DataType or Device as its text)."""

    type: str
    value: Union[None, bool, int, float, str] = None


class Text(Frozen):
    """A str; `size` is its length when `value` holds only its first MAX_STR."""

    value: str
    size: Optional[int] = None
    type: ClassVar[str] = "str"


class Blob(Frozen):
    """Bytes: `size` of them, the first MAX_STR in base64."""

    size: int
    base64: str
    truncated: bool = False
    type: ClassVar[str] = "bytes"


class ShapeValue(Frozen):
    value: Tuple[int, ...]
    type: ClassVar[str] = "Shape"


class Items(Frozen):
    """An Array or a List; `size` is its length when only MAX_ITEMS are here."""

    type: str
    items: Tuple[Desc, ...]
    size: Optional[int] = None


class Pairs(Frozen):
    """A Map or a Dict as (key, value) pairs; `size` as Items'."""

    type: str
    items: Tuple[Tuple[Desc, Desc], ...]
    size: Optional[int] = None


class TensorValue(Frozen):
    """A Tensor (owned) or DLTensor* (a view). dtype, shape, strides (None:
    compact) and device as read; data (its elements, when at most
    SMALL_TENSOR_ELEMENTS) and preview (NumPy's text) when it is readable on
    the host. error: why it is not; what was read before is kept (None
    fields were not reached)."""

    type: str
    dtype: Optional[str] = None
    shape: Optional[Tuple[int, ...]] = None
    strides: Optional[Tuple[int, ...]] = None
    device: Optional[str] = None
    data: JsonValue = None
    preview: Optional[str] = None
    error: Optional[str] = None

    def _has_strides(self) -> bool:
        # strides is read between shape and device: known when shape is and
        # the reading did not stop there.
        return self.shape is not None and (self.error is None or self.device is not None)


class ErrorValue(Frozen):
    kind: str
    message: str
    backtrace: Optional[str] = None  # None when none was recorded (never "")
    type: ClassVar[str] = "Error"


class Handle(Frozen):
    """A Function, or a Module (kind: its kind, None when its getter failed)."""

    type: str
    kind: Optional[str] = None


class ObjectValue(Frozen):
    """Any other object: its type key and fields. truncated: nested deeper
    than MAX_DEPTH (nothing more was read)."""

    type_key: str
    type_index: Optional[int] = None
    fields: Tuple[Tuple[str, Desc], ...] = ()
    fields_error: Optional[str] = None
    truncated: bool = False
    type: ClassVar[str] = "Object"


Desc = Union[
    Scalar, Text, Blob, ShapeValue, Items, Pairs, TensorValue, ErrorValue, Handle, ObjectValue
]
_SCALARS = ("None", "bool", "int", "float", "DataType", "Device", "void*")
TENSOR_TYPES = ("Tensor", "DLTensor*")

# ---------------------------------------------------------------------------
# child side


def describe(value: object, depth: int = 0) -> Desc:
    """The description of a decoded value (see module doc)."""
    from ..ffi import errors as ffi_errors
    from ..ffi import objects, values

    if depth > MAX_DEPTH:
        return ObjectValue("...", truncated=True)
    if value is None:
        return Scalar("None")
    if value is True or value is False:
        return Scalar("bool", value)
    if isinstance(value, objects.OpaquePtr):
        return Scalar("void*", f"0x{int(value):x}")
    if isinstance(value, int):
        return Scalar("int", int(value))
    if isinstance(value, float):
        return Scalar("float", float_json(value))
    if isinstance(value, objects.DataType):
        return Scalar("DataType", str(value))
    if isinstance(value, str):
        if len(value) > MAX_STR:
            return Text(value[:MAX_STR], len(value))
        return Text(value)
    if isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        return Blob(
            len(data), base64.b64encode(data[:MAX_STR]).decode("ascii"), len(data) > MAX_STR
        )
    if isinstance(value, objects.Device):
        return Scalar("Device", str(value))
    if isinstance(value, objects.Shape):
        return ShapeValue(tuple(int(x) for x in value))
    if isinstance(value, (list, tuple)):
        return Items(
            "List" if isinstance(value, objects.List) else "Array",
            tuple(describe(x, depth + 1) for x in value[:MAX_ITEMS]),
            len(value) if len(value) > MAX_ITEMS else None,
        )
    if isinstance(value, dict):
        pairs: list[tuple[Desc, Desc]] = []
        for i, (k, v) in enumerate(value.items()):
            if i >= MAX_ITEMS:
                break
            pairs.append((describe(k, depth + 1), describe(v, depth + 1)))
        return Pairs(
            "Dict" if isinstance(value, objects.Dict) else "Map",
            tuple(pairs),
            len(value) if len(value) > MAX_ITEMS else None,
        )
    if isinstance(value, values.Tensor):
        return describe_tensor(value)
    if isinstance(value, ffi_errors.FFIErrorBase):
        return ErrorValue(value.kind, value.message, value.backtrace or None)
    if isinstance(value, values.Function):
        return Handle("Function")
    if isinstance(value, values.Module):
        try:
            kind = value.kind
        except Exception:  # a module whose kind getter fails is still a module
            kind = None
        return Handle("Module", kind)
    if isinstance(value, values.Object):
        try:
            key = value.type_key
        except Exception:
            key = f"<type {value.type_index}>"
        try:
            fields = tuple((k, describe(v, depth + 1)) for k, v in value.fields.items())
        except Exception as e:  # a broken getter must not lose the whole result
            return ObjectValue(key, value.type_index, (), f"{type(e).__name__}: {e}")
        return ObjectValue(key, value.type_index, fields)
    np = _numpy_if_loaded()
    if np is not None and isinstance(value, np.ndarray):
        return describe_array(value)
    if np is not None and isinstance(value, np.generic):
        return describe(value.item(), depth)
    return ObjectValue(type(value).__name__)


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


def describe_tensor(t: Any) -> TensorValue:
    """Description of a values.Tensor (owned Tensor or borrowed DLTensor*)."""
    kind = "Tensor" if t.handle is not None else "DLTensor*"
    dtype = shape = strides = None
    try:
        dtype = str(t.dtype)
        shape = tuple(int(x) for x in t.shape)
        st = t.strides
        # Explicit row-major strides say nothing more than NULL ones.
        strides = None if st is None or list(st) == _compact_strides(shape) else tuple(st)
        device = str(t.device)
    except Exception as e:
        return TensorValue(kind, dtype, shape, strides, error=f"unreadable tensor: {e}")
    meta = TensorValue(kind, dtype, shape, strides, device)
    try:
        arr = t.numpy()
    except Exception:  # not on the CPU, or a dtype NumPy lacks: metadata only
        return meta
    return _with_values(meta, arr)


def _compact_strides(shape: Tuple[int, ...]) -> list[int]:
    out: list[int]
    out, acc = [], 1
    for dim in reversed(shape):
        out.append(acc)
        acc *= dim
    return out[::-1]


def describe_array(
    arr: npt.NDArray[Any], type_name: str = "DLTensor*", device: str = "cpu:0"
) -> TensorValue:
    """Description of a NumPy array we passed as an argument (after the call)."""
    from ..abi.dtypes import format_dtype

    code, bits, lanes = _dl_of_numpy(arr.dtype)
    itemsize = arr.itemsize or 1
    meta = TensorValue(
        type_name,
        format_dtype(code, bits, lanes),
        tuple(int(x) for x in arr.shape),
        None if arr.flags.c_contiguous else tuple(int(s) // itemsize for s in arr.strides),
        device,
    )
    return _with_values(meta, arr)


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


def _with_values(meta: TensorValue, arr: npt.NDArray[Any]) -> TensorValue:
    import dataclasses

    import numpy as np

    data = _json_data(arr.tolist()) if arr.size <= SMALL_TENSOR_ELEMENTS else None
    # A short summary for people: edge items only, so it never walks a big array.
    with np.printoptions(threshold=SMALL_TENSOR_ELEMENTS, edgeitems=3, linewidth=88):
        preview = np.array2string(arr, separator=", ")
    return dataclasses.replace(meta, data=data, preview=preview)


def _json_data(v: object) -> JsonValue:
    if isinstance(v, list):
        return [_json_data(x) for x in v]
    if isinstance(v, float):
        return float_json(v)
    if isinstance(v, complex):
        return [float_json(v.real), float_json(v.imag)]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return str(v)  # tolist() of a NumPy dtype gives Python numbers; nothing else is expected


# ---------------------------------------------------------------------------
# on the channel


def encode_desc(d: Desc) -> JsonDict:
    """The JSON object of a description (decode_desc reads it back)."""
    out: JsonDict = {"type": d.type}
    if isinstance(d, Scalar):
        if d.type != "None":
            out["value"] = d.value
    elif isinstance(d, Text):
        out["value"] = d.value
        if d.size is not None:
            out.update(truncated=True, size=d.size)
    elif isinstance(d, Blob):
        out["size"] = d.size
        if d.truncated:
            out["truncated"] = True
        out["base64"] = d.base64
    elif isinstance(d, ShapeValue):
        out["value"] = list(d.value)
    elif isinstance(d, Items):
        out["items"] = [encode_desc(x) for x in d.items]
        if d.size is not None:
            out.update(truncated=True, size=d.size)
    elif isinstance(d, Pairs):
        out["items"] = [[encode_desc(k), encode_desc(v)] for k, v in d.items]
        if d.size is not None:
            out.update(truncated=True, size=d.size)
    elif isinstance(d, TensorValue):
        _encode_tensor(d, out)
        if d.preview is not None:
            out["preview"] = d.preview
        if d.error is not None:
            out["error"] = d.error
    elif isinstance(d, ErrorValue):
        out.update(kind=d.kind, message=d.message, backtrace=d.backtrace)
    elif isinstance(d, Handle):
        out["type_key"] = f"ffi.{d.type}"
        if d.type == "Module":
            out["kind"] = d.kind
    else:
        out["type_key"] = d.type_key
        if d.type_index is not None:
            out["type_index"] = d.type_index
        out["fields"] = {k: encode_desc(v) for k, v in d.fields}
        if d.fields_error is not None:
            out["fields_error"] = d.fields_error
        if d.truncated:
            out["truncated"] = True
    return out


def _encode_tensor(d: TensorValue, out: JsonDict) -> None:
    """The tensor's fields that were read (as value_json shows them)."""
    if d.dtype is not None:
        out["dtype"] = d.dtype
    if d.shape is not None:
        out["shape"] = list(d.shape)
    if d._has_strides():
        out["strides"] = None if d.strides is None else list(d.strides)
    if d.device is not None:
        out["device"] = d.device
    if d.data is not None:
        out["data"] = d.data


def decode_desc(obj: object, depth: int = 0) -> Desc:
    """A description from its JSON object; MessageError for anything else
    (an unknown type, a field of the wrong type, nesting past MAX_DEPTH)."""
    if depth > MAX_DEPTH + 1:
        raise MessageError("value description: nested deeper than describe() goes")
    if type(obj) is dict and len(obj) == 2:  # the common forms, checked as below, faster
        t, v = obj.get("type"), obj.get("value", obj.get("items"))
        if t == "int" and type(v) is int or t == "float" and type(v) is float:
            return Scalar._of(t, v)
        if t == "bool" and type(v) is bool:
            return Scalar._of(t, v)
        if t == "str" and type(v) is str:
            return Text._of(v, None)
        if (t == "Array" or t == "List") and type(v) is list:
            return Items._of(t, tuple([decode_desc(x, depth + 1) for x in v]), None)
    f = Fields(obj, "value description")
    t = f.text("type")
    if t in _SCALARS:
        return Scalar(t, _scalar(f, t))
    if t == "str":
        return Text(f.text("value"), f.count("size") if f.has("truncated") else None)
    if t == "bytes":
        return Blob(f.count("size"), f.text("base64"), f.flag("truncated", False))
    if t == "Shape":
        return ShapeValue(f.integers("value"))
    size = f.count("size") if t in ("Array", "List", "Map", "Dict") and f.has("truncated") else None
    if t in ("Array", "List"):
        return Items(t, tuple(decode_desc(x, depth + 1) for x in f.items("items")), size)
    if t in ("Map", "Dict"):
        return Pairs(t, tuple(_pair(p, depth + 1) for p in f.items("items")), size)
    if t in TENSOR_TYPES:
        return _decode_tensor(f, t, depth)
    if t == "Error":
        return ErrorValue(f.text("kind"), f.text("message"), f.text_or_none("backtrace"))
    if t == "Function":
        return Handle(t)
    if t == "Module":
        return Handle(t, f.text_or_none("kind"))
    if t == "Object":
        fields = f.fields("fields")
        return ObjectValue(
            f.text("type_key"),
            f.integer_or_none("type_index"),
            tuple((k, decode_desc(v, depth + 1)) for k, v in fields.obj.items()),
            f.text_or_none("fields_error"),
            f.flag("truncated", False),
        )
    raise MessageError(f"value description: unknown type {t[:40]!r}")


def _scalar(f: Fields, t: str) -> Union[None, bool, int, float, str]:
    if t == "None":
        return None
    if t == "bool":
        return f.flag("value")
    if t == "int":
        return f.integer("value")
    if t == "float" and f.obj.get("value") in _FLOAT_WORDS:
        return f.text("value")
    if t == "float":
        return f.number("value")
    return f.text("value")


def _pair(p: object, depth: int) -> Tuple[Desc, Desc]:
    if not isinstance(p, list) or len(p) != 2:
        raise MessageError("value description: a Map item is not a [key, value] pair")
    return decode_desc(p[0], depth), decode_desc(p[1], depth)


def _decode_tensor(f: Fields, t: str, depth: int) -> TensorValue:
    strides = None if f.obj.get("strides") is None else f.integers("strides")
    return TensorValue(
        t,
        f.text_or_none("dtype"),
        f.integers("shape") if f.has("shape") else None,
        strides,
        f.text_or_none("device"),
        json_value(f.obj.get("data"), "tensor data", depth),
        f.text_or_none("preview"),
        f.text_or_none("error"),
    )


def json_value(v: object, what: str, depth: int = 0) -> JsonValue:
    """`v` checked to be JSON (as json.loads makes it), nested at most MAX_DEPTH."""
    if depth > MAX_DEPTH + 1:
        raise MessageError(f"{what}: nested too deep")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [json_value(x, what, depth + 1) for x in v]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {str(k): json_value(x, what, depth + 1) for k, x in v.items()}
    raise MessageError(f"{what}: not JSON ({type(v).__name__})")


# ---------------------------------------------------------------------------
# parent side: the plain JSON value (--json)


def value_json(d: Desc) -> JsonValue:
    """The plain JSON value of a description."""
    if isinstance(d, Scalar):
        return d.value
    if isinstance(d, Text):
        return d.value
    if isinstance(d, Blob):
        return d.base64
    if isinstance(d, ShapeValue):
        return list(d.value)
    if isinstance(d, Items):
        return [value_json(x) for x in d.items]
    if isinstance(d, Pairs):
        return {_json_key(k): value_json(v) for k, v in d.items}
    if isinstance(d, TensorValue):
        out: JsonDict = {"type": "ffi.Tensor" if d.type == "Tensor" else "DLTensor*"}
        _encode_tensor(d, out)
        return out
    if isinstance(d, Handle):
        return (
            {"type": "ffi.Function"}
            if d.type == "Function"
            else {"type": "ffi.Module", "kind": d.kind}
        )
    if isinstance(d, ErrorValue):
        return {
            "type": "ffi.Error",
            "kind": d.kind,
            "message": d.message,
            "backtrace": d.backtrace or None,
        }
    return {"type": d.type_key, "fields": {k: value_json(v) for k, v in d.fields}}


def _json_key(k: Desc) -> str:
    """Map keys become JSON object keys: strings as they are, others as JSON text."""
    if isinstance(k, Text):
        return k.value
    return json.dumps(value_json(k), separators=(",", ":"))
