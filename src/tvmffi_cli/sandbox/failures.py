"""How a worker failed, as the exceptions sandbox/process.py raises: all
CheckFailed (exit 1) but WorkerError (a tvmffi bug, exit 3) and
SandboxUnavailable (--require-sandbox on an incomplete sandbox, exit 2)."""

from __future__ import annotations

import signal

from .. import errors
from ..errors import TvmffiError
from .policy import format_size


class ChildCrashed(errors.CheckFailed):
    """The child died: by a signal (signal = "SIGSEGV", ...) or by exiting."""

    def __init__(
        self,
        signal_name: str | None = None,
        returncode: int | None = None,
        stderr: str = "",
        message: str | None = None,
    ) -> None:
        self.signal = signal_name
        self.signame = signal_name
        self.returncode = returncode
        self.stderr = stderr
        #: True when the worker had replied and died afterwards (a thread the
        #: library started, a destructor at exit).
        self.after_reply = False
        #: True when a zygote's probe child died and the zygote lives on.
        self.probe_child = False
        what = signal_name or f"exit status {returncode}"
        super().__init__(message or f"the library crashed the worker process ({what})")


class MemoryLimitExceeded(ChildCrashed):
    """The worker ran out of its memory limit (died of it or raised MemoryError)."""

    def __init__(
        self,
        limit: int,
        peak_kb: int | None,
        signal_name: str | None = None,
        returncode: int | None = None,
        stderr: str = "",
    ) -> None:
        self.limit = limit
        self.peak_kb = peak_kb
        peak = f", peak RSS {peak_kb // 1024} MiB" if peak_kb else ""
        super().__init__(
            signal_name,
            returncode,
            stderr,
            f"memory limit exceeded (--memory-limit {format_size(limit)}{peak})",
        )


class ScratchLimitExceeded(ChildCrashed):
    """The worker wrote more than its scratch bound and was killed."""

    def __init__(self, limit: int, stderr: str = "") -> None:
        self.limit = limit
        super().__init__(
            "SIGKILL",
            -9,
            stderr,
            f"scratch limit exceeded (--scratch-limit {format_size(limit)}): "
            "the library wrote more than that to disk; the worker was killed",
        )


class SandboxUnavailable(errors.InputError):
    """--require-sandbox and the kernel did not give every confinement
    feature: what this system offers does not meet what was asked (exit 2)."""


class ChildTimeout(errors.CheckFailed):
    """The child did not answer within `seconds` and was killed."""

    def __init__(self, seconds: float, stderr: str = "") -> None:
        self.seconds = seconds
        self.stderr = stderr
        super().__init__(f"no answer within {seconds:g} s; the worker process was killed")


class ChannelTampered(errors.CheckFailed):
    """Bytes on the reply channel were not tvmffi's: the library wrote there."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the library tampered with tvmffi's channel to the worker ({detail}); "
            "no result from this worker is trusted"
        )


class WorkerError(TvmffiError):
    """A task failed in the child with an unexpected exception (a tvmffi bug)."""

    exit_code = errors.EXIT_INTERNAL

    def __init__(self, message: str, child_traceback: str | None = None) -> None:
        super().__init__(message)
        self.child_traceback = child_traceback


def signal_name(returncode: int | None) -> str | None:
    """ "SIGSEGV" for a returncode of -11; None for a normal exit."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def grandchild(pid: int) -> int | None:
    """The first child of the first child of `pid` (the supervisor's: the
    worker proper), read from /proc; None when there is none."""
    for _ in range(2):
        try:
            with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
                kids = f.read(4096).split()
        except OSError:
            return None
        if not kids:
            return None
        pid = int(kids[0])
    return pid


def vm_peak(pid: int) -> int | None:
    """Peak address space (VmPeak, bytes) of process `pid`: what RLIMIT_AS
    bounds. None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f.read(1 << 16).splitlines():
                if line.startswith(b"VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
