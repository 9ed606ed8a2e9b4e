"""Loading a library on official releases' runtimes, side by side.

`load_release(path, release, fetch, timeout)` is one load in a fresh
sandboxed worker on that release's runtime, fetched when asked
(ffi/fetch.py): a ReleaseLoad. A worker that tried one library is spent (the
library registered things in it, or killed it), so diff's OLD is not loaded
in the worker NEW failed in; a zygote per release (sandbox/zygote.py) would
save only the worker's start, ~0.06 s of a load that takes 0.1 s (a small
library) to 1.2 s (one that aborts), so each load has its own worker. `run_all` runs many, as many at a
time as there are CPUs, for ranges.py (verify, cover).

A sandboxed worker is a fork of tvmffi's process when that process runs no
other thread, else a new interpreter (sandbox/spawn.py), which costs ~0.4 s
of CPU more per load. Threads here would make every worker after the first
such an interpreter, so each load runs in a helper process instead: a fork
of this one (one thread), which forks its own worker, makes the load and
writes the ReleaseLoad as JSON on a pipe. Helpers run tvmffi's code only;
the library runs in their sandboxed workers as it always does, and the
parent reads nothing from a helper but that one typed answer. Where this
process runs other threads (the Python API inside a threaded program) a
fork is not safe: the loads then run one after the other, here.

    run_all(first, launch, done)
    # launch(job) -> (function, args) to run in a helper, a ReleaseLoad known
    #                already (no helper), or None: not yet (asked again when
    #                a running job ends);
    # done(job, load) -> the jobs it makes necessary (run next)
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypedDict, TypeVar

LOADS, FAILS, NOT_CHECKED = "loads", "fails", "not-checked"
#: cover() only: NEW lacks a runtime symbol of the release (not loaded: lazy
#: binding could hide that); a load not needed to judge the release.
NO_SYMBOLS, NOT_NEEDED = "lacks-symbols", "not-needed"
_STATUSES = (LOADS, FAILS, NOT_CHECKED, NO_SYMBOLS, NOT_NEEDED)


class ReleaseLoadJson(TypedDict):
    """ReleaseLoad.to_json(): a helper's answer, and inspect's --json
    "runtime_range_check" "loads"."""

    release: str
    status: str
    message: str


@dataclass(frozen=True)
class ReleaseLoad:
    """What loading the library on one release's runtime did."""

    release: str
    status: str  # LOADS | FAILS | NOT_CHECKED (its runtime is not at hand)
    message: str = ""  # why it failed / was not checked

    def to_json(self) -> ReleaseLoadJson:
        return {"release": self.release, "status": self.status, "message": self.message}

    @classmethod
    def from_json(cls, d: Any) -> ReleaseLoad:
        """A helper's answer read back (run_all); ValueError when it is not one."""
        if not isinstance(d, dict) or d.get("status") not in _STATUSES:
            raise ValueError("not a ReleaseLoad")
        return cls(str(d.get("release")), str(d["status"]), str(d.get("message", ""))[:600])


def load_on(path: str, runtime: str, timeout: float) -> tuple[bool, str]:
    """(loaded?, what went wrong) for one load in a fresh sandboxed worker."""
    from ..binary.deps import load_read_paths
    from ..ffi.hosts import library_message
    from ..sandbox import process as sandbox
    from ..sandbox.messages import MessageError
    from .messages import Loaded, LoadOnly, decode_load_reply, encode

    try:
        # Output kept for the message, not relayed: a range check loads the
        # library a dozen times and reports each failure itself.
        with sandbox.Worker(
            runtime=runtime,
            stderr="capture",
            read_paths=[*load_read_paths(path), runtime],
            cpu_limit=sandbox.cpu_seconds(timeout),
        ) as w:
            got = w.call("inspect.load_task", encode(LoadOnly(path, runtime)), timeout)
    except sandbox.ChildCrashed as e:
        said = library_message(e.stderr or "")
        how = e.signal or f"exit status {e.returncode}"
        return False, f"crashed the worker process ({how}) while loading" + (
            f": {said}" if said else ""
        )
    except sandbox.ChildTimeout:
        return False, f"did not finish loading within {timeout:g} s"
    try:
        reply = decode_load_reply(got)
    except MessageError as e:  # the worker is not trusted: a malformed reply is no load
        return False, f"the worker's reply is malformed ({e})"[:400]
    if isinstance(reply, Loaded):
        return True, ""
    return False, (reply.message or "the loader gave no reason")[:400]


#: How a release whose runtime could not be fetched is reported (ranges.py
#: stops fetching after the first).
FETCH_FAILED = "its runtime could not be fetched: "


def not_at_hand(release: str) -> str:
    return f"its runtime is not at hand (--verify-range fetches it: --runtime {release})"


