"""Argument specs of `tvmffi call` and `tvmffi bench`: the values of a call
as the parent reads them (call/literals.py and call/argv.py from the command
line, call/pyargs.py from Python values) and the worker materializes them
(call/task.py), so big tensors are only ever loaded next to the library.

A Positional keeps its command-line text: the worker reads it again by the
function's type schema. encode_spec is their JSON form in a CallRequest
(call/messages.py); decode_spec reads it back (MessageError otherwise).
"""

from __future__ import annotations

from typing import ClassVar, Optional, Tuple, Union

from ..sandbox.messages import Fields, Frozen, MessageError
from .describe import JsonDict


class NoneArg(Frozen):
    kind: ClassVar[str] = "none"


class IntArg(Frozen):
    value: int  # in the int64 range
    kind: ClassVar[str] = "int"


class BoolArg(Frozen):
    value: bool
    kind: ClassVar[str] = "bool"


class FloatArg(Frozen):
    text: str  # repr() of the double: exact, and JSON-safe for NaN and infinities
    kind: ClassVar[str] = "float"

    @property
    def value(self) -> float:
        return float(self.text)


class StrArg(Frozen):
    value: str
    kind: ClassVar[str] = "str"


class BytesArg(Frozen):
    """Bytes given as hex digits, or the file at `path` (read in the worker)."""

    hex: Optional[str] = None
    path: Optional[str] = None
    kind: ClassVar[str] = "bytes"


class DtypeArg(Frozen):
    value: str  # canonical spelling (abi/dtypes.py)
    kind: ClassVar[str] = "dtype"


class DeviceArg(Frozen):
    value: str
    device_type: int
    device_id: int
    kind: ClassVar[str] = "device"


class ShapeArg(Frozen):
    value: Tuple[int, ...]
    kind: ClassVar[str] = "shape"


class ArrayArg(Frozen):
    items: Tuple[Spec, ...]
    kind: ClassVar[str] = "array"


class MapArg(Frozen):
    items: Tuple[Tuple[Spec, Spec], ...]
    kind: ClassVar[str] = "map"


TENSOR_SOURCES = ("literal", "npy", "npz")


class TensorArg(Frozen):
    """A tensor: source "literal" (dtype, shape, fill), "npy" (path) or "npz"
    (path, key). raw_dtype: the ml_dtypes type of a file's raw elements
    (x.npy@bfloat16); device: "cuda:N" to place it there (call/device.py);
    owned: passed as an ffi.Tensor object rather than a DLTensor* view."""

    source: str
    path: Optional[str] = None
    key: Optional[str] = None
    dtype: Optional[str] = None
    shape: Optional[Tuple[int, ...]] = None
    fill: Optional[str] = None
    raw_dtype: Optional[str] = None
    device: Optional[str] = None
    owned: bool = False
    kind: ClassVar[str] = "tensor"


Spec = Union[
    NoneArg,
    IntArg,
    BoolArg,
    FloatArg,
    StrArg,
    BytesArg,
    DtypeArg,
    DeviceArg,
    ShapeArg,
    ArrayArg,
    MapArg,
    TensorArg,
]


class Positional(Frozen):
    """A positional argument: its command-line text, read again in the worker
    by the function's type schema when it has one (call/argv.py), else taken
    as `spec`, the type guessed from the text. spec None: the guess refused
    the text (`error` says why; a str parameter still takes it)."""

    raw: str
    spec: Optional[Spec]
    error: Optional[str] = None


ArgSpec = Union[Spec, Positional]


def encode_spec(s: ArgSpec) -> JsonDict:
    if isinstance(s, Positional):
        if s.spec is None:
            return {"kind": "unread", "raw": s.raw, "positional": True, "error": s.error}
        return {**encode_spec(s.spec), "raw": s.raw, "positional": True}
    out: JsonDict = {"kind": s.kind}
    if isinstance(s, (IntArg, BoolArg, StrArg, DtypeArg)):
        out["value"] = s.value
    elif isinstance(s, FloatArg):
        out["text"] = s.text
    elif isinstance(s, BytesArg):
        out.update({"hex": s.hex} if s.path is None else {"path": s.path})
    elif isinstance(s, DeviceArg):
        out.update(value=s.value, device_type=s.device_type, device_id=s.device_id)
    elif isinstance(s, ShapeArg):
        out["value"] = list(s.value)
    elif isinstance(s, ArrayArg):
        out["items"] = [encode_spec(x) for x in s.items]
    elif isinstance(s, MapArg):
        out["items"] = [[encode_spec(k), encode_spec(v)] for k, v in s.items]
    elif isinstance(s, TensorArg):
        out["source"] = s.source
        named = (("path", s.path), ("key", s.key), ("dtype", s.dtype), ("fill", s.fill))
        for key, v in (*named, ("raw_dtype", s.raw_dtype), ("device", s.device)):
            if v is not None:
                out[key] = v
        if s.shape is not None:
            out["shape"] = list(s.shape)
        if s.owned:
            out["owned"] = True
    return out


def decode_spec(obj: object) -> ArgSpec:
    f = Fields(obj, "argument spec")
    if f.flag("positional", False):
        raw = f.text("raw")
        if f.obj.get("kind") == "unread":
            return Positional(raw, None, f.text("error"))
        inner = {k: v for k, v in f.obj.items() if k not in ("raw", "positional")}
        return Positional(raw, _spec(Fields(inner, "argument spec")))
    return _spec(f)


def _spec(f: Fields) -> Spec:
    k = f.text("kind")
    if k == "none":
        return NoneArg()
    if k == "int":
        return IntArg(f.integer("value"))
    if k == "bool":
        return BoolArg(f.flag("value"))
    if k == "float":
        return FloatArg(f.text("text"))
    if k == "str":
        return StrArg(f.text("value"))
    if k == "bytes":
        return BytesArg(f.text_or_none("hex"), f.text_or_none("path"))
    if k == "dtype":
        return DtypeArg(f.text("value"))
    if k == "device":
        return DeviceArg(f.text("value"), f.integer("device_type"), f.integer("device_id"))
    if k == "shape":
        return ShapeArg(f.integers("value"))
    if k == "array":
        return ArrayArg(tuple(_inner(x) for x in f.items("items")))
    if k == "map":
        return MapArg(tuple(_inner_pair(p) for p in f.items("items")))
    if k == "tensor" and f.text("source") in TENSOR_SOURCES:
        return TensorArg(
            f.text("source"),
            f.text_or_none("path"),
            f.text_or_none("key"),
            f.text_or_none("dtype"),
            f.integers("shape") if f.has("shape") else None,
            f.text_or_none("fill"),
            f.text_or_none("raw_dtype"),
            f.text_or_none("device"),
            f.flag("owned", False),
        )
    raise MessageError(f"argument spec: unknown kind {k[:40]!r}")


def _inner(obj: object) -> Spec:
    return _spec(Fields(obj, "argument spec"))


def _inner_pair(p: object) -> Tuple[Spec, Spec]:
    if not isinstance(p, list) or len(p) != 2:
        raise MessageError("argument spec: a map item is not a [key, value] pair")
    return _inner(p[0]), _inner(p[1])
