"""conform's probe workers (parent side): a sandbox worker serving
conform/probe_serve.py's event stream, as a zygote where it may be one.

A worker loads the library once. Where it may (sandbox/zygote.py), it then
forks a probe child per request: the child serves one function's probes (or
what is left of them after a crash) and exits, and the next function starts
in a new child, from the state the load left and nothing a probe did since.
No two probe children run at once: the next one is forked ahead and waits,
running nothing of the library, for its order, which the parent sends only
after the supervisor's record of the last one's end; so threads a function
started die before another function runs. Otherwise (threads at load, no supervisor,
TVMFFI_CONFORM_ZYGOTE=0) the worker serves the probes itself, one function
after another, and is replaced after a crash (`isolation` says which).
"""

from __future__ import annotations

import os
import subprocess
import threading
from typing import Any, Dict, Iterator

from .. import errors, text
from ..sandbox import process as sandbox
from ..sandbox import zygote
from ..sandbox.threads import leave_interrupts_to_main

#: One event of the probe worker (a JSON object; see conform/probe_task.py).
Event = Dict[str, Any]
#: Set to 0: no zygote, every worker serves its probes itself.
ZYGOTE_ENV = "TVMFFI_CONFORM_ZYGOTE"


class WorkerDied(Exception):
    def __init__(
        self, signal_name: str | None, hang: bool = False, step: str | None = None, detail: str = ""
    ) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.hang = hang
        self.step = step
        self.detail = detail
        self.fault: str | None = None  # "args-guard" | "elsewhere" (probe_memory.report_faults)
        #: Only the zygote's probe child died: the worker forks the next one.
        self.zygote_lives = False
        #: The probe child died after its last answer (a thread the library
        #: started, while the child was exiting): no step of it was cut short.
        self.after_done = False


