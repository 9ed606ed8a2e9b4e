"""The CUDA driver API through ctypes: device memory, copies, streams, events.

No framework (torch, cupy) is needed: `libcuda.so.1` is loaded on first use
(TVMFFI_CUDA_DRIVER names another file: the tests' stand-in driver), and CUDA
is initialized only when a context is asked for. CUDA does not survive
fork(): only a process that runs library code (the call worker, a conform
probe child) calls context(); the tvmffi parent and conform's zygote never do,
and a forked child of an initialized process refuses to use it.

    ctx = cuda.context(0)                    # cuInit, primary context, current
    buf = ctx.alloc(4096)                    # device memory (freed by buf.free())
    ctx.htod(buf.ptr, host_address, 4096)    # copies (synchronous)
    s = ctx.stream()                         # a non-blocking stream
    s.synchronize()                          # CudaError(name) on an async error

Errors: CudaUnavailable (exit 2: no driver, no device, CUDA cannot start
here) and CudaError (exit 1: a call failed; .name is the driver's name of
the error, e.g. CUDA_ERROR_ILLEGAL_ADDRESS).
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..abi import cuda as K
from ..errors import CheckFailed, InputError

__all__ = [
    "Context",
    "CudaError",
    "CudaUnavailable",
    "DeviceBuffer",
    "DeviceInfo",
    "Driver",
    "Event",
    "Stream",
    "context",
    "devices",
    "driver",
    "driver_path",
    "driver_read_paths",
    "initialized_here",
]


class CudaUnavailable(InputError):
    """No CUDA here: no driver, no device, or CUDA cannot start (exit 2:
    tvmffi cannot judge a CUDA library on this machine)."""


class CudaError(CheckFailed):
    """A CUDA driver call failed (exit 1). name: CUDA_ERROR_*; code: CUresult."""

    def __init__(self, code: int, name: str, text: str, what: str) -> None:
        super().__init__(f"{name}: {text} ({what})")
        self.code, self.name, self.text, self.what = code, name, text, what

    @property
    def sticky(self) -> bool:
        """The context is dead after it: the process must end to use CUDA again."""
        return self.code in K.STICKY_ERRORS


# (restype, argtypes) of every function bound; names as in abi.cuda.SYMBOLS.
_P = c_void_p
_SIGS: dict[str, tuple[Any, list[Any]]] = {
    "cuInit": (c_int, [c_uint]),
    "cuDriverGetVersion": (c_int, [_P]),
    "cuDeviceGetCount": (c_int, [_P]),
    "cuDeviceGet": (c_int, [_P, c_int]),
    "cuDeviceGetName": (c_int, [c_char_p, c_int, c_int]),
    "cuDeviceGetAttribute": (c_int, [_P, c_int, c_int]),
    "cuDeviceTotalMem": (c_int, [_P, c_int]),
    "cuDevicePrimaryCtxRetain": (c_int, [_P, c_int]),
    "cuDevicePrimaryCtxRelease": (c_int, [c_int]),
    "cuCtxSetCurrent": (c_int, [_P]),
    "cuCtxGetCurrent": (c_int, [_P]),
    "cuCtxSynchronize": (c_int, []),
    "cuGetErrorName": (c_int, [c_int, _P]),
    "cuGetErrorString": (c_int, [c_int, _P]),
    "cuMemAlloc": (c_int, [_P, c_size_t]),
    "cuMemFree": (c_int, [c_uint64]),
    "cuMemGetInfo": (c_int, [_P, _P]),
    "cuPointerGetAttribute": (c_int, [_P, c_int, c_uint64]),
    "cuMemcpyHtoD": (c_int, [c_uint64, _P, c_size_t]),
    "cuMemcpyDtoH": (c_int, [_P, c_uint64, c_size_t]),
    "cuMemcpyDtoD": (c_int, [c_uint64, c_uint64, c_size_t]),
    "cuMemcpyHtoDAsync": (c_int, [c_uint64, _P, c_size_t, _P]),
    "cuMemcpyDtoHAsync": (c_int, [_P, c_uint64, c_size_t, _P]),
    "cuMemsetD8": (c_int, [c_uint64, ctypes.c_ubyte, c_size_t]),
    "cuMemsetD32": (c_int, [c_uint64, c_uint, c_size_t]),
    "cuStreamCreate": (c_int, [_P, c_uint]),
    "cuStreamDestroy": (c_int, [_P]),
    "cuStreamSynchronize": (c_int, [_P]),
    "cuStreamQuery": (c_int, [_P]),
    "cuStreamWaitValue32": (c_int, [_P, c_uint64, ctypes.c_uint32, c_uint]),
    "cuStreamWriteValue32": (c_int, [_P, c_uint64, ctypes.c_uint32, c_uint]),
    "cuEventCreate": (c_int, [_P, c_uint]),
    "cuEventDestroy": (c_int, [_P]),
    "cuEventRecord": (c_int, [_P, _P]),
    "cuEventSynchronize": (c_int, [_P]),
    "cuEventQuery": (c_int, [_P]),
    "cuEventElapsedTime": (c_int, [_P, _P, _P]),
}
#: Functions tvmffi can do without (an older driver): absent ones raise when called.
_OPTIONAL = frozenset({"cuStreamWaitValue32", "cuStreamWriteValue32", "cuPointerGetAttribute"})


def driver_path() -> str:
    """The file loaded as the driver: TVMFFI_CUDA_DRIVER, else libcuda.so.1."""
    return os.environ.get(K.DRIVER_ENV) or K.DRIVER_SONAME


class Driver:
    """libcuda.so.1 (or TVMFFI_CUDA_DRIVER) with its functions bound."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            # RTLD_GLOBAL: a library that dlopens libcuda.so.1 itself (cudart
            # does) gets this same driver, the stand-in included (its SONAME).
            self.lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as e:
            where = f"{K.DRIVER_ENV}={path}" if os.environ.get(K.DRIVER_ENV) else path
            raise CudaUnavailable(f"no CUDA driver: {where} cannot be loaded ({e})") from None
        self.fns: dict[str, Callable[..., int]] = {}
        for name, (restype, argtypes) in _SIGS.items():
            fn = None
            for sym in (*K.SYMBOLS.get(name, ()), name):
                try:
                    fn = getattr(self.lib, sym)
                    break
                except AttributeError:
                    continue
            if fn is None:
                if name in _OPTIONAL:
                    continue
                raise CudaUnavailable(f"no usable CUDA driver: {path} lacks {name}")
            fn.restype, fn.argtypes = restype, argtypes
            self.fns[name] = fn

    def has(self, name: str) -> bool:
        return name in self.fns

    def call(self, name: str, *args: Any) -> int:
        fn = self.fns.get(name)
        if fn is None:
            return K.CUDA_ERROR_NOT_SUPPORTED
        return int(fn(*args))

    def check(self, name: str, *args: Any, what: str = "") -> None:
        rc = self.call(name, *args)
        if rc != K.CUDA_SUCCESS:
            raise self.error(rc, what or name)

    def error(self, code: int, what: str) -> CudaError:
        return CudaError(code, self.error_name(code), self.error_string(code), what)

    def error_name(self, code: int) -> str:
        out = c_char_p()
        if self.call("cuGetErrorName", code, byref(out)) == 0 and out.value:
            return out.value.decode("ascii", "replace")
        return K.error_name(code)

    def error_string(self, code: int) -> str:
        out = c_char_p()
        if self.call("cuGetErrorString", code, byref(out)) == 0 and out.value:
            return out.value.decode("utf-8", "replace")
        return "no description from the driver"

    def version(self) -> int:
        v = c_int()
        return v.value if self.call("cuDriverGetVersion", byref(v)) == 0 else 0


