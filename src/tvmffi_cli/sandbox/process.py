"""Run library code in a child process (tvmffi_cli.sandbox.worker) and survive it.

    process.run_task("inspect.task", {"path": "lib.so"}, timeout=30)  # one shot
    with process.Worker(runtime=path, read_paths=[lib]) as w:         # persistent
        w.call("sandbox.selftest", {...}, timeout=5)

A child killed by a signal raises ChildCrashed (e.signal == "SIGSEGV"); one
over its memory limit raises MemoryLimitExceeded (a ChildCrashed); one that
does not answer in time is killed and raises ChildTimeout (e.seconds); bytes
on the channel that are not tvmffi's authentic frames raise ChannelTampered.
All are CheckFailed (exit 1). A persistent Worker restarts its child on the
next call after any of them. Errors a task raised come back as the same
tvmffi error class (InputError, FormatError, CheckFailed), anything else as
WorkerError.

The worker is confined (worker.py, kernel.py) unless the policy says
sandbox=False; what was applied is `Worker.sandbox` (and `last_sandbox()`).
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import errors, text
from ..errors import TvmffiError
from . import kernel, protocol
from .policy import DEFAULT_MEMORY_LIMIT as DEFAULT_MEMORY_LIMIT
from .policy import Policy as Policy
from .policy import format_size as format_size
from .policy import parse_size as parse_size
from .policy import policy as policy
from .policy import set_policy as set_policy
from .worker import BOOT

_STDERR_TAIL = 4096
_STATIC_TLS_RESERVE = 65536
_START_TIMEOUT = 60.0
#: Library output relayed to our stderr per worker; the rest is counted, not shown.
RELAY_CAP = 1 << 20
_last_sandbox: kernel.Applied | None = None


def last_sandbox() -> kernel.Applied | None:
    """What the most recently started worker reported it applied."""
    return _last_sandbox


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


def _child_env(
    runtime: str | os.PathLike[str] | None, env: dict[str, str] | None
) -> dict[str, str]:
    e = dict(os.environ)
    if env:
        e.update(env)
    if runtime is not None:
        e["TVMFFI_RUNTIME"] = str(Path(runtime).resolve())
    # Libraries (and runtimes) built with initial-exec TLS need static TLS
    # space when dlopen'ed after start-up; glibc reserves little by default and
    # fails with "cannot allocate memory in static TLS block". Reserve more.
    if "glibc.rtld.optional_static_tls" not in e.get("GLIBC_TUNABLES", ""):
        tun = f"glibc.rtld.optional_static_tls={_STATIC_TLS_RESERVE}"
        e["GLIBC_TUNABLES"] = f"{e['GLIBC_TUNABLES']}:{tun}" if e.get("GLIBC_TUNABLES") else tun
    return e


class _Relay(threading.Thread):
    """Copies the worker's stdout+stderr to ours, each line marked `[lib] `
    and sanitized, up to RELAY_CAP bytes; keeps the last bytes for reports."""

    def __init__(self, fd: int, mode: Any) -> None:
        super().__init__(daemon=True, name="tvmffi-lib-output")
        self.fd = fd
        self.mode = mode
        self.tail = bytearray()
        self.relayed = 0
        self.dropped = 0

    def _show(self, line: bytes) -> None:
        if self.mode == "relay":
            if self.relayed >= RELAY_CAP:
                self.dropped += len(line)
                return
            self.relayed += len(line)
            msg = text.terminal(text.from_bytes(line.rstrip(b"\n")), one_line=True)
            try:
                sys.stderr.write(f"[lib] {msg}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        elif hasattr(self.mode, "write"):
            try:
                self.mode.write(line)
            except (OSError, ValueError, TypeError):
                pass

    def run(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.tail += chunk
            del self.tail[:-_STDERR_TAIL]
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._show(line + b"\n")
            if len(pending) > 4096:
                self._show(pending)
                pending = b""
        if pending:
            self._show(pending)
        if self.dropped and self.mode == "relay":
            try:
                sys.stderr.write(
                    f"[lib] ({self.dropped} more bytes of library output "
                    f"not shown: cap {RELAY_CAP})\n"
                )
            except (OSError, ValueError):
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass


class Worker:
    """A confined child process serving task requests over an authenticated channel.

    runtime: libtvm_ffi.so for the child (default: ours, or TVMFFI_RUNTIME).
    read_paths: files and directories the library may read besides the system
    (the library itself, its inputs); write_paths: directories it may write
    besides its private scratch directory (staged outputs). stderr: "relay" (our stderr, marked),
    "capture" (kept only for crash reports), or a writable binary file object.
    sandbox / memory_limit: default from policy(). cpu_limit: seconds of CPU
    for the worker's life (RLIMIT_CPU), backing the wall-clock timeouts."""

    def __init__(
        self,
        runtime: Any = None,
        env: dict[str, str] | None = None,
        stderr: Any = None,
        python: str | None = None,
        serve: str | None = None,
        read_paths: Iterable[str | os.PathLike[str]] = (),
        write_paths: Iterable[str | os.PathLike[str]] = (),
        sandbox: bool | None = None,
        memory_limit: int | None = -1,
        cpu_limit: int | None = None,
    ) -> None:
        pol = policy()
        self.runtime = runtime
        self.env = env
        self.stderr_mode = pol.output if stderr is None else stderr
        if self.stderr_mode is subprocess.DEVNULL:
            self.stderr_mode = "capture"
        self.python = python or sys.executable
        self.serve = serve
        self.read_paths = [str(Path(p).resolve()) for p in read_paths]
        self.write_paths = [str(Path(p).resolve()) for p in write_paths]
        self.use_sandbox = pol.sandbox if sandbox is None else sandbox
        self.memory_limit = pol.memory_limit if memory_limit == -1 else memory_limit
        self.cpu_limit = cpu_limit
        self.proc: subprocess.Popen[bytes] | None = None
        self.chan: protocol.Endpoint | None = None
        self.sandbox: kernel.Applied | None = None
        self.worker_pid: int | None = None
        self._relay: _Relay | None = None
        self._lifeline_w: int | None = None
        self._status_r: int | None = None
        self._scratch: str | None = None
        self._lock = threading.Lock()
        self.starts = 0

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        global _last_sandbox
        if self.proc is not None and self.proc.poll() is None:
            return
        self._cleanup()
        key = protocol.new_key()
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        life_r, life_w = os.pipe2(os.O_CLOEXEC)
        stat_r, stat_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        self._scratch = tempfile.mkdtemp(prefix="tvmffi-scratch-")
        src = str(Path(__file__).resolve().parents[2])
        cmd = [
            self.python,
            "-I",
            "-c",
            BOOT,
            src,
            self.serve or "",
            str(req_r),
            str(rep_w),
            str(life_r),
            str(stat_w),
        ]
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=out_w,
                pass_fds=(req_r, rep_w, life_r, stat_w),
                cwd=self._scratch,
                env=_child_env(self.runtime, self.env),
                start_new_session=True,
            )
        finally:
            for fd in (req_r, rep_w, life_r, stat_w, out_w):
                os.close(fd)
        self._lifeline_w, self._status_r = life_w, stat_r
        self._relay = _Relay(out_r, self.stderr_mode)
        self._relay.start()
        self.chan = protocol.Endpoint(key, rep_r, req_w, parent=True)
        self.starts += 1
        ncpu = os.cpu_count() or 1
        try:
            protocol.write_all(req_w, key)
            self.chan.send(
                {
                    "sandbox": self.use_sandbox,
                    "memory_limit": self.memory_limit,
                    "cpu_limit": self.cpu_limit,
                    "scratch": self._scratch,
                    "read": self.read_paths,
                    "write": self.write_paths,
                    "ncpu": ncpu,
                }
            )
        except BrokenPipeError:
            raise self._death() from None
        hello = self._recv(_START_TIMEOUT)
        if not isinstance(hello, dict) or hello.get("hello") != 1:
            self._kill()
            raise ChannelTampered("the worker's first message is not its greeting")
        self.sandbox = kernel.Applied.from_json(hello.get("sandbox"))
        pid = hello.get("pid")
        self.worker_pid = pid if isinstance(pid, int) else None
        _last_sandbox = self.sandbox

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        p = self.proc
        if p is not None and p.poll() is None:
            if self.chan is not None:
                try:
                    os.close(self.chan.out_fd)  # end of requests: the worker exits
                except OSError:
                    pass
                self.chan.out_fd = -1
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._kill()
        self._cleanup()

    def kill(self) -> None:
        """Kill the child (and everything it started); the next request starts a new one."""
        self._kill()
        self._cleanup()

    def _kill(self) -> None:
        p = self.proc
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                p.kill()
            except ProcessLookupError:
                pass
        p.wait()
        self._close_lifeline()

    def _close_lifeline(self) -> None:
        # The supervisor kills the worker's PID namespace when this closes.
        if self._lifeline_w is not None:
            try:
                os.close(self._lifeline_w)
            except OSError:
                pass
            self._lifeline_w = None

    def _cleanup(self) -> None:
        if self.chan is not None:
            for fd in (self.chan.in_fd, self.chan.out_fd):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self.chan = None
        self._close_lifeline()
        if self._status_r is not None:
            try:
                os.close(self._status_r)
            except OSError:
                pass
            self._status_r = None
        if self._relay is not None:
            self._relay.join(timeout=1.0)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        self.proc = None

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self._kill()
        except Exception:
            pass

    # -- I/O -------------------------------------------------------------------
    def stderr_text(self, limit: int = _STDERR_TAIL) -> str:
        """The last `limit` bytes the child wrote to stdout/stderr."""
        r = self._relay
        if r is None:
            return ""
        return text.terminal(text.from_bytes(bytes(r.tail[-limit:])))

    def send(self, obj: Any) -> None:
        """Send one message to the child (starting it if needed)."""
        self.start()
        assert self.chan is not None
        try:
            self.chan.send(obj)
        except (BrokenPipeError, OSError):
            raise self._death() from None

    def _recv(self, timeout: float | None) -> Any:
        assert self.chan is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            return self.chan.recv(deadline)
        except protocol.ChannelTimeout:
            self._kill()
            tail = self.stderr_text()
            self._cleanup()
            raise ChildTimeout(timeout or 0.0, tail) from None
        except protocol.ChannelClosed:
            raise self._death() from None
        except protocol.ChannelError as e:
            self._kill()
            self._cleanup()
            raise ChannelTampered(str(e)) from None

    def read_line(self, timeout: float | None = None) -> Any:
        """The next message from the child; ChildCrashed when it died,
        ChildTimeout (after killing it) when `timeout` seconds pass."""
        if self.chan is None:
            raise self._death()
        return self._recv(timeout)

    def _fault_log(self) -> str:
        """The worker's Python stack at a crash (faulthandler), if it wrote one."""
        if self._scratch is None:
            return ""
        try:
            with open(os.path.join(self._scratch, "faulthandler.log"), "rb") as f:
                data = f.read(_STDERR_TAIL)
        except OSError:
            return ""
        return text.terminal(text.from_bytes(data))

    def _status(self) -> tuple[int | None, int | None]:
        """(wait status of the worker proper, its peak RSS in KiB) from the supervisor."""
        fd = self._status_r
        if fd is None:
            return None, None
        try:
            data = os.read(fd, 64)
        except OSError:
            return None, None
        parts = data.split()
        if len(parts) != 2:
            return None, None
        try:
            return int(parts[0]), int(parts[1])
        except ValueError:
            return None, None

    def _death(self) -> ChildCrashed:
        p = self.proc
        if p is None:
            return ChildCrashed(None, None, "")
        try:
            rc = p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._kill()
            rc = p.returncode
        _, peak_kb = self._status()
        if self._relay is not None:
            self._relay.join(timeout=1.0)
        tail = self.stderr_text() + self._fault_log()
        self._cleanup()
        sig = signal_name(rc)
        limit = self.memory_limit
        if limit and sig is not None and peak_kb is not None and peak_kb * 1024 >= limit // 2:
            return MemoryLimitExceeded(limit, peak_kb, sig, rc, tail)
        return ChildCrashed(sig, rc, tail)

    # -- requests --------------------------------------------------------------
    def call(self, task: str, request: dict[str, Any], timeout: float | None = None) -> Any:
        """Run tvmffi_cli.<task>.run(request) in the child and return its result."""
        with self._lock:
            self.send({"task": task, "request": request})
            reply = self.read_line(timeout)
        if not isinstance(reply, dict):
            raise WorkerError(f"task {task}: the worker's reply is not an object")
        if reply.get("ok"):
            return reply.get("result")
        err = reply.get("error") or {}
        if err.get("type") == "MemoryError" and self.memory_limit:
            self.kill()
            raise MemoryLimitExceeded(self.memory_limit, None)
        cls = getattr(errors, err.get("type", ""), None)
        if err.get("known") and isinstance(cls, type) and issubclass(cls, TvmffiError):
            e = cls(err.get("message", ""))
            e.exit_code = err.get("exit_code", e.exit_code)
            raise e
        if err.get("known"):
            e2 = TvmffiError(err.get("message", ""))
            e2.exit_code = err.get("exit_code", e2.exit_code)
            raise e2
        raise WorkerError(
            f"task {task} failed in the worker: {err.get('type')}: {err.get('message')}",
            err.get("traceback"),
        )


