"""Probe one function with one worker (parent side of conform/probe_task.py).

Each function's probes start from the state the library's load left: a
zygote forks a probe child per request, and the child exits after it (see
workers.py). When a call crashes the child, the function resumes in a new
child after that step; the crash is then pinned on its call:

- a crash after other calls of the same function ran in that child is run
  again alone: when it returns alone, the finding says the crash needs the
  earlier calls (state the function keeps), instead of blaming the call;
- a SIGSEGV of a call whose arguments end at guard pages is run again with
  readable memory after them (`/readable`, `/padded`): when that returns,
  the fault was an access past the arguments or the tensor data.

A call that hangs costs one timeout: the function's other calls then share
HANG_BUDGET seconds, and what does not fit is skipped with the reason.
"""

from __future__ import annotations

import time
from typing import Collection

from . import checks_crash, checks_gpu
from .checks_crash import AFTER_CALLS
from .reproduce import DEFAULT_THREADS
from .workers import Event, Worker, WorkerDied

_SEGV = ("SIGSEGV", "SIGBUS")
#: Seconds left to the rest of a function's probe calls after one hung.
HANG_BUDGET = 1.0
#: Below this many seconds of budget no further call is started.
_MIN_CALL = 0.1
#: Getter steps: called in every child while it plans, never "alone".
_GETTERS = ("metadata", "doc")


class Cancelled(Exception):
    """The run was interrupted (cancel()): this prober starts nothing more."""


