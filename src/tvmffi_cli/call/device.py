"""Device tensors of one `call` or `bench` (child side).

A tensor spec with "device": "cuda:N" (`x.npy@cuda:0`, `float32[1024]:rand@cuda`)
is loaded on the host and copied to CUDA device memory before the call; the
call runs with a stream tvmffi creates (non-blocking), published to the
library through TVMFFIEnvSetStream, or with the legacy default stream
(`--stream default`, published as NULL). After the call tvmffi synchronizes
the stream and the context, so an asynchronous CUDA error (an illegal
address, a launch failure) fails this call with the driver's error name;
then written tensors and device results are copied back for printing and
--out. CUDA is initialized here, in the worker, never in the tvmffi process.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Optional

from ..abi.devices import kDLCPU, kDLCUDA, parse_device
from ..errors import InputError
from .messages import CudaFault, CudaInfo, RaisedError
from .specs import TensorArg

if TYPE_CHECKING:
    from ..ffi.cuda import Context, CudaError, Stream
    from ..ffi.runtime import Runtime
    from ..ffi.tensors import DeviceTensor

#: --stream values: a stream tvmffi creates, or the legacy default stream.
STREAM_MODES = ("tvmffi", "default")


def device_of(spec: TensorArg) -> tuple[int, int]:
    """(device_type, id) of a tensor spec (cpu:0 when it names none)."""
    return parse_device(spec.device) if spec.device else (kDLCPU, 0)


class Devices:
    """The CUDA side of one request: created on the first CUDA tensor (or by
    --stream), on one device; everything it allocated is freed by close().
    path: the library (its GPU code is checked against the device); stream:
    --stream's value; guard: bytes of guard around each device tensor."""

    def __init__(self, path: Optional[str], stream: Optional[str], guard: int = 0) -> None:
        self.stream_mode = stream
        self.path = path
        self.guard = guard
        self.ctx: Optional[Context] = None
        self.stream: Optional[Stream] = None
        self.tensors: list[DeviceTensor] = []
        self._rt: Optional[Runtime] = None
        self._prev = ctypes.c_void_p()

    @property
    def active(self) -> bool:
        return self.ctx is not None

    def _open(self, device: int) -> Context:
        from ..ffi import cuda

        if self.ctx is None:
            ctx = cuda.context(device)
            # A library without code for this GPU fails every launch with
            # CUDA_ERROR_NO_BINARY_FOR_GPU: say so before the call (exit 2).
            why = cuda.missing_code(self.path, ctx) if self.path else None
            if why:
                raise cuda.CudaUnavailable(why)
            self.ctx = ctx
            if self.stream_mode == "default":
                self.stream = self.ctx.legacy_stream()
            else:
                self.stream = self.ctx.stream()
        elif self.ctx.device != device:
            raise InputError(
                f"tensors on cuda:{self.ctx.device} and cuda:{device}: one call uses one CUDA device"
            )
        return self.ctx

    def tensor(self, spec: TensorArg, host: Any) -> DeviceTensor:
        """A CUDA copy of `host` on the spec's device."""
        from ..ffi.tensors import DeviceTensor

        dev_type, dev_id = device_of(spec)
        if dev_type != kDLCUDA:
            raise InputError(f"tensors can be placed on cpu or cuda, not {spec.device}")
        t = DeviceTensor(self._open(dev_id), host, self.guard)
        self.tensors.append(t)
        return t

    def start(self, rt: Runtime) -> None:
        """Before the call: the stream published for the library (and the
        context current in this thread). --stream alone opens cuda:0."""
        if self.ctx is None and self.stream_mode:
            self._open(0)
        if self.ctx is None or self.stream is None:
            return
        self.ctx.make_current()
        self._rt = rt
        rt.check(
            rt.TVMFFIEnvSetStream(
                kDLCUDA, self.ctx.device, ctypes.c_void_p(self.stream.handle or None), self._prev
            )
        )

    def settle(self, func: str) -> Optional[RaisedError]:
        """After the call: wait for the stream, then the whole context. The
        error of an asynchronous CUDA error (this call's), else None."""
        if self.ctx is None or self.stream is None:
            return None
        from ..ffi.cuda import CudaError

        try:
            self.stream.synchronize()
            self.ctx.synchronize()
        except CudaError as e:
            return cuda_error(e, func)
        return None

    def copy_back(self, result: Any) -> Any:
        """A host copy of a CUDA tensor result (None for anything else)."""
        if self.ctx is None or result is None or not hasattr(result, "dltensor"):
            return None
        dl = result.dltensor
        if dl.device.device_type != kDLCUDA:
            return None
        import numpy as np

        from ..ffi.tensors import _numpy_typestr

        shape = [int(x) for x in result.shape]
        strides = result.strides
        if strides is not None and list(strides) != _compact(shape):
            raise InputError("a strided CUDA result cannot be copied back (only compact ones)")
        out = np.empty(shape, dtype=_numpy_typestr(result.dtype))
        if out.nbytes:
            self.ctx.dtoh(int(out.ctypes.data), int(result.data_ptr), int(out.nbytes))
        from ..ffi import mldtypes

        dt = result.dtype
        ml = mldtypes.name_of_dl(dt.code, dt.bits, dt.lanes)
        return out.view(mldtypes.np_dtype(ml)) if ml else out

    def describe(self) -> Optional[CudaInfo]:
        """The "cuda" field of the reply: device, its name, the stream used."""
        if self.ctx is None:
            return None
        d = self.ctx.describe()
        return CudaInfo(
            d.device,
            d.name,
            d.compute_capability,
            d.driver_version,
            d.driver,
            "default" if self.stream_mode == "default" else "tvmffi",
        )

    def close(self) -> None:
        if self._rt is not None and self.ctx is not None:
            self._rt.TVMFFIEnvSetStream(kDLCUDA, self.ctx.device, self._prev, None)
            self._rt = None
        for t in self.tensors:
            t.free()
        self.tensors.clear()
        if self.stream is not None:
            self.stream.destroy()
            self.stream = None


def _compact(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


def cuda_error(e: CudaError, func: str) -> RaisedError:
    """The "raised" error of a call whose CUDA work failed asynchronously."""
    return RaisedError(
        e.name,
        f"{e.text} (reported by {e.what} after {func} returned: its CUDA work failed)",
        cuda=CudaFault(e.code, e.sticky),
    )