_lock = threading.RLock()
_driver: Optional[Driver] = None
#: pid of the process that ran cuInit (a forked child must not use it).
_init_pid: Optional[int] = None
_contexts: dict[int, Context] = {}


def driver() -> Driver:
    """The driver, loaded once (CudaUnavailable when it cannot be)."""
    global _driver
    with _lock:
        if _driver is None:
            _driver = Driver(driver_path())
        return _driver


def initialized_here() -> bool:
    """Whether CUDA was initialized in this process (by us or by a library),
    asked without initializing it: false when no driver is loaded at all."""
    if _init_pid is not None:
        return True
    try:
        ctypes.CDLL(driver_path(), mode=os.RTLD_NOW | getattr(os, "RTLD_NOLOAD", 0))
    except OSError:
        return False  # not loaded: nobody can have initialized it
    try:
        d = driver()
    except CudaUnavailable:
        return False
    ctx = c_void_p()
    return d.call("cuCtxGetCurrent", byref(ctx)) != K.CUDA_ERROR_NOT_INITIALIZED


def _init_locked() -> Driver:
    """The driver, with cuInit done in this process (called under _lock)."""
    global _init_pid
    d = driver()
    if _init_pid is not None and _init_pid != os.getpid():
        raise CudaUnavailable(
            "CUDA was initialized before this process was forked; it cannot be used here"
        )
    if _init_pid is None:
        rc = d.call("cuInit", 0)
        if rc in K.NO_DEVICE_ERRORS:
            raise CudaUnavailable(
                f"no CUDA device: cuInit returned {d.error_name(rc)} ({d.error_string(rc)})"
            )
        if rc != K.CUDA_SUCCESS:
            raise CudaUnavailable(
                f"CUDA cannot start here: cuInit returned {d.error_name(rc)} "
                f"({d.error_string(rc)}){_limit_hint(rc)}"
            )
        _init_pid = os.getpid()
    return d