def cpu_seconds(timeout: float | None) -> int | None:
    """The CPU-time limit backing a wall-clock timeout: every core busy for the
    whole timeout, plus start-up."""
    if timeout is None:
        return None
    return math.ceil(timeout * (os.cpu_count() or 1)) + 5


def run_task(
    task: str,
    request: dict[str, Any],
    timeout: float | None = None,
    runtime: Any = None,
    env: dict[str, str] | None = None,
    read_paths: Iterable[str | os.PathLike[str]] = (),
    write_paths: Iterable[str | os.PathLike[str]] = (),
) -> Any:
    """Run one task in a fresh child process and return its result. The
    request's "path" (the library) and "runtime" are readable in the sandbox."""
    reads = [str(p) for p in read_paths]
    request = dict(request)
    for k in ("path", "runtime"):
        v = request.get(k)
        if isinstance(v, str) and v:
            # the worker runs in its own scratch directory: paths relative to
            # ours would name nothing there
            request[k] = v = os.path.abspath(v)
            reads.append(v)
    if runtime is not None:
        reads.append(str(runtime))
    with Worker(
        runtime=runtime,
        env=env,
        read_paths=reads,
        write_paths=write_paths,
        cpu_limit=cpu_seconds(timeout),
    ) as w:
        return w.call(task, request, timeout)


def sandbox_field(ran: bool = True) -> dict[str, Any]:
    """The `sandbox` field of every --json output: what the last worker of
    this process was confined with (or, with ran=False or before any worker,
    that no library code ran)."""
    info = last_sandbox() if ran else None
    pol = policy()
    if info is None:
        return {
            "enabled": pol.sandbox,
            "ran": False,
            "applied": [],
            "missing": [],
            "notes": ["no library code ran"],
            "memory_limit": pol.memory_limit,
            "cpu_limit": None,
        }
    return {**info.to_json(), "ran": True}
