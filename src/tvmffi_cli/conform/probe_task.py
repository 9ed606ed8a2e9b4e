"""Child side of `tvmffi conform`: load a library and probe its functions.

Runs only in a worker process (the library under test may crash or hang).
The parent (conform/runner.py) sends one JSON request per line; this side
answers with a stream of JSON events, one per line, written as they happen:

  {"event": "loaded", ...}             after {"op": "load", "path": ...}
  {"event": "plan", "steps": [...], "next": s0, "done": false}
                                       after {"op": "probe", "name": ...}
  {"event": "obs", "step": s, ..., "next": s1, "done": false}
                                       facts observed by step s; s1 runs next
  {"event": "hang", "step": s}         written by the watchdog, which then kills us

The last obs (or a plan with nothing to run) says "done": true. Because each
event reaches the pipe before the step it names as "next" starts, a crash in
step s leaves "next": s as the last word: the parent knows which call crashed and
resumes the function after it in a fresh worker. The child only records
facts; conform/checks_probe.py turns them into pass/fail.

Argument arrays live right before a PROT_NONE guard page, so a callee that
reads args[num_args] faults at once instead of reading stale memory.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import threading
import time
from ctypes import byref, c_void_p
from typing import Any, Callable, Collection, Dict, cast

from ..abi.constants import kTVMFFIInt, kTVMFFIStaticObjectBegin
from ..abi.structs import TVMFFIAny
from ..abi.symbols import DOC_PREFIX, METADATA_PREFIX
from . import probe_extra, probe_gpu, probe_kernel, probe_steps, probe_types, sigs
from .probe_memory import ANY, CannotSynthesize, GuardArena, report_faults
from .probe_proc import Crew, ours, payload_i64
from .probe_values import _SAFE_CALL, ProbeValues, _RawApi, payload_u64, type_index_of

#: One JSON message: a request from the parent, or an event / observation for it.
Msg = Dict[str, Any]


class Prober(ProbeValues):
    def __init__(self, emit: Callable[[Msg], None]) -> None:
        super().__init__()
        self.emit = emit
        # Both set by load() before anything uses them.
        self.dl: ctypes.CDLL = None  # type: ignore[assignment]
        self.arena: GuardArena = None  # type: ignore[assignment]
        self.step: str | None = None
        self.step_started: float | None = None
        #: A zygote's probe child times its steps with an interval timer
        #: (SIGALRM's default action ends it) instead of a watchdog thread:
        #: starting a thread in every probe child cost more than its probe.
        self.alarm = False
        self.timeout = 10.0
        self._crew: Crew | None = None  # threads kept for the "threads" step
        self.split: set[str] = set()  # sweep steps to run one variant per step
        self.gpu = probe_gpu.Gpu()  # CUDA, initialized by the first GPU step only
        self.skipped_steps: set[str] = set()  # steps of this function not to run again
        self.ok_steps: set[str] = set()  # ... of them, those whose call succeeded
        self.crashed_steps: set[str] = set()  # ... of them, those that did not return

    # -- loading ---------------------------------------------------------------------
    def load(self, path: str) -> Msg:
        from ..ffi import runtime

        self.rt = runtime.get_runtime()
        self.c = _RawApi(self.rt.lib)
        self.arena = GuardArena()
        report_faults(self.arena.guard, self.arena.page)
        describe: Any = None
        before = probe_extra.global_names(self)
        types_from = probe_types.type_end(self)
        loader = self._rt("tvmffi_rt_library_load")
        if loader is not None:
            mod = c_void_p()
            if loader(os.fsencode(path), byref(mod)) != 0:
                err = self.take_error() or {"kind": "UnknownError", "message": "load failed"}
                return {"ok": False, "error": f"{err['kind']}: {err['message']}"}
            self._keep.append(mod)
            desc = self._rt("tvmffi_rt_module_describe")
            if desc is not None:
                out = (ctypes.c_char * ANY)()
                if desc(mod, ctypes.cast(out, ctypes.POINTER(TVMFFIAny))) == 0:
                    text = self.string_of(bytes(out))
                    self.release(bytes(out))
                    try:
                        describe = json.loads(text)  # type: ignore[arg-type]  # None: TypeError
                    except (TypeError, ValueError):
                        describe = None
                else:
                    self.take_error()
            mode = os.RTLD_LAZY | getattr(os, "RTLD_NOLOAD", 0)
        else:
            mode = os.RTLD_LAZY | os.RTLD_LOCAL
        try:
            self.dl = ctypes.CDLL(path, mode=mode)
        except OSError as e:
            return {"ok": False, "error": str(e)}
        after = probe_extra.global_names(self)
        new = sorted(set(after) - set(before)) if before is not None and after else []
        types_to = probe_types.type_end(self)
        return {
            "ok": True,
            "describe": describe,
            "runtime": str(self.rt.path),
            "instrumented": self._rt("tvmffi_rt_live_objects") is not None,
            "globals": new,
            "types": None
            if types_from is None or types_to is None
            else [t.to_json() for t in probe_types.layouts(self, types_from, types_to)],
        }

    def symbol(self, name: str) -> int | None:
        try:
            return ctypes.cast(self.dl[name], c_void_p).value
        except AttributeError:
            return None

    # -- one call -------------------------------------------------------------------
    def call(
        self,
        fn: probe_extra.Caller,
        raws: list[bytes],
        guarded: bool = True,
        hold: list[int] | None = None,
    ) -> Msg:
        """Call a function once (fn: probe_extra.caller) and record what happened."""
        raw = b"".join(raws)
        args = self.arena.place(raw, guarded)
        objs = self._objects(raws)
        for o in objs:  # an extra reference, so a callee's stray DecRef frees nothing
            self.c.TVMFFIObjectIncRef(o)
        before = [self.strong(o) for o in objs]
        result = (ctypes.c_char * ANY)()
        live0 = self.live()
        rc = fn(None, args, len(raws), ctypes.addressof(result))
        ours()
        obs: Msg = {"num_args": len(raws), "rc": rc, "guarded": guarded}
        self.gpu.after_call(obs)  # an asynchronous CUDA error is this call's
        after_raw = ctypes.string_at(args, len(raw)) if raw else b""
        obs["args_changed"] = after_raw != raw
        err = self.take_error()
        obs["error"] = err if rc != 0 else None
        obs["stale_error"] = err if rc == 0 else None
        res = bytes(result)
        obs["result_type_index"] = type_index_of(res)
        obs["result_problems"] = self.result_problems(res, rc == 0)
        if rc == 0 and not obs["result_problems"]:
            obs["fingerprint"] = self.fingerprint(res)
            if obs["result_type_index"] == kTVMFFIInt:
                obs["int_value"] = payload_i64(res)
            h = payload_u64(res)
            if obs["result_type_index"] >= kTVMFFIStaticObjectBegin and h in objs:
                i = objs.index(h)
                if self.strong(h) <= before[i]:
                    # An argument handed back without a reference of its own:
                    # releasing it would free the caller's object (ours: the
                    # probe's shared values). Kept as the borrow it is.
                    obs["result_borrowed"] = i
                    res = bytes(ANY)
            if type_index_of(res) >= kTVMFFIStaticObjectBegin:
                # Ownership from the header (any runtime, any allocator): a
                # returned object is owned once, by us. More references mean
                # the library kept some: hold it to compare on a repeat call.
                obs["result_refs"] = refs = self.strong(h)
                obs["result_handle"] = h
                if refs > 1 and hold is not None:
                    self.c.TVMFFIObjectIncRef(h)
                    hold.append(h)
            self.release(res)
        obs["live_delta"] = None if live0 is None else cast(int, self.live()) - live0
        after = [self.strong(o) for o in objs]
        obs["refcounts"] = [[b, a] for b, a in zip(before, after)]
        self._restore(objs, before, after, extra=1)
        return obs

    def repeat(self, fn: probe_extra.Caller, raws: list[bytes], guarded: bool, obs: Msg) -> None:
        """Tell a cache from a leak: the same call again. A leak grows on every
        call; a cache (or a context stack) keeps its references once."""
        grew = [a > b for b, a in obs["refcounts"]]
        held: list[int] = []
        if obs.get("result_refs", 1) > 1:
            # Re-run the first call holding its result, so the repeat can see
            # whether the library still keeps the first object.
            obs.update(self.call(fn, raws, guarded, held))
        if not (obs.get("live_delta") or any(grew) or held):
            return
        again = self.call(fn, raws, guarded)
        obs["live_delta_repeat"] = again.get("live_delta")
        obs["refcounts_repeat"] = again["refcounts"]
        if any(a > b for b, a in again["refcounts"]):
            obs["refcounts_thread"] = probe_extra.thread_released(self, fn, raws, guarded)
        if held:
            h1 = held[0]
            kept1 = obs["result_refs"] - 1
            same = again.get("result_handle") == h1
            kept_now = self.strong(h1) - 1  # our hold
            obs["result_kept"] = kept1
            obs["result_leak"] = (
                kept_now > kept1 if same else kept_now > 0 and again.get("result_refs", 1) > 1
            )
            self.c.TVMFFIObjectDecRef(h1)

    def call_threads(self, fn: probe_extra.Caller, raws: list[bytes], n: int = 4) -> Msg:
        """The same call from n threads released together; results compared by
        the parent through their fingerprints."""
        raw = b"".join(raws)
        bufs = [
            (ctypes.c_char * max(len(raw), ANY)).from_buffer_copy(raw.ljust(ANY, b"\0"))
            for _ in range(n)
        ]
        results = [(ctypes.c_char * ANY)() for _ in range(n)]
        out: list[Any] = [None] * n  # one Msg per thread
        objs = self._objects(raws)
        for o in objs:  # n extra references: stray DecRefs from n threads free nothing
            for _ in range(n):
                self.c.TVMFFIObjectIncRef(o)
        before = [self.strong(o) for o in objs]

        def work(i: int) -> None:
            rc = fn(None, ctypes.addressof(bufs[i]), len(raws), ctypes.addressof(results[i]))
            ours()
            err = self.take_error()  # the raised error is thread-local: fetch it here
            out[i] = {"rc": rc}
            if err is not None:
                out[i]["error"] = err

        self.parallel(n, work)
        for i in range(n):
            res = bytes(results[i])
            if out[i]["rc"] == 0 and not self.result_problems(res, True):
                out[i]["fingerprint"] = self.fingerprint(res)
                if type_index_of(res) == kTVMFFIInt:
                    out[i]["int_value"] = payload_i64(res)
                self.release(res)
        after = [self.strong(o) for o in objs]
        self._restore(objs, before, after, extra=n)
        return {"calls": out, "refcounts": [[b, a] for b, a in zip(before, after)]}

    def parallel(self, n: int, job: Callable[[int], None]) -> None:
        """job(i) in n threads released together (kept for the worker's life)."""
        if self._crew is None or self._crew.size != n:
            self._crew = Crew(n)
        self._crew.run(job)

    @staticmethod
    def _objects(raws: list[bytes]) -> list[int]:
        return [payload_u64(r) for r in raws if type_index_of(r) >= kTVMFFIStaticObjectBegin]

    def _restore(self, objs: list[int], before: list[int], after: list[int], extra: int) -> None:
        """Undo a callee's stray releases, then drop our extra references."""
        for o, b, a in zip(objs, before, after):
            for _ in range(max(0, b - a)):
                self.c.TVMFFIObjectIncRef(o)
            for _ in range(extra):
                self.c.TVMFFIObjectDecRef(o)

    def call_getter(self, addr: int) -> Msg:
        fn = _SAFE_CALL(addr)
        result = (ctypes.c_char * ANY)()
        rc = fn(None, None, 0, ctypes.addressof(result))
        ours()
        res = bytes(result)
        obs: Msg = {"rc": rc, "error": self.take_error(), "result_type_index": type_index_of(res)}
        if rc == 0:
            s = self.string_of(res)
            obs["value_hex"] = None if s is None else s.hex()
            if not self.result_problems(res, True):
                self.release(res)
        return obs

    # -- one function --------------------------------------------------------------------
    def plan(
        self,
        name: str,
        getters: Collection[str],
        is_global: bool = False,
        use_metadata: bool = True,
    ) -> tuple[list[str], sigs.Sig | None, str | None]:
        """(steps, sig, note) for a function; deterministic so a resumed run
        after a crash computes the same steps. use_metadata=False after the
        metadata getter crashed or hung a worker: it is not called again."""
        steps: list[str] = []
        sig: sigs.Sig | None = None
        note: str | None = None
        if "metadata" in getters:
            steps.append("metadata")
        if "doc" in getters:
            steps.append("doc")
        steps.append("zero-args")
        if "metadata" in getters and use_metadata:
            addr = self.symbol(METADATA_PREFIX + name)
            # The getter runs again here in every (re)started worker; it is cheap.
            # The watchdog covers it: a getter that never returns is a hang.
            self.watch("metadata")
            try:
                got: Msg = self.call_getter(addr) if addr else {"rc": -1}
            finally:
                self.watch(None)
            if got.get("rc") == 0 and got.get("value_hex") is not None:
                sig = _parse(bytes.fromhex(got["value_hex"]))
        elif is_global and use_metadata:
            # A global registered with a type schema (GlobalDef().def) carries
            # it in the registry: the same typed checks as an export.
            sig = self.global_sig(name)
        if sig is None:
            note = "no usable metadata" if "metadata" in getters else "no metadata"
            if is_global:
                note = "a global function without metadata"
            # Untyped: object arguments find kept/dropped references and
            # written argument arrays; a search finds a signature with
            # tensors or scalars, which gets the typed tensor and kernel
            # probes; threads repeat the call found (or the zero-argument one).
            steps.extend(["objects:1", "objects:4"])
            steps.extend(probe_extra.variant_steps("objects", self.split))
            # (a signature with tensors adds the tensor and kernel steps:
            # probe_steps.followups)
            steps.extend(["objects:search", "threads"])
            return steps, sig, note
        n = len(sig.params)
        if n >= 2:
            steps.append("too-few")
        for i, p in enumerate(sig.params):
            if sigs.wrong_kind(p) is not None:
                steps.append(f"wrong-type:{i}")
        steps.append("valid")
        tensors = any(p["type"] in _TENSOR_TYPES for p in sig.params)
        if tensors:  # the kernel's layout first: the tensor variants take its ndim
            steps.append("kernel:layout")
            steps.extend(probe_extra.variant_steps("tensor", self.split))
            steps.extend(probe_extra.variant_steps("kernel", self.split))
        steps.extend(["threads", "kernel:count"] if tensors else ["threads"])  # count dies last
        return steps, sig, note

    def global_sig(self, name: str) -> sigs.Sig | None:
        owned: list[bytes] = []
        try:
            arg = self.string_any(name.encode())
            owned.append(arg)
            got = self.call_global("ffi.GetGlobalFuncMetadata", [arg])
            owned.append(got)
            # Read before the release below: a freed string's first bytes are
            # the allocator's (its layout differed from worker to worker, and
            # so did the plan of a global: typed or not).
            text = self.string_of(got)
        except CannotSynthesize:
            return None
        finally:
            for o in owned:
                self.release(o)
        return None if not text else _parse(text)

    def run_step(
        self,
        name: str,
        step: str,
        sig: sigs.Sig | None,
        getters: Collection[str],
        valid_ok: bool,
        is_global: bool = False,
        threads: int = 4,
    ) -> Msg:
        addr: int | probe_extra.Caller | None  # a getter's address, then the function's caller
        if step in ("metadata", "doc"):
            prefix = METADATA_PREFIX if step == "metadata" else DOC_PREFIX
            addr = self.symbol(prefix + name)
            if not addr:
                return {"skipped": f"{prefix}{name} cannot be resolved"}
            return self.call_getter(addr)
        if step in probe_gpu.STEPS:
            return self.gpu.run_step(self, name, step, sig, is_global)
        if self.gpu.poisoned:  # a dead CUDA context makes every later call meaningless
            return {"skipped": f"CUDA failed earlier in this process ({self.gpu.poisoned})"}
        addr, why = probe_extra.caller(self, name, is_global)
        if addr is None:
            return {"skipped": why}
        if sig is None and step.startswith(("tensor:", "kernel:", "threads")):
            # Without metadata: the signature the search found, if any.
            sig = probe_kernel.found_sig(self, name, addr, is_global)
            if sig is None and step != "threads":
                return {"skipped": "no metadata, and the signature search found none"}
        if step == "tensor:all" and sig is not None and not probe_kernel.tensor_params(sig):
            return {"skipped": "no tensor parameter"}
        if step.endswith(":all"):
            # Every tensor variant in one step: one message instead of one per
            # variant. A crash here makes the parent split it (variant_steps).
            sub = {
                s: self.run_step(name, s, sig, getters, valid_ok, is_global, threads)
                for s in probe_extra.sweep(step[: -len(":all")])
            }
            return {"sub": sub}
        base, _, variant = step.partition("/")
        guarded = variant != "readable"
        self.padded = variant == "padded"
        owned: list[bytes] = []
        try:
            if probe_steps.owns(base):
                return probe_steps.run_step(self, name, base, sig, addr, is_global)
            if base == "threads":
                if not valid_ok:
                    return {
                        "skipped": "the valid call did not succeed"
                        if sig is not None
                        else "the zero-argument call did not succeed"
                    }
                got = probe_steps.threads(self, name, sig, addr, threads, is_global)
                if got is not None:  # each thread with values of its own
                    return got
                raws = [self.make(p, owned) for p in sig.params] if sig is not None else []
                return self.call_threads(addr, raws, threads)
            extra: Msg = {}
            if base == "zero-args":
                raws = []
            elif base == "too-few":
                assert sig is not None  # planned only for a function with a signature
                raws = [self.make(p, owned) for p in sig.params[:-1]]
            elif base.startswith("wrong-type:"):
                assert sig is not None  # planned only for a function with a signature
                i = int(base.split(":")[1])
                kind = sigs.wrong_kind(sig.params[i])
                raws = [
                    self.make_wrong(kind, owned) if j == i else self.make(p, owned)
                    for j, p in enumerate(sig.params)
                ]
                extra = {"param": i, "param_type": sigs.type_str(sig.params[i]), "wrong_kind": kind}
            elif base == "valid":
                assert sig is not None  # planned only for a function with a signature
                raws = [self.make(p, owned) for p in sig.params]
            elif base.startswith("tensor:"):
                assert sig is not None  # planned only for a function with a signature
                self.variant = base.split(":", 1)[1]
                self.base_ndim = probe_kernel.base_ndim(self, name, addr, sig)
                raws = [self.make(p, owned) for p in sig.params]
            elif base.startswith(("objects:", "tensors:")):
                raws = probe_extra.object_args(self, base, owned)
            else:
                return {"skipped": f"unknown step {step}"}
            obs = self.call(addr, raws, guarded)
            obs.update(extra)
            if base == "valid" and obs["rc"] == 0 and not obs["result_problems"]:
                assert sig is not None  # the "valid" branch above needed it
                obs["return_ok"] = sigs.return_ok(sig.ret, obs["result_type_index"])
                obs["return_type"] = sigs.type_str(sig.ret)
            # A first call may fill a cache; only what grows again counts.
            self.repeat(addr, raws, guarded, obs)
            obs.pop("result_handle", None)
            return obs
        except CannotSynthesize as e:
            return {"skipped": str(e)}
        finally:
            self.variant, self.padded, self.base_ndim = "", False, 1
            for o in owned:
                self.release(o)

    def probe(self, req: Msg) -> None:
        name = req["name"]
        getters = set(req.get("getters", ()))
        self.timeout = float(req.get("timeout", self.timeout))
        is_global = bool(req.get("global"))
        threads = int(req.get("threads") or 4)
        self.split = set(req.get("split", ()))
        steps, sig, note = self.plan(name, getters, is_global, not req.get("no_metadata"))
        steps, gpu = probe_gpu.plan(self, steps, sig, req)
        only = req.get("only")
        if only:
            steps = list(only)
        skip = set(req.get("skip", ()))
        self.skipped_steps, self.ok_steps = skip, set(req.get("ok", ()))
        self.crashed_steps = set(req.get("crashed", ()))
        todo = [s for s in steps if s not in skip]
        for s in sorted(self.ok_steps) if not only else ():  # a signature found before a crash
            todo += [x for x in probe_steps.followups(s, self.split, is_global) if x not in skip]
        # Each message names the step that runs next ("next"), so no separate
        # "start" message is needed: it still reaches the pipe before that step
        # starts, and a crash leaves it as the last word (half the messages).
        self.emit(
            {
                "event": "plan",
                "steps": steps,
                "note": note,
                "params": None if sig is None else [sigs.type_str(p) for p in sig.params],
                "gpu": gpu,
                "next": todo[0] if todo else None,
                "done": not todo,
            }
        )
        valid_ok = bool(req.get("valid_ok", False))
        if sig is None:  # a call that succeeded before a crash restarted us
            done = req.get("ok", ())
            valid_ok = valid_ok or any(s == "zero-args" or s.startswith("objects:") for s in done)
        for i, step in enumerate(todo):
            self.watch(step)
            obs = self.run_step(name, step, sig, getters, valid_ok, is_global, threads)
            self.watch(None)
            if step == "valid" or (step == "zero-args" and sig is None):
                valid_ok = obs.get("rc") == 0 and not obs.get("result_problems")
                valid_ok = valid_ok and not obs.get("cuda_error")  # its kernel failed
            elif step == "objects:search" and obs.get("sub"):
                valid_ok = True
            if step == "zero-args":  # its error names the signature to search first
                self.zero_error = (name, obs.get("error"))
            for s in obs.get("sub") or () if not only else ():
                todo += [
                    x for x in probe_steps.followups(s, self.split, is_global) if x not in skip
                ]
            obs["event"] = "obs"
            obs["step"] = step
            obs["next"] = todo[i + 1] if i + 1 < len(todo) else None
            obs["done"] = i + 1 == len(todo)
            self.emit(obs)

    # -- watchdog -------------------------------------------------------------------
    def watch(self, step: str | None) -> None:
        """The step that runs now (None: none), for the watchdog or the timer."""
        self.step, self.step_started = step, time.monotonic()
        if self.alarm:
            signal.setitimer(signal.ITIMER_REAL, self.timeout if step is not None else 0.0)

    def watchdog(self, stop: threading.Event) -> None:
        while not stop.wait(0.05):
            step, started = self.step, self.step_started
            if (
                step is not None
                and started is not None
                and time.monotonic() - started > self.timeout
            ):
                self.emit({"event": "hang", "step": step, "timeout": self.timeout})
                os.kill(os.getpid(), signal.SIGKILL)


_TENSOR_TYPES = ("ffi.Tensor", "DLTensor*")


def _parse(raw: bytes) -> sigs.Sig | None:
    try:
        return sigs.parse_metadata(raw.decode("utf-8"))[1]
    except (sigs.SchemaError, UnicodeDecodeError):
        return None
