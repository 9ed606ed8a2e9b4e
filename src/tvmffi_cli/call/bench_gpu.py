"""Child side of `tvmffi bench` with CUDA tensors: device time from CUDA events.

The arguments are on the device (call/device.py) and the call's stream is
published. After one checked call (synchronized: an asynchronous error is
reported, nothing is timed) and a warm-up round, each round records an
event on the call's stream, runs the runtime's C loop (tvmffi_rt_time_calls,
which launches the calls and measures the host's side of them), records a
second event and waits for it: the events give the device time of the
round's calls, the loop the host time of launching them. Bandwidth counts
every CUDA tensor argument's bytes once per call (read or written, not
both): a lower bound of the memory traffic.

reply: BenchOk as bench_task.py's, with timer "cuda-events", ns_per_call the
device time per call and `gpu` (BenchGpu): the launch time per call, the
bytes per call, the bandwidth (bytes per device nanosecond, median round)
and the device and stream.
"""

from __future__ import annotations

import ctypes
import statistics
from ctypes import byref
from typing import Any, List, Union

from . import task as call_task
from .calibrate import DEFAULT_ROUNDS, DEFAULT_TARGET_ROUND_NS, calibrate
from .device import Devices, cuda_error
from .messages import BenchGpu, BenchOk, CallRequest, Raised, Stats
from .task import Tensors


def run(
    request: CallRequest,
    lib: Any,
    fn: Any,
    resolved: str,
    values: List[Any],
    tensors: Tensors,
    devices: Devices,
    timer: Any,
) -> Union[BenchOk, Raised]:
    from ..abi import structs as abi
    from ..ffi import errors as ffi_errors
    from ..ffi import values as ffi_values
    from ..ffi.cuda import CudaError

    rt = lib.runtime
    mode = request.tensor_mode
    devices.start(rt)
    assert devices.ctx is not None and devices.stream is not None  # start() opened them
    ctx, stream = devices.ctx, devices.stream
    n = len(values)
    keep: List[Any] = []
    owned: List[int] = []
    try:
        argv = call_task.pack_args(rt, values, mode, keep, owned)
        if isinstance(argv, Raised):
            return argv
        result = abi.TVMFFIAny()
        if rt.TVMFFIFunctionCall(fn.handle, argv, n, byref(result)) != 0:
            err = call_task.raised_error(rt.take_error())
            devices.settle(request.func)
            return Raised(err)
        ffi_values.any_to_py(rt, result)
        failed = devices.settle(request.func)
        if failed is not None:
            return Raised(failed, devices.describe())
        start, end = ctx.event(), ctx.event()
        host: List[int] = []

        def timed(calls: int, rounds: int) -> List[int]:
            """Device nanoseconds of each round (host ones appended to `host`)."""
            out: List[int] = []
            for _ in range(rounds):
                ns = (ctypes.c_int64 * 1)()
                start.record(stream)
                if timer(fn.handle, argv, n, calls, 1, ns) != 0:
                    raise rt.take_error()
                end.record(stream)
                end.synchronize()
                out.append(int(start.elapsed_ms(end) * 1e6))
                host.append(int(ns[0]))
            return out

        def wall(calls: int, rounds: int) -> List[int]:
            """A round lasts as long as the longer of device and host: a kernel
            that does not run on the call's stream leaves the events ~0 apart."""
            dev = timed(calls, rounds)
            return [max(d, h) for d, h in zip(dev, host[-rounds:])]

        try:
            per_round = request.repeat or calibrate(
                wall, request.target_round_ns or DEFAULT_TARGET_ROUND_NS
            )
            rounds = request.rounds or DEFAULT_ROUNDS
            timed(per_round, 1)  # warm-up: clocks up, caches, lazy module loading
            host.clear()
            round_ns = timed(per_round, rounds)
        except ffi_errors.FFIErrorBase as e:
            return Raised(call_task.raised_error(e))
        except CudaError as e:
            failed = devices.settle(request.func)  # names the asynchronous error
            return Raised(failed or cuda_error(e, request.func))
        failed = devices.settle(request.func)
        if failed is not None:
            return Raised(failed, devices.describe())
        start.destroy()
        end.destroy()
    finally:
        for h in owned:
            rt.TVMFFIObjectDecRef(h)
    per_call = [r / per_round for r in round_ns]
    nbytes = sum(t.nbytes for t, _kind in tensors.values() if hasattr(t, "to_numpy"))
    median = statistics.median(per_call)
    cuda = devices.describe()
    assert cuda is not None  # start() opened the device
    return BenchOk(
        resolved=resolved,
        calls=per_round * rounds,
        timer="cuda-events",
        calls_per_round=per_round,
        rounds=rounds,
        round_ns=tuple(round_ns),
        ns_per_call=Stats.of(per_call),
        gpu=BenchGpu(
            Stats.of([h / per_round for h in host]),
            nbytes,
            (nbytes / median) if median > 0 else None,
            cuda,
        ),
    )
