"""Run library code in a child process (tvmffi_cli.sandbox.worker) and survive it.

    sandbox.run_task("inspect.task", {"path": "lib.so"}, timeout=30)   # one shot
    with sandbox.Worker(runtime=path) as w:                          # persistent
        w.call("sandbox.selftest", {...}, timeout=5)

A child killed by a signal raises ChildCrashed (e.signal == "SIGSEGV"); one
that does not answer in time is killed and raises ChildTimeout (e.seconds).
A persistent Worker restarts its child on the next call after either. Errors
a task raised come back as the same tvmffi error class (InputError,
FormatError, CheckFailed), anything else as WorkerError.
"""

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .. import errors
from ..errors import TvmffiError

_STDERR_TAIL = 4096
_STATIC_TLS_RESERVE = 65536


class ChildCrashed(errors.CheckFailed):
    """The child died: by a signal (signal = "SIGSEGV", ...) or by exiting."""

    def __init__(self, signal_name=None, returncode=None, stderr=""):
        self.signal = signal_name
        self.signame = signal_name
        self.returncode = returncode
        self.stderr = stderr
        what = signal_name or f"exit status {returncode}"
        super().__init__(f"the library crashed the worker process ({what})")


class ChildTimeout(errors.CheckFailed):
    """The child did not answer within `seconds` and was killed."""

    def __init__(self, seconds, stderr=""):
        self.seconds = seconds
        self.stderr = stderr
        super().__init__(f"no answer within {seconds:g} s; the worker process was killed")


class WorkerError(TvmffiError):
    """A task failed in the child with an unexpected exception (a tvmffi bug)."""

    exit_code = errors.EXIT_INTERNAL

    def __init__(self, message, child_traceback=None):
        super().__init__(message)
        self.child_traceback = child_traceback


def signal_name(returncode):
    """"SIGSEGV" for a returncode of -11; None for a normal exit."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _child_env(runtime, env):
    e = dict(os.environ)
    if env:
        e.update(env)
    if runtime is not None:
        e["TVMFFI_RUNTIME"] = str(Path(runtime).resolve())
    # Make the package importable in the child even when it runs from a source tree.
    src = str(Path(__file__).resolve().parents[2])
    e["PYTHONPATH"] = src + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.setdefault("PYTHONUNBUFFERED", "1")
    # Libraries (and runtimes) built with initial-exec TLS need static TLS
    # space when dlopen'ed after start-up; glibc reserves little by default and
    # fails with "cannot allocate memory in static TLS block". Reserve more.
    if "glibc.rtld.optional_static_tls" not in e.get("GLIBC_TUNABLES", ""):
        tun = f"glibc.rtld.optional_static_tls={_STATIC_TLS_RESERVE}"
        e["GLIBC_TUNABLES"] = f"{e['GLIBC_TUNABLES']}:{tun}" if e.get("GLIBC_TUNABLES") else tun
    return e


class Worker:
    """A child process serving task requests over pipes (JSON lines).

    runtime: libtvm_ffi.so for the child (default: ours, or TVMFFI_RUNTIME).
    stderr: "capture" (a temporary file; see stderr_text()), "inherit", or a
    writable file object."""

    def __init__(self, runtime=None, env=None, stderr="capture", python=None, serve=None):
        self.runtime = runtime
        self.env = env
        self.stderr_mode = stderr
        self.python = python or sys.executable
        self.serve = serve  # task name for `--serve`: raw pipes, no request/reply framing
        self.proc = None
        self._buf = b""
        self._err_file = None
        self._lock = threading.Lock()
        self.starts = 0

    # -- lifecycle -------------------------------------------------------------
    def start(self):
        if self.proc is not None and self.proc.poll() is None:
            return
        self._cleanup()
        if self.stderr_mode == "capture":
            self._err_file = tempfile.TemporaryFile()
            err = self._err_file
        elif self.stderr_mode == "inherit":
            err = None
        else:
            err = self.stderr_mode
        cmd = [self.python, "-m", "tvmffi_cli.sandbox.worker"]
        if self.serve:
            cmd += ["--serve", self.serve]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            env=_child_env(self.runtime, self.env), start_new_session=True, bufsize=0)
        self._buf = b""
        self.starts += 1

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def close(self):
        p = self.proc
        if p is not None and p.poll() is None:
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._kill()
        self._cleanup()

    def kill(self):
        """Kill the child (and its process group) now; the next request starts a new one."""
        self._kill()
        self._cleanup()

    def _kill(self):
        p = self.proc
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the library may have started children
        except (ProcessLookupError, PermissionError):
            try:
                p.kill()
            except ProcessLookupError:
                pass
        p.wait()

    def _cleanup(self):
        if self.proc is not None:
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except (OSError, AttributeError):
                    pass
        self.proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()
        if self._err_file is not None:
            self._err_file.close()
            self._err_file = None

    def __del__(self):
        try:
            if self.proc is not None and self.proc.poll() is None:
                self._kill()
        except Exception:
            pass

    # -- I/O -------------------------------------------------------------------
    def stderr_text(self, limit=_STDERR_TAIL):
        """The last `limit` bytes the child wrote to stderr (capture mode)."""
        f = self._err_file
        if f is None:
            return ""
        try:
            f.flush()
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""

    def send(self, obj):
        """Write one JSON line to the child (starting it if needed)."""
        self.start()
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        try:
            self.proc.stdin.write(data)
        except BrokenPipeError:
            raise self._death() from None

    def read_line(self, timeout=None):
        """Next line from the child as parsed JSON; ChildCrashed on EOF,
        ChildTimeout (after killing the child) when `timeout` seconds pass."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                self._kill()
                tail = self.stderr_text()
                self._cleanup()
                raise ChildTimeout(timeout, tail)
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._death()
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def _death(self):
        p = self.proc
        try:
            rc = p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._kill()
            rc = p.returncode
        tail = self.stderr_text()
        self._cleanup()
        return ChildCrashed(signal_name(rc), rc, tail)

    # -- requests --------------------------------------------------------------
    def call(self, task, request, timeout=None):
        """Run tvmffi_cli.<task>.run(request) in the child and return its result."""
        with self._lock:
            self.send({"task": task, "request": request})
            reply = self.read_line(timeout)
        if reply.get("ok"):
            return reply.get("result")
        err = reply.get("error") or {}
        cls = getattr(errors, err.get("type", ""), None)
        if err.get("known") and isinstance(cls, type) and issubclass(cls, TvmffiError):
            e = cls(err.get("message", ""))
            e.exit_code = err.get("exit_code", e.exit_code)
            raise e
        if err.get("known"):
            e = TvmffiError(err.get("message", ""))
            e.exit_code = err.get("exit_code", e.exit_code)
            raise e
        raise WorkerError(f"task {task} failed in the worker: {err.get('type')}: "
                          f"{err.get('message')}", err.get("traceback"))


def run_task(task, request, timeout=None, runtime=None, env=None):
    """Run one task in a fresh child process and return its result."""
    with Worker(runtime=runtime, env=env) as w:
        return w.call(task, request, timeout)
