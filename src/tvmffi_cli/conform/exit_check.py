"""The `exit-clean` check (parent side): does a process that loaded the
library exit cleanly?

The probe workers, which loaded the library (and, without a zygote, called its
functions; a zygote's probe children end without a teardown), are
asked to exit at the end of the run and their exit statuses are judged
(`from_workers`); when none ended that way (every one was killed after a
crash), a fresh worker loads the library (conform/exit_task.py) and exits
(`run`). A crash or a hang at exit (static destructors, atexit handlers, the
release of registered globals) fails the check. Loading problems are
library-load's business: then this check is skipped.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from ..sandbox import process as _sandbox
from .messages import ExitRequest
from .results import FAIL, PASS, SKIP, Result

sandbox: Any = _sandbox  # (the sandbox module is not annotated yet)


def from_workers(exits: list[int | str], timeout: float) -> Result | None:
    """The verdict from the exit statuses of the probe workers asked to exit
    (None when there is none)."""
    if not exits:
        return None
    if "hang" in exits:
        return Result(
            "exit-clean",
            None,
            FAIL,
            f"the process hangs at exit: no exit within {timeout:g} s of the end "
            "of its work (destructors or atexit handlers)",
        )
    bad = [rc for rc in exits if rc != 0]
    if bad:
        return _died(int(bad[0]))
    return Result(
        "exit-clean",
        None,
        PASS,
        "the worker processes that loaded the library exited with status 0",
    )


def _died(rc: int) -> Result:
    sig = sandbox.signal_name(rc)
    what = f"is killed by {sig}" if sig else f"exits with status {rc}"
    return Result(
        "exit-clean",
        None,
        FAIL,
        f"the process {what} at exit, after the library loaded and every call "
        "returned (a crash in a destructor or atexit handler)",
    )


def blame_runtime(verdict: Result, timeout: float, runtime: str | None) -> Result:
    """A failure under another runtime (--runtime) may be that runtime's own
    teardown: when a process that loads only the runtime fails to exit the
    same way, the library is not to blame and the check is skipped."""
    if verdict.status != FAIL or runtime is None:
        return verdict
    control = run(None, timeout, runtime)
    if control.status == FAIL:
        return Result(
            "exit-clean",
            None,
            SKIP,
            f"the runtime {runtime} alone does not exit cleanly either "
            f"({control.message}); the library cannot be judged with it",
        )
    return verdict


def run(path: str | None, timeout: float, runtime: str | None = None) -> Result:
    from ..binary.deps import load_read_paths

    # The library (and a fetched runtime) may live outside every folder a
    # worker may read by default, as for the probe workers.
    reads = [*(load_read_paths(path) if path else ()), *([runtime] if runtime else [])]
    w = sandbox.Worker(runtime=runtime, stderr=subprocess.DEVNULL, read_paths=reads)
    try:
        w.start()
        try:
            w.call("conform.exit_task", ExitRequest(path).to_json(), timeout=timeout + 30)
        except sandbox.ChildCrashed as e:
            return Result(
                "exit-clean",
                None,
                SKIP,
                f"loading the library killed the process ({e.signal or e.returncode}); "
                "see library-load",
            )
        except sandbox.ChildTimeout:
            return Result("exit-clean", None, SKIP, "loading the library hangs; see library-load")
        except Exception as e:
            return Result("exit-clean", None, SKIP, f"the library did not load ({e})")
        proc = w.proc
        assert proc is not None
        # End of requests: closing the request channel makes the worker return
        # and exit (its stdin is /dev/null; closing that says nothing).
        chan = w.chan
        if chan is not None and chan.out_fd >= 0:
            try:
                os.close(chan.out_fd)
            except OSError:
                pass
            chan.out_fd = -1
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            w.kill()
            return Result(
                "exit-clean",
                None,
                FAIL,
                f"the process hangs at exit: no exit within {timeout:g} s of "
                "the end of its work (destructors or atexit handlers)",
            )
    finally:
        w.kill()
    if rc == 0:
        return Result("exit-clean", None, PASS, "loaded, released and exited with status 0")
    return _died(rc)