class Prober:
    """Probe functions with one worker, restarting it after crashes."""

    def __init__(
        self, path: str, timeout: float, runtime: str | None = None, threads: int | None = None
    ) -> None:
        self.path = path
        self.timeout = timeout
        self.runtime = runtime
        self.threads = threads
        self.worker: Worker | None = None
        #: Why functions shared a process in this prober (None: they never did).
        self.shared: str | None = None
        #: The steps the last request completed, in order.
        self.ran: list[str] = []
        self.gpu = False  # ask for GPU steps (checks_gpu.looks_cuda)
        self.cancelled = False

    def cancel(self) -> None:
        """From the main thread on Ctrl-C or SIGTERM: stop probing. The
        worker's tree is killed now; the thread probing with it sees it die,
        starts no other (Cancelled) and closes it (its scratch dir goes)."""
        self.cancelled = True
        w = self.worker
        if w is not None:
            w.abort()

    def ensure(self) -> None:
        """A worker ready to probe: a zygote's probe child, or a worker
        serving itself (after two zygotes could not fork one)."""
        for zygote in (True, True, False):
            if self.cancelled:
                raise Cancelled()
            if self.worker is None or not self.worker.alive():
                self.worker = Worker(self.path, self.timeout, self.runtime, zygote)
                self.worker.start()
                if self.cancelled:  # (cancel() may have missed the new one)
                    raise Cancelled()
                ev = self.worker.load()
                if not ev.get("ok"):
                    raise RuntimeError(
                        f"the library no longer loads in a fresh worker: {ev.get('error')}"
                    )
            why = self.worker.isolation()
            if why is not None:
                self.shared = self.shared or why
            if not self.worker.needs_child():
                return
            try:
                self.worker.fork_child()
                return
            except WorkerDied:
                self.worker = None  # killed: the next one below

    def close(self, exits: list[int | str] | None = None) -> None:
        """Stop the worker; its exit status goes to `exits` (for exit-clean)."""
        if self.worker is not None:
            status = self.worker.stop(self.timeout if exits is not None else None)
            if exits is not None and status is not None:
                exits.append(status)

    def _run(
        self, f: checks_crash.FunctionFacts, req: Event, budget: float | None = None
    ) -> WorkerDied | None:
        """Send one probe request; fold events into f. Returns None when the
        worker finished, or the step that killed it (with a WorkerDied)."""
        self.ensure()
        w = self.worker
        assert w is not None  # ensure() started one or raised
        req = dict(req, once=w.zygote)
        if budget is not None:
            req["timeout"] = budget
        w.send(req)
        self.ran = []
        current = "metadata" if "metadata" in f.getters and not req.get("no_metadata") else None
        since = time.monotonic()  # when `current` began, at the latest
        try:
            for ev in w.events(self.timeout + 30):
                kind = ev.get("event")
                if kind == "hang":
                    current = ev.get("step", current)
                    raise w.end_hung(current)
                if kind not in ("plan", "obs"):
                    continue
                # The step the worker runs next: no separate "start" message
                # (probe_task.py), this one reached us before that step began.
                current = ev.pop("next", None)
                since = time.monotonic()
                done = ev.pop("done", False)
                if kind == "plan":
                    if f.plan is None:
                        f.plan = ev["steps"]
                        f.note = ev.get("note")
                        f.params = ev.get("params")
                        f.gpu = ev.get("gpu")
                else:
                    step = ev.pop("step")
                    ev.pop("event", None)
                    sub = ev.pop("sub", None)
                    if sub is not None:  # a variant sweep: its calls one by one
                        f.obs.update(sub)
                        ev = {"skipped": "a sweep: its variants are recorded one by one"}
                    f.obs[step] = ev
                    self.ran.append(step)
                if done:
                    died = w.finish_child()
                    if died is not None and not died.zygote_lives:
                        self.worker = None
                    return died
        except WorkerDied as e:
            if not e.zygote_lives:
                self.worker = None
            e.step = e.step or current
            limit = req.get("timeout", self.timeout)
            if e.signal_name == "SIGALRM" and time.monotonic() - since >= limit / 2:
                # The probe child's step timer (probe_task.Prober.watch) ended it.
                e.hang = True
            return e
        return None

    def probe(
        self, name: str, getters: Collection[str], is_global: bool = False
    ) -> checks_crash.FunctionFacts:
        f = checks_crash.FunctionFacts(name, getters)
        f.timeout = self.timeout
        f.is_global = is_global
        base = {
            "op": "probe",
            "name": name,
            "getters": sorted(getters),
            "timeout": self.timeout,
            "global": is_global,
            "threads": self.threads or DEFAULT_THREADS,
            "gpu": self.gpu,
        }
        skip: set[str] = set()
        split: set[str] = set()  # variant sweeps that crashed: one step per variant
        no_meta = False
        hung: str | None = None  # the first call that hung
        deadline: float | None = None  # after it: the end of the function's budget
        try:
            for _attempt in range(64):
                budget = self._budget(deadline)
                if budget is not None and budget < _MIN_CALL:
                    break
                valid_ok = _valid_ok(f)
                ok = sorted(s for s, ob in f.obs.items() if ob.get("rc") == 0)
                req = dict(base, skip=sorted(skip), valid_ok=valid_ok, no_metadata=no_meta, ok=ok)
                req["split"], req["crashed"] = sorted(split), sorted(f.crashes)
                died = self._run(f, req, budget)
                if died is None:
                    break
                if died.after_done:
                    f.crashes[AFTER_CALLS] = _record(died, self.ran)
                    break
                step = died.step or "zero-args"
                if step.endswith(":all"):
                    split.add(step)
                    skip |= set(f.obs)
                    continue
                if died.hang and hung is not None:
                    # Out of the budget left after the first hang: not a finding.
                    f.obs[step] = {"skipped": _after_hang(hung, f.timeout)}
                    break
                f.crashes[step] = _record(died, self.ran)
                skip |= set(f.obs) | {step}
                if step == "metadata" and f.plan is None:
                    no_meta = True
                if died.hang:
                    hung, deadline = step, time.monotonic() + HANG_BUDGET
            if hung is not None:
                for step in f.plan or ():
                    if step not in f.obs and step not in f.crashes:
                        f.obs[step] = {"skipped": _after_hang(hung, f.timeout)}
            self._pin(f, base, no_meta, deadline)
        except RuntimeError as e:
            f.tool_error = str(e)
        if checks_gpu.poisoned(f) and self.worker is not None:
            # A dead CUDA context is not the next function's (a worker that
            # serves itself, as when the library initialized CUDA at load).
            self.worker.recycle_child()
        return f

    def _pin(
        self, f: checks_crash.FunctionFacts, base: Event, no_meta: bool, deadline: float | None
    ) -> None:
        """Run crashed calls again to pin each crash on its cause."""
        valid_ok = _valid_ok(f)
        # (the signature the search found, for a function without metadata:
        # a re-run in a new probe child reads it back from these steps)
        found = [s for s in f.obs if s.startswith("objects:search:")]
        for step, c in list(f.crashes.items()):
            if c["hang"] or step in (*_GETTERS, AFTER_CALLS) or "/" in step:
                continue
            budget = self._budget(deadline)
            if budget is not None and budget < _MIN_CALL:
                return
            if c.get("after"):
                # Other calls of this function ran first in that process.
                again = dict(base, only=[step + "/alone"], valid_ok=valid_ok, ok=found)
                died = self._run(f, dict(again, no_metadata=no_meta), budget)
                if died is not None or "skipped" not in (f.obs.get(step + "/alone") or {}):
                    c["alone"] = died is not None  # it failed alone too
                    if not c["alone"]:
                        continue  # returned alone: not a fault of this call's arguments
            if step in ("zero-args", "too-few") and c.get("fault"):
                c["oob"] = c["fault"] == "args-guard"  # the fault address says
            elif step in ("zero-args", "too-few") and c["signal"] in _SEGV:
                # Same call, args followed by readable memory: if that one
                # survives, the fault was the read past num_args.
                rerun = step + "/readable"
                died = self._run(
                    f, dict(base, only=[rerun], valid_ok=False, no_metadata=no_meta), budget
                )
                c["oob"] = died is None and rerun in f.obs
            elif _tensor_step(step) and c["signal"] in _SEGV:
                # Same call, tensor data in ordinary memory: if that one
                # survives, the fault was an access past the tensor's data.
                rerun = step + "/padded"
                died = self._run(f, dict(base, only=[rerun], valid_ok=False, ok=found), budget)
                c["tensor_oob"] = died is None and rerun in f.obs

    def _budget(self, deadline: float | None) -> float | None:
        """Seconds a call may take now: None (the timeout) before any hang."""
        if deadline is None:
            return None
        return min(self.timeout, deadline - time.monotonic())


