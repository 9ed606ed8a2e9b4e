"""CUDA probes of conform (child side): valid calls with device tensors,
guard regions around them, and the held-stream test of which stream a
kernel runs on. The parent's judgement is conform/checks_gpu.py.

CUDA is initialized here, in the probe child (or a worker serving itself),
on the first function that gets GPU steps, never in the zygote: CUDA does
not survive fork(). The steps run first in a function's plan (after its
getters), because a host-tensor call to a CUDA kernel that does not check
the device can leave the context dead (a sticky error) for every later call;
after them, each host call is followed by a synchronization, so such an
error is pinned on the call that caused it ("cuda_error" in its obs).

Steps:
  gpu:valid   every tensor parameter a float32[1024] in device memory, between
              guard regions of GUARD_BYTE, filled with 1.5 + 10 * its index; the call
              runs with the probe's stream published; then stream and context
              are synchronized. obs: the call's (probe_task.Prober.call), plus
              cuda_error, guard_damage, changed (arguments whose data changed).
  gpu:stream  after gpu:valid succeeded: the same call while the published
              stream waits (cuStreamWaitValue32) for a flag only tvmffi sets;
              outputs that change before the release were written by work on
              another stream. obs: early (changed argument indices), waited
              (the call returned only after the release: it synchronized the
              held stream itself), cuda_error.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import time
from ctypes import byref, c_int64, c_void_p
from typing import TYPE_CHECKING, Any, Dict, Optional

from ..abi.constants import kTVMFFIDLTensorPtr, kTVMFFITensor
from ..abi.devices import kDLCUDA
from ..abi.dtypes import kDLFloat
from ..abi.structs import DLManagedTensor
from . import probe_extra, probe_memory

if TYPE_CHECKING:
    from ..ffi.cuda import Context, CudaError, DeviceBuffer, Stream
    from . import sigs

Msg = Dict[str, Any]

VALID = "gpu:valid"
STREAM = "gpu:stream"
STEPS = (VALID, STREAM)
#: float32 elements of each device tensor (the host probe's page of them).
ELEMENTS = 1024
#: Bytes of guard on each side of a device tensor, and their value.
GUARD = 4096
GUARD_BYTE = 0xA5
#: Seconds the held stream stays held while the call has not returned (a
#: call that synchronizes its own stream would otherwise never return).
RELEASE_AFTER = 2.0
#: Seconds to wait for work on other streams before reading the outputs again.
OTHER_STREAMS_GRACE = 0.05
TENSOR_TYPES = ("ffi.Tensor", "DLTensor*")


def has_tensors(sig: Optional[sigs.Sig]) -> bool:
    return sig is not None and any(p["type"] in TENSOR_TYPES for p in sig.params)


class Buffer:
    """One device tensor of the probe: [guard][ELEMENTS float32][guard]."""

    def __init__(self, ctx: Context, index: int) -> None:
        self.ctx = ctx
        self.nbytes = ELEMENTS * 4
        self.mem: DeviceBuffer = ctx.alloc(self.nbytes + 2 * GUARD)
        self.ptr = self.mem.ptr + GUARD
        ctx.memset8(self.mem.ptr, GUARD_BYTE, self.nbytes + 2 * GUARD)
        # 1.5, 11.5, 21.5...: no simple kernel of its inputs (x + 1, 2 * x, a
        # copy) writes the value an output already holds, so writes show.
        (bits,) = struct.unpack("<I", struct.pack("<f", 1.5 + 10.0 * index))
        ctx.memset32(self.ptr, bits, ELEMENTS)
        self.pristine = ctx.read(self.ptr, self.nbytes)
        probe_memory.note_device_range(self.mem.ptr, self.mem.nbytes)

    def changed(self) -> bool:
        return self.ctx.read(self.ptr, self.nbytes) != self.pristine

    def guard_damage(self) -> list[dict[str, int]]:
        """[{"side": -1|1, "offset", "bytes"}]: guard bytes no longer GUARD_BYTE
        (offset from the data's start (-1) or end (1))."""
        out = []
        for side, at in ((-1, self.mem.ptr), (1, self.ptr + self.nbytes)):
            raw = self.ctx.read(at, GUARD)
            bad = [i for i, b in enumerate(raw) if b != GUARD_BYTE]
            if bad:
                first = bad[-1] - GUARD if side < 0 else bad[0]
                out.append({"side": side, "offset": first, "bytes": len(bad)})
        return out

    def free(self) -> None:
        self.mem.free()


class Gpu:
    """The probe child's CUDA state: context, the stream published to the
    library, a second stream and a flag word for holding the first."""

    def __init__(self) -> None:
        self.ctx: Optional[Context] = None
        self.why: Optional[str] = None
        self.name = ""
        self.stream: Optional[Stream] = None
        self.side: Optional[Stream] = None
        self.flag: Optional[DeviceBuffer] = None
        self.keep: list[Any] = []
        #: the sticky CUDA error that ended this process's CUDA (the parent
        #: then replaces the probe child before the next function)
        self.poisoned: Optional[str] = None
        self.in_step = False
        self.valid_obs: Optional[Msg] = None

    def ready(self, prober: Any) -> bool:
        """CUDA is up here (initialized on the first call); else self.why says why."""
        if self.ctx is None and self.why is None:
            from ..ffi import cuda

            try:
                ctx = cuda.context(0)
                self.stream, self.side = ctx.stream(), ctx.stream()
                self.flag = ctx.alloc(4)
                self.name = ctx.name()
                rt = prober.rt
                prev = c_void_p()
                rt.check(rt.TVMFFIEnvSetStream(kDLCUDA, 0, c_void_p(self.stream.handle), prev))
                self.ctx = ctx
                prober.tensors.device_alloc = self.variant_data
            except cuda.CudaError as e:
                self.why = f"CUDA failed to start: {e}"
            except cuda.CudaUnavailable as e:
                self.why = str(e)
        return self.ctx is not None

    def status(self) -> Optional[str]:
        """For the plan event: the device probed, or why there is none."""
        return f"cuda:0 ({self.name})" if self.ctx is not None else self.why

    def variant_data(self, nbytes: int) -> int:
        """Device memory for the host probe's CUDA tensor variant (tensor:cuda):
        a host kernel that dereferences it faults inside a known device range."""
        assert self.ctx is not None  # set as the pool's allocator only once ready
        page = max(nbytes, 4096)
        buf = self.ctx.alloc(page)
        self.keep.append(buf)
        probe_memory.note_device_range(buf.ptr, page)
        return buf.ptr + page - nbytes

    def settle(self) -> Optional[Msg]:
        """Synchronize the published stream and the context: the CUDA error
        reported ({"name", "message", "sticky"}) or None."""
        from ..ffi.cuda import CudaError

        if self.ctx is None or self.stream is None:
            return None
        try:
            self.stream.synchronize()
            self.ctx.synchronize()
        except CudaError as e:
            return self._failed(e)
        return None

    def _failed(self, e: CudaError) -> Msg:
        if e.sticky and self.poisoned is None:
            self.poisoned = e.name
        return {"name": e.name, "message": e.text, "sticky": e.sticky}

    def after_call(self, obs: Msg) -> None:
        """Hook of probe_task.Prober.call: pin an asynchronous CUDA error on
        the host call that left it (not inside the GPU steps, which settle
        themselves, and not once CUDA is dead)."""
        if self.ctx is None or self.in_step or self.poisoned:
            return
        err = self.settle()
        if err is not None:
            obs["cuda_error"] = err

    # -- the steps -----------------------------------------------------------------
    def tensor_any(self, prober: Any, buf: Buffer, kind: str, owned: list[bytes]) -> bytes:
        """Raw Any of a device tensor: a borrowed DLTensor* or an owned ffi.Tensor."""
        m = DLManagedTensor()
        t = m.dl_tensor
        t.data = buf.ptr
        t.device.device_type, t.device.device_id = kDLCUDA, 0
        t.ndim = 1
        t.dtype.code, t.dtype.bits, t.dtype.lanes = kDLFloat, 32, 1
        shape, strides = (c_int64 * 1)(ELEMENTS), (c_int64 * 1)(1)
        t.shape, t.strides = shape, strides
        self.keep.extend([m, shape, strides])
        if kind == "DLTensor*":
            return struct.pack("<iIQ", kTVMFFIDLTensorPtr, 0, ctypes.addressof(m))
        out = c_void_p()
        if prober.c.TVMFFITensorFromDLPack(ctypes.addressof(m), 0, 0, byref(out)) != 0:
            raise probe_memory.CannotSynthesize(
                f"wrapping a CUDA tensor failed: {prober.take_error()}"
            )
        raw = struct.pack("<iIQ", kTVMFFITensor, 0, out.value or 0)
        owned.append(raw)
        return raw

    def run_step(
        self, prober: Any, name: str, step: str, sig: Optional[sigs.Sig], is_global: bool
    ) -> Msg:
        if not self.ready(prober):
            return {"skipped": self.why}
        if self.poisoned:
            return {"skipped": f"CUDA failed earlier in this process ({self.poisoned})"}
        if sig is None:
            return {"skipped": "no signature"}
        if step == STREAM and not _wrote(self.valid_obs):
            skip = (
                "the CUDA call did not succeed"
                if not _ok(self.valid_obs)
                else (
                    "the CUDA call writes no tensor argument: the stream it uses cannot be observed"
                )
            )
            return {"skipped": skip}
        fn, why = probe_extra.caller(prober, name, is_global)
        if fn is None:
            return {"skipped": why}
        left = self.settle()
        if left is not None:  # not this call's: an earlier one of this process
            return {"skipped": f"CUDA reported {left['name']} before the call", "cuda_error": left}
        owned: list[bytes] = []
        bufs: list[Buffer] = []
        self.in_step = True
        try:
            raws = []
            for p in sig.params:
                if p["type"] in TENSOR_TYPES:
                    bufs.append(Buffer(self.ctx, len(bufs)))  # type: ignore[arg-type]
                    raws.append(self.tensor_any(prober, bufs[-1], p["type"], owned))
                else:
                    raws.append(prober.make(p, owned))
            if step == VALID:
                obs: Msg = prober.call(fn, raws)
                obs["cuda_error"] = self.settle()
                if obs["cuda_error"] is None:
                    obs["guard_damage"] = {
                        str(i): d for i, b in enumerate(bufs) if (d := b.guard_damage())
                    }
                    obs["changed"] = [i for i, b in enumerate(bufs) if b.changed()]
                self.valid_obs = obs
                return obs
            return self._held(prober, fn, raws, bufs)
        except probe_memory.CannotSynthesize as e:
            return {"skipped": str(e)}
        finally:
            self.in_step = False
            for o in owned:
                prober.release(o)
            if not self.poisoned:
                for b in bufs:
                    b.free()

    def _held(self, prober: Any, fn: Any, raws: list[bytes], bufs: list[Buffer]) -> Msg:
        from ..ffi.cuda import CudaError

        ctx, stream, side, flag = self.ctx, self.stream, self.side, self.flag
        assert ctx is not None and stream is not None and side is not None and flag is not None
        ctx.memset32(flag.ptr, 0, 1)
        try:
            ctx.wait_value32(stream, flag.ptr, 1)
        except CudaError as e:
            return {"skipped": f"the stream cannot be held here ({e})"}
        released = threading.Event()
        lock = threading.Lock()

        def release() -> None:
            with lock:
                if released.is_set():
                    return
                ctx.make_current()
                ctx.write_value32(side, flag.ptr, 1)
                released.set()

        timer = threading.Timer(RELEASE_AFTER, release)
        timer.daemon = True
        timer.start()
        try:
            obs: Msg = prober.call(fn, raws)
            waited = released.is_set()
            early: list[int] = []
            if not waited:
                # Work on the legacy stream ends with a synchronous copy on it
                # (it does not wait for the held, non-blocking stream); work on
                # a library's own stream gets a moment more.
                early = [i for i, b in enumerate(bufs) if b.changed()]
                if not early:
                    time.sleep(OTHER_STREAMS_GRACE)
                    early = [i for i, b in enumerate(bufs) if b.changed()]
        finally:
            timer.cancel()
            release()
        obs.update(held=True, waited=waited, early=early, cuda_error=self.settle())
        return obs


def _ok(obs: Optional[Msg]) -> bool:
    return bool(obs) and obs.get("rc") == 0 and not obs.get("cuda_error")  # type: ignore[union-attr]


def _wrote(obs: Optional[Msg]) -> bool:
    return _ok(obs) and bool(obs.get("changed"))  # type: ignore[union-attr]


# -- hooks of probe_task.Prober ------------------------------------------------------------
def plan(
    prober: Any, steps: list[str], sig: Optional[sigs.Sig], req: Msg
) -> tuple[list[str], Optional[str]]:
    """The plan with the GPU steps (after the getters, before any host call)
    when the parent asked for them ("gpu" in the request) and the function
    takes tensors; and the GPU status for the plan event."""
    if not req.get("gpu") or not has_tensors(sig):
        return steps, None
    if not prober.gpu.ready(prober):
        return steps, prober.gpu.why
    i = 0
    while i < len(steps) and steps[i] in ("metadata", "doc"):
        i += 1
    return [*steps[:i], *STEPS, *steps[i:]], prober.gpu.status()


def fork_refusal() -> Optional[str]:
    """Why the loaded worker may not fork probe children: the library
    initialized CUDA while loading (a forked child cannot use it)."""
    from ..ffi import cuda

    if cuda.initialized_here():
        return "the library initialized CUDA while loading (CUDA does not survive fork)"
    return None
