"""How a worker failed, as the exceptions sandbox/process.py raises: all
CheckFailed (exit 1) but WorkerError (a tvmffi bug, exit 3) and
SandboxUnavailable (--require-sandbox on an incomplete sandbox, exit 2)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from .. import errors
from ..errors import TvmffiError
from .policy import format_size

if TYPE_CHECKING:
    from .kernel import Applied


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
        tree: bool = False,
    ) -> None:
        self.limit = limit
        self.peak_kb = peak_kb
        #: The worker's whole tree went over (the supervisor's watch or the
        #: cgroup killed it), not one process's peak RSS.
        self.tree = tree
        what = "the worker's processes held" if tree else "peak RSS"
        peak = f", {what} {peak_kb // 1024} MiB" if peak_kb else ""
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


def data_peak(pid: int) -> int | None:
    """Peak private data (bytes) of process `pid`, what RLIMIT_DATA bounds:
    the kernel keeps no peak of it, so VmPeak less what is not data now
    (VmSize - VmData: code, libraries, stacks, shared and reserved
    mappings). None when it is gone or unreadable."""
    vm: dict[bytes, int] = {}
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f.read(1 << 16).splitlines():
                key, _, rest = line.partition(b":")
                if key in (b"VmPeak", b"VmSize", b"VmData"):
                    vm[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    if len(vm) != 3:
        return None
    return max(vm[b"VmData"], vm[b"VmPeak"] - (vm[b"VmSize"] - vm[b"VmData"]))


def require_message(info: Applied) -> str:
    """What --require-sandbox reports when the sandbox is not complete."""
    if not info.enabled:
        return "--require-sandbox: the sandbox is off (--no-sandbox)"
    why = f" ({'; '.join(info.notes)})" if info.notes else ""
    return (
        f"--require-sandbox: this system does not give the worker {', '.join(info.missing)}{why}; "
        "no library code was run (security.md, in tvmffi_cli/docs/, says what a container needs)"
    )
