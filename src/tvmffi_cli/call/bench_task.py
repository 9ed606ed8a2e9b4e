"""Child-side task of `tvmffi bench`: build the arguments once, then let the
runtime's C loop (tvmffi_rt_time_calls) call the function, so the numbers
measure the function and the ABI call path, not Python.

request: a CallRequest (call/messages.py) with repeat (calls per round,
         None = calibrate), rounds (timed rounds), target_round_ns (the
         calibration goal). With a CUDA tensor argument (or a stream),
         call/bench_gpu.py times the calls with CUDA events on the call's
         stream instead.
reply: BenchOk, or the Raised / Refused replies of call/task.py.
"""

from __future__ import annotations

import ctypes
from ctypes import byref
from typing import Any, Callable, List, Union

from ..errors import CheckFailed, TvmffiError
from . import task as call_task
from .calibrate import DEFAULT_ROUNDS, DEFAULT_TARGET_ROUND_NS, calibrate
from .describe import JsonDict
from .messages import BenchOk, CallRequest, Raised, Refused, Stats, decode_request, encode


def run(obj: object) -> JsonDict:
    """The task: a request's JSON object in, the reply's out."""
    request = decode_request(obj)
    if not isinstance(request, CallRequest):
        return call_task.run(obj)  # the load phase is call.task's
    try:
        return encode(_run(request))
    except TvmffiError as e:
        return encode(Refused(str(e), e.exit_code))


def _run(request: CallRequest) -> Union[BenchOk, Raised]:
    lib, fn, resolved = call_task.open_function(request)
    call_task._keep_loaded.append(lib)  # objects made by the library die first
    rt = lib.runtime
    timer = rt.rt.get("tvmffi_rt_time_calls")
    if timer is None:  # not our runtime: the same loop, driven through ctypes
        timer = _ctypes_timer(rt)
    from .device import Devices

    devices = Devices(request.path, request.stream)
    try:
        values, tensors = call_task.build_args(lib, request, resolved, None, devices)
        if devices.active or request.stream:
            from . import bench_gpu

            return bench_gpu.run(request, lib, fn, resolved, values, tensors, devices, timer)
        return _bench_host(request, rt, fn, resolved, values, timer)
    finally:
        devices.close()


def _bench_host(
    request: CallRequest, rt: Any, fn: Any, resolved: str, values: List[Any], timer: Any
) -> Union[BenchOk, Raised]:
    from ..abi import structs as abi
    from ..ffi import errors as ffi_errors
    from ..ffi import values as ffi_values

    mode = request.tensor_mode
    n = len(values)
    keep: List[Any] = []
    owned: List[int] = []
    try:
        argv = call_task.pack_args(rt, values, mode, keep, owned)
        if isinstance(argv, Raised):
            return argv
        # One checked call first: a function that raises is reported, not timed.
        result = abi.TVMFFIAny()
        if rt.TVMFFIFunctionCall(fn.handle, argv, n, byref(result)) != 0:
            return Raised(call_task.raised_error(rt.take_error()))
        try:
            ffi_values.any_to_py(rt, result)  # releases an object result
        except (TypeError, ValueError, OverflowError) as e:
            # The library's result, not the user's arguments: a failed check.
            raise CheckFailed(f"it returned a value tvmffi cannot read: {e}") from None

        def timed(calls: int, rounds: int) -> List[int]:
            out = (ctypes.c_int64 * rounds)()
            if timer(fn.handle, argv, n, calls, rounds, out) != 0:
                raise rt.take_error()
            return list(out)

        try:
            per_round = request.repeat or calibrate(
                timed, request.target_round_ns or DEFAULT_TARGET_ROUND_NS
            )
            rounds = request.rounds or DEFAULT_ROUNDS
            timed(per_round, 1)  # warm-up: caches, branch predictors, lazy binding
            round_ns = timed(per_round, rounds)
        except ffi_errors.FFIErrorBase as e:
            return Raised(call_task.raised_error(e))
    finally:
        for h in owned:
            rt.TVMFFIObjectDecRef(h)
    return BenchOk(
        resolved=resolved,
        calls=per_round * rounds,
        timer="c" if "tvmffi_rt_time_calls" in rt.rt else "ctypes",
        calls_per_round=per_round,
        rounds=rounds,
        round_ns=tuple(round_ns),
        ns_per_call=Stats.of([r / per_round for r in round_ns]),
    )


def _ctypes_timer(rt: Any) -> Callable[..., int]:
    """A stand-in for tvmffi_rt_time_calls on a runtime without it: the same
    rounds of TVMFFIFunctionCall, looped in Python (adds ctypes' cost)."""
    import time

    from ..abi import structs as abi

    call = rt.TVMFFIFunctionCall
    dec = rt.TVMFFIObjectDecRef
    first_object = abi.kTVMFFIStaticObjectBegin

    def timer(handle: int, argv: Any, n: int, calls: int, rounds: int, out: Any) -> int:
        result = abi.TVMFFIAny()
        ref = byref(result)
        for r in range(rounds):
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                if call(handle, argv, n, ref) != 0:
                    return -1
                if result.type_index >= first_object:
                    dec(result.v_obj)
            out[r] = time.perf_counter_ns() - t0
        return 0

    return timer
