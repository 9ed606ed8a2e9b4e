"""The conform probe's view of values (child side): TVMFFIAny values kept as
their raw 16 bytes, built for arguments and judged as results.

Results of a library under test are not trusted: every pointer is checked
with Readable before it is read, so a wild pointer is reported, not followed.
Layouts come from abi/structs.py; calls go through the runtime of ffi/runtime.py.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
from ctypes import byref, c_int, c_int32, c_void_p
from typing import TYPE_CHECKING, Any, Callable, Dict, cast

from ..abi import constants as K
from ..abi import structs as abi
from ..abi.devices import kDLCPU
from ..abi.dtypes import kDLFloat
from ..abi.structs import DLDataType, DLDevice, DLTensor, TVMFFIByteArray
from . import sigs
from .probe_memory import ANY, CannotSynthesize, Readable
from .probe_tensors import TensorPool, tensor_any

if TYPE_CHECKING:
    from ..ffi.runtime import Runtime

#: A raised error taken out of the runtime: {"kind": ..., "message": ...}.
ErrorInfo = Dict[str, str]

_SAFE_CALL = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_int32, c_void_p)

#: Strings the probe passes; long enough to be heap objects (> 7 bytes).
VALID_STR = b"tvmffi-conform-probe"
WRONG_STR = b"tvmffi-conform-wrong-type"
VALID_INT, WRONG_INT, VALID_FLOAT = 2, 7, 1.5
#: Type indices of values held in the Any itself.
POD_KINDS = {
    K.kTVMFFINone,
    K.kTVMFFIInt,
    K.kTVMFFIBool,
    K.kTVMFFIFloat,
    K.kTVMFFIOpaquePtr,
    K.kTVMFFIDataType,
    K.kTVMFFIDevice,
    K.kTVMFFIDLTensorPtr,
    K.kTVMFFISmallStr,
    K.kTVMFFISmallBytes,
}
#: Kinds that borrow memory; an owning result must never hold one.
BORROWED_KINDS = {
    K.kTVMFFIRawStr: "kTVMFFIRawStr",
    K.kTVMFFIByteArrayPtr: "kTVMFFIByteArrayPtr",
    K.kTVMFFIObjectRValueRef: "kTVMFFIObjectRValueRef",
}
_OBJ = K.kTVMFFIStaticObjectBegin
_HEADER = abi.OBJECT_HEADER_SIZE
_HEADER_TYPE_INDEX = abi.TVMFFIObject.type_index.offset
_ERR_KIND = abi.TVMFFIErrorCell.kind.offset
_ERR_MESSAGE = abi.TVMFFIErrorCell.message.offset
_BYTE_ARRAY = ctypes.sizeof(TVMFFIByteArray)


class _RawApi:
    """C functions called with raw addresses (ffi/runtime.py declares them with
    typed pointers, which would force copies into ctypes structs)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        def fn(name: str, restype: Any, *argtypes: Any) -> Callable[..., Any]:
            f = lib[name]
            f.restype = restype
            f.argtypes = list(argtypes)
            return f

        P = c_void_p
        self.TVMFFIFunctionCall = fn("TVMFFIFunctionCall", c_int, P, P, c_int32, P)
        self.TVMFFIStringFromByteArray = fn("TVMFFIStringFromByteArray", c_int, P, P)
        self.TVMFFIBytesFromByteArray = fn("TVMFFIBytesFromByteArray", c_int, P, P)
        self.TVMFFIErrorMoveFromRaised = fn("TVMFFIErrorMoveFromRaised", None, P)
        self.TVMFFIObjectIncRef = fn("TVMFFIObjectIncRef", c_int, P)
        self.TVMFFIObjectDecRef = fn("TVMFFIObjectDecRef", c_int, P)
        self.TVMFFIEnvTensorAlloc = fn("TVMFFIEnvTensorAlloc", c_int, P, P)
        self.TVMFFIFunctionCreate = fn("TVMFFIFunctionCreate", c_int, P, P, P, P)
        self.TVMFFITensorFromDLPack = fn("TVMFFITensorFromDLPack", c_int, P, c_int32, c_int32, P)