@dataclass(frozen=True)
class DeviceInfo:
    """One CUDA device as the driver describes it (no context is created)."""

    ordinal: int
    name: str
    compute_capability: tuple[int, int]


def devices() -> list[DeviceInfo]:
    """Every CUDA device: cuInit, then names and compute capabilities read
    without a context (a context costs far more than the query).
    CudaUnavailable without driver or device."""
    with _lock:
        d = _init_locked()
        n = c_int()
        d.check("cuDeviceGetCount", byref(n))
        out = []
        for i in range(max(0, min(n.value, 64))):  # the driver's count, bounded
            dev, v_major, v_minor = c_int(), c_int(), c_int()
            d.check("cuDeviceGet", byref(dev), i)
            buf = ctypes.create_string_buffer(256)
            d.check("cuDeviceGetName", buf, 256, dev.value)
            d.check(
                "cuDeviceGetAttribute",
                byref(v_major),
                K.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                dev.value,
            )
            d.check(
                "cuDeviceGetAttribute",
                byref(v_minor),
                K.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                dev.value,
            )
            name = buf.value.decode("utf-8", "replace")
            out.append(DeviceInfo(i, name, (v_major.value, v_minor.value)))
        return out


def context(device: int = 0) -> Context:
    """The primary context of CUDA device `device`, current in this thread.
    Initializes CUDA on first use; CudaUnavailable without driver or device."""
    with _lock:
        d = _init_locked()
        ctx = _contexts.get(device)
        if ctx is None:
            n = c_int()
            d.check("cuDeviceGetCount", byref(n))
            if not 0 <= device < n.value:
                have = f"{n.value} device{'' if n.value == 1 else 's'}"
                raise CudaUnavailable(f"no CUDA device cuda:{device} (this machine has {have})")
            ctx = Context(d, device)
            _contexts[device] = ctx
        ctx.make_current()
        return ctx


def missing_code(path: str, ctx: Context) -> Optional[str]:
    """Why the CUDA code linked into the library at `path` has nothing the
    device of `ctx` can run (no SASS for it, no PTX to JIT), or None: it has
    some, or it carries no fat binary (its kernels may come from elsewhere)."""
    from ..binary import fatbin

    try:
        code = fatbin.read_path(path, names=False)
    except Exception:  # an unreadable file: the load already judged it
        return None
    if code is None:
        return None
    s = code.support(ctx.compute_capability())
    if s.verdict != "none":
        return None
    name = os.path.basename(path)
    return f"{name} has no CUDA code for cuda:{ctx.device} ({ctx.name()}): {s.reason}"


def _limit_hint(rc: int) -> str:
    """Why cuInit may have run out of memory: an address-space limit (the
    driver reserves far more address space than it uses)."""
    if rc != K.CUDA_ERROR_OUT_OF_MEMORY:
        return ""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return ""
    return (
        f"; this process may use {soft >> 30} GiB of address space (RLIMIT_AS, "
        "--memory-limit), less than CUDA reserves: try --memory-limit 64G or more"
    )


def driver_read_paths() -> list[str]:
    """Files a sandboxed worker must be able to read to load the driver named
    by TVMFFI_CUDA_DRIVER (the system's libcuda.so.1 is under /usr or /lib)."""
    p = os.environ.get(K.DRIVER_ENV)
    if not p or not os.path.exists(p):
        return []
    # The worker starts elsewhere (its scratch directory): a relative path
    # must name the same file there.
    os.environ[K.DRIVER_ENV] = p = os.path.abspath(p)
    return [p]