def load_release(path: str, release: str, fetch: bool | str, timeout: float) -> ReleaseLoad:
    """Load `path` on `release`'s runtime. fetch: True fetches a runtime not
    at hand, False does not, a string says why it is not fetched."""
    from ..errors import InputError
    from ..ffi import fetch as fetcher

    rt = fetcher.cached_runtime(release)
    if rt is None and fetch is True:
        try:
            rt = fetcher.release_runtime(release)
        except InputError as e:
            return ReleaseLoad(release, NOT_CHECKED, FETCH_FAILED + str(e))
    if rt is None:
        why = fetch if isinstance(fetch, str) else not_at_hand(release)
        return ReleaseLoad(release, NOT_CHECKED, why)
    ok, said = load_on(path, str(rt), timeout)
    return ReleaseLoad(release, LOADS if ok else FAILS, said)


J = TypeVar("J", bound=Hashable)
Launch = tuple[Callable[..., ReleaseLoad], tuple[Any, ...]]
#: An answer is one ReleaseLoad; more than this is not one.
_ANSWER_LIMIT = 1 << 16
#: Names of tvmffi's own short-lived threads (a worker's output relay),
#: given a moment to end before a fork (sandbox/spawn.py names them so).
_OWN_THREADS = "tvmffi-"


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def may_fork() -> bool:
    """This process runs one thread (after giving a worker's relay thread
    that just ended a moment to go)."""
    deadline = time.monotonic() + 0.2
    while True:
        others = [t for t in threading.enumerate() if t is not threading.current_thread()]
        if not others and _tasks() == 1:
            return True
        if not all(t.name.startswith(_OWN_THREADS) for t in others):
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def _tasks() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 2  # cannot tell: assume another thread


def run_all(
    first: Iterable[J],
    launch: Callable[[J], Launch | ReleaseLoad | None],
    done: Callable[[J, ReleaseLoad], Iterable[J]],
    width: int | None = None,
) -> None:
    """Run every job (and those `done` adds), `width` (default: the CPUs) at
    a time in helpers; one at a time in this process when it may not fork."""
    todo: deque[J] = deque(first)
    n = cpus() if width is None else width
    # What each worker imports to load (its task, the loader), imported once
    # here so that every worker forked from us has it: a third of a small
    # library's load. Pure Python: no runtime is loaded in this process.
    from ..ffi import library  # noqa: F401
    from . import load_task  # noqa: F401

    if n <= 1 or not may_fork():
        while todo:
            job = todo.popleft()
            what = launch(job)
            if what is None:  # nothing runs here while it waits: a bug
                raise RuntimeError(f"job {job!r} waits on nothing")
            x = what if isinstance(what, ReleaseLoad) else _run(*what)
            todo.extend(done(job, x))
        return
    running: dict[int, _Helper[J]] = {}
    waiting: list[J] = []
    try:
        while todo or running:
            while todo and len(running) < n:
                job = todo.popleft()
                what = launch(job)
                if what is None:
                    waiting.append(job)
                elif isinstance(what, ReleaseLoad):
                    todo.extend(done(job, what))
                else:
                    h = _Helper(job, *what)
                    running[h.fd] = h
            if not running:
                if waiting:
                    raise RuntimeError(f"jobs {waiting!r} wait on nothing")
                continue
            ready, _, _ = select.select(list(running), [], [])
            for fd in ready:
                h = running[fd]
                if h.read():
                    continue
                del running[fd]
                todo.extend(done(h.job, h.result()))
                todo.extendleft(reversed(waiting))  # in their order, before the new ones
                waiting.clear()
    finally:
        for h in running.values():
            h.kill()


class _Helper(Generic[J]):
    """One load in a forked helper process, and its answer as it arrives."""

    def __init__(self, job: J, fn: Callable[..., ReleaseLoad], args: tuple[Any, ...]) -> None:
        self.job = job
        self.buf = bytearray()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()  # else the helper's copy of the buffer could be written twice
            except (OSError, ValueError, AttributeError):
                pass
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper: answer, then leave without running the parent's cleanups
            try:
                os.close(r)
                _answer(w, fn, args)
            finally:
                os._exit(0)
        os.close(w)
        self.pid, self.fd = pid, r

    def read(self) -> bool:
        """Read what arrived; False at the end of the answer."""
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if data and len(self.buf) <= _ANSWER_LIMIT:
            self.buf += data
            return True
        return bool(data)

    def result(self) -> ReleaseLoad:
        os.close(self.fd)
        os.waitpid(self.pid, 0)
        try:
            return ReleaseLoad.from_json(json.loads(self.buf.decode()))
        except ValueError:
            return ReleaseLoad(
                "", NOT_CHECKED, "the helper process that loads it ended without an answer"
            )

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass


def _run(fn: Callable[..., ReleaseLoad], args: tuple[Any, ...]) -> ReleaseLoad:
    """One job; a bug in it is a release not checked, said, not a lost run."""
    try:
        return fn(*args)
    except Exception as e:
        return ReleaseLoad("", NOT_CHECKED, f"the load failed in tvmffi ({type(e).__name__}: {e})")


def _answer(fd: int, fn: Callable[..., ReleaseLoad], args: tuple[Any, ...]) -> None:
    try:
        x = _run(fn, args)
    except BaseException:  # ^C: the parent has it too and ends the helpers
        x = ReleaseLoad("", NOT_CHECKED, "interrupted")
    view = memoryview(json.dumps(x.to_json()).encode())
    while view:
        view = view[os.write(fd, view) :]