def pod(ti: int, payload: bytes = b"", pad: int = 0) -> bytes:
    """Raw bytes of an Any: type index, 4-byte padding/length, 8-byte payload."""
    return struct.pack("<iI", ti, pad) + payload.ljust(8, b"\0")


def type_index_of(raw: bytes) -> int:
    return cast(int, struct.unpack_from("<i", raw)[0])


def payload_u64(raw: bytes) -> int:
    return cast(int, struct.unpack_from("<Q", raw, 8)[0])


class ProbeValues:
    """Runtime access and values of the probe; Prober (probe_task.py) adds the calls."""

    def __init__(self) -> None:
        # Both set by Prober.load() before anything uses them.
        self.rt: Runtime = None  # type: ignore[assignment]
        self.c: _RawApi = None  # type: ignore[assignment]
        self.readable = Readable()
        self._globals: dict[str, int] = {}
        self._keep: list[Any] = []
        self._cb_keep: list[Any] = []
        self.tensors = TensorPool()
        # The tensor variant make() builds (probe_tensors.VARIANTS, "" = float32),
        # and whether its data sits in padded rather than guarded memory.
        self.variant = ""
        self.padded = False
        # Dimensions of the tensors make() builds when the variant does not
        # fix them: 2 for a kernel that takes only 2-d tensors (probe_kernel.py).
        self.base_ndim = 1

    # -- runtime access --------------------------------------------------------
    def _rt(self, name: str) -> Callable[..., Any] | None:
        return self.rt.rt.get(name)

    def live(self) -> int | None:
        f = self._rt("tvmffi_rt_live_objects")
        return None if f is None else int(f())

    def strong(self, h: int) -> int:
        return self.rt.strong_count(h)

    def type_index_valid(self, ti: int) -> bool:
        f = self._rt("tvmffi_rt_type_index_valid")
        if f is not None:
            return bool(f(ti))
        # Without our runtime's registry query, a dynamic index (types a
        # library registers) cannot be told from garbage: accept every object
        # index; the header check in result_problems still applies.
        return ti >= K.kTVMFFIStaticObjectBegin

    def take_error(self) -> ErrorInfo | None:
        """Move the raised error out: (kind, message) or None."""
        h = c_void_p()
        self.c.TVMFFIErrorMoveFromRaised(byref(h))
        if not h.value:
            return None
        try:
            cell = abi.cell_address(h.value)
            kind = self._ba_bytes(cell + _ERR_KIND, 1 << 12).decode("utf-8", "replace")
            msg = self._ba_bytes(cell + _ERR_MESSAGE, 1 << 12).decode("utf-8", "replace")
            return {"kind": kind, "message": msg}
        finally:
            self.c.TVMFFIObjectDecRef(h)

    def _ba_bytes(self, addr: int, limit: int) -> bytes:
        ba = TVMFFIByteArray.from_buffer_copy(ctypes.string_at(addr, _BYTE_ARRAY))
        data, size = ba.data, min(ba.size, limit)
        if not data or not size or not self.readable(data, size):
            return b""
        return ctypes.string_at(data, size)

    def global_handle(self, name: str) -> int:
        h = self._globals.get(name)
        if h is None:
            h = self.rt.get_global_handle(name)
            if not h:
                raise CannotSynthesize(f"the runtime has no global function {name}")
            self._globals[name] = h
        return h

    def call_global(self, name: str, arg_raws: list[bytes]) -> bytes:
        """Call a runtime global; returns the owned result as 16 raw bytes."""
        args = (ctypes.c_char * max(ANY, ANY * len(arg_raws))).from_buffer_copy(
            b"".join(arg_raws).ljust(ANY, b"\0")
        )
        out = (ctypes.c_char * ANY)()
        rc = self.c.TVMFFIFunctionCall(
            self.global_handle(name),
            ctypes.cast(args, c_void_p),
            len(arg_raws),
            ctypes.cast(out, c_void_p),
        )
        if rc != 0:
            err = self.take_error()
            raise CannotSynthesize(f"{name} failed: {err}")
        return bytes(out)

    # -- values --------------------------------------------------------------------------
    def string_any(self, data: bytes, kind: int = sigs.K_STR) -> bytes:
        buf = (ctypes.c_char * (len(data) + 1)).from_buffer_copy(data + b"\0")
        arrbuf = TVMFFIByteArray(ctypes.addressof(buf), len(data))
        out = (ctypes.c_char * ANY)()
        fn = (
            self.c.TVMFFIStringFromByteArray
            if kind == sigs.K_STR
            else self.c.TVMFFIBytesFromByteArray
        )
        if fn(ctypes.addressof(arrbuf), ctypes.addressof(out)):
            raise CannotSynthesize(f"creating a string failed: {self.take_error()}")
        return bytes(out)

    def string_of(self, raw: bytes) -> bytes | None:
        """Bytes of a string-like Any (None when it is not one)."""
        ti, ln = struct.unpack_from("<iI", raw)
        if ti in (sigs.K_SMALLSTR, sigs.K_SMALLBYTES):
            return raw[8 : 8 + min(ln, 8)]
        if ti in (sigs.K_STR, sigs.K_BYTES):
            h = payload_u64(raw)
            if not self.readable(h, _HEADER + _BYTE_ARRAY):
                return None
            return self._ba_bytes(abi.cell_address(h), 1 << 24)
        if ti == sigs.K_RAWSTR:
            p = payload_u64(raw)
            if not self.readable(p, 1):
                return None
            return ctypes.string_at(p)[: 1 << 24]
        return None

    def release(self, raw: bytes) -> None:
        if type_index_of(raw) >= _OBJ:
            h = payload_u64(raw)
            if h:
                self.c.TVMFFIObjectDecRef(h)

    def make(self, t: sigs.TypeDict, owned: list[bytes]) -> bytes:
        """Raw bytes of a valid value of declared type t; objects go to `owned`."""
        key = t["type"]
        if key in ("int", "Any"):
            return pod(sigs.K_INT, struct.pack("<q", VALID_INT))
        if key == "bool":
            return pod(sigs.K_BOOL, struct.pack("<q", 1))
        if key == "float":
            return pod(sigs.K_FLOAT, struct.pack("<d", VALID_FLOAT))
        if key == "None":
            return pod(sigs.K_NONE)
        if key == "DataType":
            return pod(sigs.K_DTYPE, bytes(DLDataType(kDLFloat, 32, 1)))
        if key == "Device":
            return pod(sigs.K_DEVICE, bytes(DLDevice(kDLCPU, 0)))
        if key in ("ffi.String", "ffi.Object"):
            raw = self.string_any(VALID_STR)
            owned.append(raw)
            return raw
        if key == "ffi.Bytes":
            raw = self.string_any(VALID_STR, sigs.K_BYTES)
            owned.append(raw)
            return raw
        if key == "DLTensor*":
            return tensor_any(self, self.variant, self.padded, as_ptr=True)
        if key == "ffi.Tensor":
            raw = self.tensor()
            owned.append(raw)
            return raw
        if key == "ffi.Shape":
            raw = self.call_global(
                "ffi.Shape",
                [pod(sigs.K_INT, struct.pack("<q", 2)), pod(sigs.K_INT, struct.pack("<q", 3))],
            )
            owned.append(raw)
            return raw
        if key in ("ffi.Array", "ffi.List"):
            elem: sigs.TypeDict = t["args"][0] if t["args"] else {"type": "int", "args": []}
            tmp: list[bytes] = []
            try:
                items = [self.make(elem, tmp), self.make(elem, tmp)]
                raw = self.call_global("ffi.Array", items)
            finally:
                for o in tmp:
                    self.release(o)
            owned.append(raw)
            return raw
        if key in ("ffi.Map", "ffi.Dict"):
            kt: sigs.TypeDict = (
                t["args"][0] if len(t["args"]) == 2 else {"type": "ffi.String", "args": []}
            )
            vt: sigs.TypeDict = t["args"][1] if len(t["args"]) == 2 else {"type": "int", "args": []}
            tmp = []
            try:
                raw = self.call_global("ffi.Map", [self.make(kt, tmp), self.make(vt, tmp)])
            finally:
                for o in tmp:
                    self.release(o)
            owned.append(raw)
            return raw
        if key == "Optional":
            if t["args"]:
                try:
                    return self.make(t["args"][0], owned)
                except CannotSynthesize:
                    pass
            return pod(sigs.K_NONE)
        if key == "Variant":
            for alt in t["args"]:
                try:
                    return self.make(alt, owned)
                except CannotSynthesize:
                    continue
            raise CannotSynthesize(f"no alternative of {sigs.type_str(t)} can be built")
        if key == "ffi.Function":
            raw = self.function()
            owned.append(raw)
            return raw
        raise CannotSynthesize(f"cannot build a value of type {sigs.type_str(t)}")

    def make_wrong(self, kind: int | None, owned: list[bytes]) -> bytes:
        if kind == sigs.K_STR:
            raw = self.string_any(WRONG_STR)
            owned.append(raw)
            return raw
        return pod(sigs.K_INT, struct.pack("<q", WRONG_INT))

    def tensor(self) -> bytes:
        """An owned ffi.Tensor of the current variant, its data at the guard pages."""
        return tensor_any(self, self.variant, self.padded)

    def function(self) -> bytes:
        def cb(_self: int | None, _args: int | None, _n: int, result: int) -> int:
            ctypes.memset(result, 0, ANY)
            return 0

        fn = _SAFE_CALL(cb)
        self._cb_keep.append(fn)
        out = c_void_p()
        if self.c.TVMFFIFunctionCreate(None, ctypes.cast(fn, c_void_p), None, byref(out)) != 0:
            raise CannotSynthesize(f"creating a function failed: {self.take_error()}")
        return pod(sigs.K_FUNCTION, struct.pack("<Q", out.value))

    # -- results ---------------------------------------------------------------------
    def result_problems(self, raw: bytes, ok: bool) -> list[str]:
        """What is wrong with a result Any (list of strings)."""
        ti, pad = struct.unpack_from("<iI", raw)
        payload = raw[8:]
        if not ok:
            if raw != bytes(ANY):
                return [
                    f"the call failed but the result was written (type index {ti}, "
                    f"bytes {raw.hex()}); it must stay None"
                ]
            return []
        if ti in BORROWED_KINDS:
            return [
                f"the result holds the borrowed kind {BORROWED_KINDS[ti]} ({ti}); an owning "
                "result must not point into memory the callee keeps"
            ]
        if ti < _OBJ:
            if ti not in POD_KINDS:
                return [f"type index {ti} is not a valid value kind"]
            if ti in (sigs.K_SMALLSTR, sigs.K_SMALLBYTES):
                if pad > 7:
                    return [f"small string length {pad} exceeds 7"]
                if any(payload[pad:]):
                    return [f"bytes after the {pad}-byte small string are not zero"]
                return []
            probs: list[str] = []
            if pad:
                probs.append(f"padding is {pad:#x}, must be 0")
            if ti == sigs.K_NONE and any(payload):
                probs.append("payload of None is not zero")
            elif ti == sigs.K_BOOL and struct.unpack("<Q", payload)[0] > 1:
                probs.append(f"bool payload is {payload.hex()}, expected 0 or 1")
            elif ti == sigs.K_DTYPE and any(payload[4:]):
                probs.append("unused payload bytes of a DataType are not zero")
            return probs
        probs = []
        if not self.type_index_valid(ti):
            probs.append(f"type index {ti} is neither static nor registered")
        if pad:
            probs.append(f"padding is {pad:#x}, must be 0")
        h = payload_u64(raw)
        if not self.readable(h, _HEADER):
            probs.append(f"object pointer {h:#x} is not readable memory")
            return probs
        hti = ctypes.c_int32.from_address(h + _HEADER_TYPE_INDEX).value
        if hti != ti:
            probs.append(
                f"the result object is already freed or is not an object: its header's "
                f"type index {hti} is not the result's {ti}"
            )
        elif self.strong(h) < 1:
            probs.append("the result object is dead: already freed (strong reference count 0)")
        return probs

    def _tensor_elements(self, cell: DLTensor) -> bytes:
        """Shape and elements of a CPU tensor as its strides and byte_offset
        give them (a view and its contiguous copy digest alike); elements
        only up to 2^20 bytes, read only where readable."""
        ndim = min(cell.ndim, 16)
        shape_p = ctypes.cast(cell.shape, c_void_p).value
        if ndim <= 0 or not shape_p or not self.readable(shape_p, 8 * ndim):
            return b""
        dims = struct.unpack(f"<{ndim}q", ctypes.string_at(shape_p, 8 * ndim))
        out = repr(dims).encode()
        n = 1
        for d in dims:
            n *= max(d, 0)
        size = (cell.dtype.bits * cell.dtype.lanes + 7) // 8
        if cell.device.device_type != kDLCPU or not cell.data or not 0 < n * size <= 1 << 20:
            return out
        dense = list(dims)
        acc = 1
        for k in reversed(range(ndim)):
            dense[k], acc = acc, acc * dims[k]
        strides = dense  # NULL strides: row-major contiguous
        strides_p = ctypes.cast(cell.strides, c_void_p).value
        if strides_p and self.readable(strides_p, 8 * ndim):
            strides = list(struct.unpack(f"<{ndim}q", ctypes.string_at(strides_p, 8 * ndim)))
        first = cell.data + cell.byte_offset
        if strides == dense:
            return out + (
                ctypes.string_at(first, n * size) if self.readable(first, n * size) else b""
            )
        if n > 1 << 16:
            return out
        offsets = [0]
        for d, st in zip(dims, strides):
            offsets = [o + i * st for o in offsets for i in range(d)]
        lo, hi = min(offsets), max(offsets)
        if not self.readable(first + lo * size, (hi - lo + 1) * size):
            return out
        return out + b"".join(ctypes.string_at(first + o * size, size) for o in offsets)

    def fingerprint(self, raw: bytes, depth: int = 0) -> str:
        """A stable digest of a result's value (not its identity)."""
        h = hashlib.sha1()
        self._fp(raw, h, depth)
        return h.hexdigest()[:16]

    def _fp(self, raw: bytes, h: hashlib._Hash, depth: int) -> None:
        ti = type_index_of(raw)
        h.update(struct.pack("<i", ti))
        if ti < _OBJ:
            if ti in (sigs.K_SMALLSTR, sigs.K_SMALLBYTES):
                h.update(self.string_of(raw) or b"")
            else:
                h.update(raw[4:])
            return
        p = payload_u64(raw)
        if ti in (sigs.K_STR, sigs.K_BYTES):
            h.update(self.string_of(raw) or b"")
        elif ti == sigs.K_SHAPE:
            cell: abi.TVMFFIShapeCell | DLTensor = abi.TVMFFIShapeCell.from_buffer_copy(
                ctypes.string_at(abi.cell_address(p), ctypes.sizeof(abi.TVMFFIShapeCell))
            )
            data = ctypes.cast(cell.data, c_void_p).value
            size = min(cell.size, 4096)
            if data and size and self.readable(data, 8 * size):
                h.update(ctypes.string_at(data, 8 * size))
        elif ti == sigs.K_TENSOR:
            raw_cell = ctypes.string_at(abi.cell_address(p), ctypes.sizeof(DLTensor))
            h.update(raw_cell[DLTensor.device.offset : DLTensor.shape.offset])
            h.update(self._tensor_elements(DLTensor.from_buffer_copy(raw_cell)))
        elif ti == sigs.K_ARRAY and depth < 3:
            try:
                size_raw = self.call_global("ffi.ArraySize", [raw])
                size = min(struct.unpack_from("<q", size_raw, 8)[0], 64)
                h.update(struct.pack("<q", size))
                for i in range(size):
                    item = self.call_global(
                        "ffi.ArrayGetItem", [raw, pod(sigs.K_INT, struct.pack("<q", i))]
                    )
                    self._fp(item, h, depth + 1)
                    self.release(item)
            except CannotSynthesize:
                pass
        elif ti == sigs.K_MAP:
            try:
                size_raw = self.call_global("ffi.MapSize", [raw])
                h.update(size_raw[8:])
            except CannotSynthesize:
                pass