def _valid_ok(f: checks_crash.FunctionFacts) -> bool:
    """Did the call the threads step repeats succeed: the valid call, or
    without metadata the zero-argument one (as probe_task.py decides)?"""
    step = "valid" if f.params is not None else "zero-args"
    o = f.obs.get(step) or {}
    return o.get("rc") == 0 and not o.get("result_problems")


def _record(died: WorkerDied, ran: list[str]) -> checks_crash.Obs:
    """A crash record: how the process died, and the calls of the same
    function that ran before in that process."""
    c: checks_crash.Obs = {"signal": died.signal_name, "hang": died.hang}
    if died.detail:
        c["output"] = died.detail
    if died.fault:
        c["fault"] = died.fault
    before = [s for s in ran if s not in _GETTERS]
    if before:
        c["after"] = before
    return c


def _after_hang(step: str, timeout: float | None) -> str:
    return (
        f"not run: {step} did not return within {timeout or 0:g} s, and the function's "
        f"other probe calls share {HANG_BUDGET:g} s after a hang"
    )


def _tensor_step(step: str) -> bool:
    """Steps whose tensors sit at guard pages (a CUDA tensor's data is the
    guard page itself: a fault there is not an access past the data)."""
    if step.endswith(":cuda"):
        return False
    return step == "valid" or step.startswith(("tensor:", "tensors:"))