class Worker:
    """One probe process: sandbox.Worker serving conform/probe_task.py's event stream
    (a request line in, event lines out; the library's own output never
    reaches the event pipe)."""

    def __init__(
        self, path: str, timeout: float, runtime: str | None = None, zygote: bool = True
    ) -> None:
        self.path = path
        self.timeout = timeout
        self.want_zygote = zygote and os.environ.get(ZYGOTE_ENV, "1") != "0"
        self.loaded: Event | None = None
        #: The worker loaded the library and forks probe children.
        self.zygote = False
        #: Probe children forked (the first included) and workers' loads, for tests.
        self.children = 0
        self._starting: threading.Event | None = None  # set once start_in_background ended
        self._start_error: BaseException | None = None
        from ..binary.deps import load_read_paths
        from ..ffi.cuda import driver_read_paths

        self._w = sandbox.Worker(
            serve="conform.probe_serve",
            stderr=subprocess.DEVNULL,
            runtime=runtime,
            # the runtime may live outside every default-readable folder (a
            # fetched release in the user's cache)
            # and a CUDA driver named by TVMFFI_CUDA_DRIVER (tests: the stand-in)
            read_paths=[
                *load_read_paths(path),
                *([runtime] if runtime else []),
                *driver_read_paths(),
            ],
            orders=True,
        )

    def alive(self) -> bool:
        return self._w.alive()

    def start(self) -> None:
        self._w.start()
        req = {"op": "load", "path": self.path, "timeout": self.timeout}
        self.send(dict(req, zygote=self.want_zygote))

    def start_in_background(self) -> None:
        """start() on a thread of its own: the sandbox set-up waits for the
        worker's greeting, and this process has its static checks to run
        meanwhile. load() (or kill()) waits for it; load() raises what it raised."""

        done = threading.Event()

        def go() -> None:
            leave_interrupts_to_main()
            try:
                self.start()
            except BaseException as e:  # re-raised by load()
                self._start_error = e
            finally:
                done.set()

        # Waited for on an Event, not Thread.join: a join interrupted by
        # Ctrl-C marks the thread ended while it still runs (CPython 3.11),
        # and kill() would then miss the worker it starts.
        self._starting = done
        threading.Thread(target=go, daemon=True).start()

    def _started(self) -> None:
        if self._starting is not None:
            self._starting.wait()
            self._starting = None
        if self._start_error is not None:
            e, self._start_error = self._start_error, None
            raise e

    def send(self, obj: Event) -> None:
        try:
            self._w.send(obj)
        except sandbox.ChildCrashed:
            pass  # the worker died; reading its events reports how

    def _read(self, idle: float) -> Any:
        if self.zygote:
            return zygote.recv(self._w, idle)
        return self._w.read_line(timeout=idle)

    def events(self, idle: float) -> Iterator[Event]:
        """Yield events until the worker (or its probe child) dies (raises WorkerDied)."""
        while True:
            try:
                yield self._read(idle)
            except sandbox.ChildTimeout:
                # The in-worker watchdog should have fired; a stuck interpreter
                # (e.g. a callee holding the GIL) was killed from here.
                raise WorkerDied("SIGKILL", hang=True) from None
            except sandbox.ChannelTampered:
                # Forged or garbled messages: whatever step was running failed.
                self._w.kill()
                raise WorkerDied("tampered channel") from None
            except sandbox.ChildCrashed as e:
                # (imported here: a worker starts before conform loads its checks)
                from .checks_crash import fault_of, library_output

                rc = e.returncode
                name = e.signal or (None if rc is None else f"exit status {rc}")
                died = WorkerDied(name, detail=library_output(e.stderr))
                died.fault = fault_of(e.stderr)
                died.zygote_lives = e.probe_child and self._w.alive()
                raise died from None

    def load(self) -> Event:
        """Wait for the load answer: the event dict (ok or not). A zygote
        then waits for fork_child()."""
        self._started()
        for ev in self.events(self.timeout + 30):
            if ev.get("event") == "loaded":
                self.loaded = ev
                self.zygote = bool(ev.get("ok") and ev.get("zygote"))
                return ev
            if ev.get("event") == "hang":
                self.kill()
                raise WorkerDied("SIGKILL", hang=True, step="load")
        raise AssertionError("unreachable: events() ends only by raising")

    def needs_child(self) -> bool:
        """A living zygote whose probe child is gone."""
        return self.zygote and self._w.child is None and self._w.alive()

    def fork_child(self) -> None:
        """A new probe child; a zygote that cannot give one is killed (the
        caller starts a new worker)."""
        try:
            zygote.spawn(self._w)
        except zygote.ZygoteLost:
            self.kill()
            raise WorkerDied(None, detail="the zygote could not fork a probe child") from None
        self.children += 1

    def isolation(self) -> str | None:
        """Why functions probed by this worker share a process (None: each
        starts in a new probe child)."""
        if self.zygote:
            return None
        if not self.want_zygote:
            return f"{ZYGOTE_ENV}=0"
        ev = self.loaded or {}
        return str(ev.get("zygote_refused") or "the worker cannot fork probe children")

    def finish_child(self) -> WorkerDied | None:
        """After the last event of a request a zygote's probe child served
        (it then exits by itself): wait for the supervisor's record of its
        end, so that no two probe children run at once. A child that did not
        exit with status 0 died after its last answer: that death is
        returned. One that does not end is killed with its zygote."""
        w = self._w
        child = w.child
        if not self.zygote or child is None:
            return None
        rc = zygote.end_child(w, zygote.END_GRACE)
        if rc is None:
            self.kill()
            died = WorkerDied(None, detail="the probe child did not exit after its last answer")
            died.after_done = True
            return died
        if w.relay is not None:
            # Its output is all in the pipe: in the tail before the next child's mark.
            w.relay.settle()
        if rc == 0:
            return None
        died = WorkerDied(sandbox.signal_name(rc) or f"exit status {rc}")
        if w.relay is not None:
            from .checks_crash import library_output

            died.detail = library_output(
                text.terminal(text.from_bytes(w.relay.since(child.output_mark)))
            )
        died.zygote_lives = self.alive()
        died.after_done = True
        return died

    def end_hung(self, step: str | None) -> WorkerDied:
        """After a "hang" event: the watchdog ends its process. A probe child
        ends alone and the zygote lives on; anything else is killed whole."""
        died = WorkerDied("SIGKILL", hang=True, step=step)
        if self.zygote and self._w.child is not None and zygote.end_child(self._w) is not None:
            died.zygote_lives = self._w.alive()
            return died
        self.kill()
        return died

    def recycle_child(self) -> None:
        """End the probe child (its CUDA context died: a sticky error); the
        zygote forks a fresh one for the next function. A worker serving
        itself is ended whole (the prober starts another)."""
        if self.zygote and self._w.child is not None:
            self.send({"op": "exit"})
            if zygote.end_child(self._w, 2.0) is None:
                self.kill()
        elif not self.zygote:
            self.kill()

    def abort(self) -> None:
        """From another thread (an interrupt): kill the worker's tree; the
        thread probing with it sees it die (process.Worker.abort)."""
        self._w.abort()

    def kill(self) -> None:
        if self._starting is not None:
            self._starting.wait()
            self._starting = None
        self._w.kill()

    def stop(self, wait: float | None = None) -> int | str | None:
        """Ask the worker to exit. With `wait` seconds, return how it ended:
        its exit status, "hang" (killed after `wait`), or None (already dead).
        A zygote's probe child exits first: its status counts when not 0."""
        status: int | str | None = None
        child: int | str | None = None
        proc = self._w.proc
        alive = self._w.alive()
        if alive and self._w.child is not None:
            self.send({"op": "exit"})
            child = zygote.end_child(self._w, wait if wait is not None else 2.0)
            if child is None:
                self._w.kill()
                return "hang" if wait is not None else None
        if self.zygote and self._w.order_w is not None:  # no more orders: the zygote exits
            os.close(self._w.order_w)
            self._w.order_w = None
        elif alive:
            self.send({"op": "exit"})
        # (the worker may be gone already: wait() still says how it ended)
        if alive and wait is not None and proc is not None:
            try:
                status = proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                self._w.kill()
                status = "hang"
        self._w.close()
        return child if child not in (None, 0) else status


class Spares:
    """Workers started and loaded in a background thread; take() waits for
    them and returns those whose load succeeded (a failed one is killed: its
    prober starts a fresh worker, which reports the failure properly)."""

    def __init__(self, path: str, timeout: float, runtime: str | None, n: int) -> None:
        self._args = (path, timeout, runtime, n)
        self._workers: list[Worker] = []
        # An Event, not Thread.join: a join interrupted by Ctrl-C marks the
        # thread ended while it still starts workers (CPython 3.11).
        self._done = threading.Event()
        self._done.set()  # (until start())

    def start(self) -> None:
        """Start them (called once this object is where the caller's cleanup
        finds it: a Ctrl-C inside Thread.start() still leaves the thread running)."""
        if self._args[3] > 0:
            self._done.clear()
            threading.Thread(target=self._start, daemon=True).start()

    def _start(self) -> None:
        try:
            self._start_all(*self._args)
        finally:
            self._done.set()

    def _start_all(self, path: str, timeout: float, runtime: str | None, n: int) -> None:
        leave_interrupts_to_main()
        for _ in range(n):
            w = Worker(path, timeout, runtime)
            try:
                w.start()
                if w.load().get("ok"):
                    self._workers.append(w)
                    continue
            except (WorkerDied, OSError, errors.TvmffiError):
                pass
            w.kill()

    def take(self) -> list[Worker]:
        self._done.wait()
        return self._workers