@dataclass(frozen=True)
class ContextInfo:
    """A CUDA device as a call reports it: "cuda:N", the device's name,
    "major.minor", cuDriverGetVersion's number and the driver file loaded."""

    device: str
    name: str
    compute_capability: str
    driver_version: int
    driver: str


class Context:
    """The primary context of one device (retained for the process's life)."""

    def __init__(self, drv: Driver, device: int) -> None:
        self.driver = drv
        self.device = device
        dev = c_int()
        drv.check("cuDeviceGet", byref(dev), device)
        self.dev = dev.value
        h = c_void_p()
        rc = drv.call("cuDevicePrimaryCtxRetain", byref(h), self.dev)
        if rc != K.CUDA_SUCCESS:
            raise CudaUnavailable(
                f"CUDA cannot start here: cuDevicePrimaryCtxRetain returned "
                f"{drv.error_name(rc)} ({drv.error_string(rc)})"
            )
        self.handle = h.value

    def make_current(self) -> None:
        self.driver.check("cuCtxSetCurrent", c_void_p(self.handle))

    # -- facts -------------------------------------------------------------------
    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self.driver.check("cuDeviceGetName", buf, 256, self.dev)
        return buf.value.decode("utf-8", "replace")

    def attribute(self, attr: int) -> int:
        v = c_int()
        self.driver.check("cuDeviceGetAttribute", byref(v), attr, self.dev)
        return v.value

    def compute_capability(self) -> tuple[int, int]:
        return (
            self.attribute(K.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            self.attribute(K.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        )

    def memops(self) -> bool:
        """Whether cuStreamWaitValue32 / cuStreamWriteValue32 are usable."""
        if not (self.driver.has("cuStreamWaitValue32") and self.driver.has("cuStreamWriteValue32")):
            return False
        try:
            return bool(self.attribute(K.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1))
        except CudaError:
            return False

    def describe(self) -> ContextInfo:
        """The device, its name and compute capability, the driver."""
        major, minor = self.compute_capability()
        return ContextInfo(
            f"cuda:{self.device}",
            self.name(),
            f"{major}.{minor}",
            self.driver.version(),
            self.driver.path,
        )

    # -- memory ------------------------------------------------------------------
    def alloc(self, nbytes: int) -> DeviceBuffer:
        p = c_uint64()
        self.driver.check("cuMemAlloc", byref(p), max(int(nbytes), 1), what=f"{nbytes} bytes")
        return DeviceBuffer(self, int(p.value), int(nbytes))

    def htod(self, dst: int, src: int, n: int) -> None:
        if n:
            self.driver.check("cuMemcpyHtoD", c_uint64(dst), c_void_p(src), n)

    def dtoh(self, dst: int, src: int, n: int) -> None:
        if n:
            self.driver.check("cuMemcpyDtoH", c_void_p(dst), c_uint64(src), n)

    def dtoh_async(self, dst: int, src: int, n: int, stream: Stream) -> None:
        if n:
            self.driver.check(
                "cuMemcpyDtoHAsync", c_void_p(dst), c_uint64(src), n, c_void_p(stream.handle)
            )

    def dtod(self, dst: int, src: int, n: int) -> None:
        if n:
            self.driver.check("cuMemcpyDtoD", c_uint64(dst), c_uint64(src), n)

    def memset8(self, dst: int, value: int, n: int) -> None:
        if n:
            self.driver.check("cuMemsetD8", c_uint64(dst), value & 0xFF, n)

    def memset32(self, dst: int, value: int, count: int) -> None:
        if count:
            self.driver.check("cuMemsetD32", c_uint64(dst), value & 0xFFFFFFFF, count)

    def read(self, src: int, n: int) -> bytes:
        """n bytes of device memory at src (a synchronous copy)."""
        buf = ctypes.create_string_buffer(max(n, 1))
        self.dtoh(ctypes.addressof(buf), src, n)
        return buf.raw[:n]

    def write(self, dst: int, data: bytes) -> None:
        buf = ctypes.create_string_buffer(data, max(len(data), 1))
        self.htod(dst, ctypes.addressof(buf), len(data))

    def is_device_pointer(self, ptr: int) -> bool:
        """Whether the driver knows `ptr` as device memory (UVA)."""
        if not self.driver.has("cuPointerGetAttribute"):
            return False
        kind = c_uint()
        rc = self.driver.call(
            "cuPointerGetAttribute", byref(kind), K.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, c_uint64(ptr)
        )
        return rc == 0 and kind.value == K.CU_MEMORYTYPE_DEVICE

    # -- streams, events, synchronization -------------------------------------------
    def stream(self, non_blocking: bool = True) -> Stream:
        h = c_void_p()
        flags = K.CU_STREAM_NON_BLOCKING if non_blocking else K.CU_STREAM_DEFAULT
        self.driver.check("cuStreamCreate", byref(h), flags)
        return Stream(self, h.value or 0, owned=True)

    def legacy_stream(self) -> Stream:
        """The legacy default stream (handle 0, what `stream 0` means to CUDA)."""
        return Stream(self, 0, owned=False)

    def event(self, timing: bool = True) -> Event:
        h = c_void_p()
        flags = K.CU_EVENT_DEFAULT if timing else K.CU_EVENT_DISABLE_TIMING
        self.driver.check("cuEventCreate", byref(h), flags)
        return Event(self, h.value or 0)

    def synchronize(self, what: str = "cuCtxSynchronize") -> None:
        """Wait for all work of the context; CudaError on an asynchronous error."""
        self.driver.check("cuCtxSynchronize", what=what)

    def pending_error(self) -> Optional[CudaError]:
        """The error a synchronization reports now (None when all is well)."""
        rc = self.driver.call("cuCtxSynchronize")
        return None if rc == K.CUDA_SUCCESS else self.driver.error(rc, "cuCtxSynchronize")

    def wait_value32(self, stream: Stream, addr: int, value: int, eq: bool = False) -> None:
        """Hold `stream` until the 32-bit word at device address `addr` reaches `value`."""
        flags = K.CU_STREAM_WAIT_VALUE_EQ if eq else K.CU_STREAM_WAIT_VALUE_GEQ
        self.driver.check(
            "cuStreamWaitValue32", c_void_p(stream.handle), c_uint64(addr), value, flags
        )

    def write_value32(self, stream: Stream, addr: int, value: int) -> None:
        self.driver.check(
            "cuStreamWriteValue32",
            c_void_p(stream.handle),
            c_uint64(addr),
            value,
            K.CU_STREAM_WRITE_VALUE_DEFAULT,
        )


class DeviceBuffer:
    """nbytes of device memory at ptr; free() returns it (once)."""

    def __init__(self, ctx: Context, ptr: int, nbytes: int) -> None:
        self.ctx, self.ptr, self.nbytes = ctx, ptr, nbytes

    def free(self) -> None:
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            self.ctx.driver.call("cuMemFree", c_uint64(ptr))

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


class Stream:
    """A CUDA stream (handle 0: the legacy default stream)."""

    def __init__(self, ctx: Context, handle: int, owned: bool) -> None:
        self.ctx, self.handle, self.owned = ctx, handle, owned

    def synchronize(self, what: str = "cuStreamSynchronize") -> None:
        self.ctx.driver.check("cuStreamSynchronize", c_void_p(self.handle), what=what)

    def idle(self) -> bool:
        """Whether all work queued on the stream has finished (CudaError on an error)."""
        rc = self.ctx.driver.call("cuStreamQuery", c_void_p(self.handle))
        if rc == K.CUDA_ERROR_NOT_READY:
            return False
        if rc != K.CUDA_SUCCESS:
            raise self.ctx.driver.error(rc, "cuStreamQuery")
        return True

    def destroy(self) -> None:
        if self.owned and self.handle:
            h, self.handle = self.handle, 0
            self.ctx.driver.call("cuStreamDestroy", c_void_p(h))


class Event:
    def __init__(self, ctx: Context, handle: int) -> None:
        self.ctx, self.handle = ctx, handle

    def record(self, stream: Stream) -> None:
        self.ctx.driver.check("cuEventRecord", c_void_p(self.handle), c_void_p(stream.handle))

    def synchronize(self) -> None:
        self.ctx.driver.check("cuEventSynchronize", c_void_p(self.handle))

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to `end` (both recorded and complete)."""
        ms = ctypes.c_float()
        self.ctx.driver.check(
            "cuEventElapsedTime", byref(ms), c_void_p(self.handle), c_void_p(end.handle)
        )
        return float(ms.value)

    def destroy(self) -> None:
        if self.handle:
            h, self.handle = self.handle, 0
            self.ctx.driver.call("cuEventDestroy", c_void_p(h))
