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

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors, text
from ..errors import TvmffiError
from ..text import JsonDict
from . import cgroup, failures, files, kernel, messages, protocol, spawn, zygote
from .environ import child_env as _child_env
from .failures import require_message as require_message
from .files import remove_tree as remove_tree
from .lifeline import Lifeline
from .policy import DEFAULT_MEMORY_LIMIT as DEFAULT_MEMORY_LIMIT
from .policy import DEFAULT_SCRATCH_LIMIT as DEFAULT_SCRATCH_LIMIT
from .policy import REQUIRE_ENV as REQUIRE_ENV
from .policy import Policy as Policy
from .policy import cpu_seconds as cpu_seconds
from .policy import device_nodes, no_worker_field
from .policy import format_size as format_size
from .policy import parse_size as parse_size
from .policy import policy as policy
from .policy import set_policy as set_policy
from .relay import RELAY_CAP as RELAY_CAP
from .relay import Relay
from .scratch import Meter
from .threads import leave_interrupts_to_main
from .worker import BOOT, SYSTEM_READ, python_paths

if TYPE_CHECKING:
    from .denials import Denial

# How a worker fails (failures.py), under the names callers use.
ChildCrashed = failures.ChildCrashed
MemoryLimitExceeded = failures.MemoryLimitExceeded
ScratchLimitExceeded = failures.ScratchLimitExceeded
SandboxUnavailable = failures.SandboxUnavailable
ChildTimeout = failures.ChildTimeout
ChannelTampered = failures.ChannelTampered
WorkerError = failures.WorkerError
signal_name = failures.signal_name

_STDERR_TAIL = 4096
_START_TIMEOUT = 60.0
#: How long the supervisor may take to empty the worker's process tree.
_KILL_GRACE = 5.0
#: Tasks a worker's cgroup may hold (pids.max; root included), and 2 per CPU.
_TASKS = 1024
_last_sandbox: kernel.Applied | None = None


def last_sandbox() -> kernel.Applied | None:
    """What the most recently started worker reported it applied."""
    return _last_sandbox


class Worker:
    """A confined child process serving task requests over an authenticated channel.

    runtime: libtvm_ffi.so for the child (default: ours, or TVMFFI_RUNTIME).
    read_paths: files and directories the library may read besides the system
    (the library itself, its inputs); write_paths: directories it may write
    besides its private scratch directory (staged outputs). stderr: "relay" (our stderr, marked),
    "capture" (kept only for crash reports), or a writable binary file object.
    sandbox / memory_limit: default from policy(). cpu_limit: seconds of CPU
    for the worker's life (RLIMIT_CPU), backing the wall-clock timeouts.
    orders: give it an order pipe, so it may become a zygote (sandbox/zygote.py)."""

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
        orders: bool = False,
    ) -> None:
        pol = policy()
        self.orders = orders
        self.order_w: int | None = None
        #: The zygote's living probe child (None: the worker itself serves).
        self.child: zygote.Child | None = None
        self.runtime = runtime
        self.env = env
        self.stderr_mode = pol.output if stderr is None else stderr
        if self.stderr_mode is subprocess.DEVNULL:
            self.stderr_mode = "capture"
        self.python = python or sys.executable
        self.serve = serve
        self.read_paths = [str(Path(p).resolve()) for p in (*read_paths, *pol.allow_read)]
        self.write_paths = [
            str(Path(p).resolve()) for p in (*write_paths, *pol.allow_write, *device_nodes())
        ]
        self.use_sandbox = pol.sandbox if sandbox is None else sandbox
        self.env_pass = pol.env
        self.scratch_limit = pol.scratch_limit
        self.require = pol.require or os.environ.get(REQUIRE_ENV) == "1"
        self.memory_limit = pol.memory_limit if memory_limit == -1 else memory_limit
        self.cpu_limit = cpu_limit
        self.proc: subprocess.Popen[bytes] | spawn.Forked | None = None
        #: Why the last start was a new interpreter (None: a fork of this process).
        self.exec_reason: str | None = None
        self.chan: protocol.Endpoint | None = None
        self.sandbox: kernel.Applied | None = None
        self.worker_pid: int | None = None
        self.relay: Relay | None = None
        self._lifeline = Lifeline()
        self.status: zygote.StatusStream | None = None
        self._scratch: str | None = None
        self.fault_fd: int | None = None
        #: The cgroup v2 of the worker's tree (cgroup.py), where one could be made.
        self.cgroup: cgroup.Cgroup | None = None
        self.meter: Meter | None = None
        #: The tree's memory (KiB) when the supervisor's watch killed it.
        self.memory_killed_kb: int | None = None
        self._watch: threading.Thread | None = None
        self._stop_watch = threading.Event()
        self.scratch_exceeded = False
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
        ord_r, self.order_w = zygote.order_socket() if self.orders else (-1, None)
        self._scratch = files.private_dir("tvmffi-scratch-")
        self.fault_fd = fault_fd = files.fault_log()
        self.scratch_exceeded = False
        self.memory_killed_kb = None
        ncpu = os.cpu_count() or 1
        if self.memory_limit:
            self.cgroup = cgroup.make(self.memory_limit, _TASKS + 2 * ncpu)
        cg_fd = self.cgroup.procs_fd if self.cgroup is not None else -1
        src = str(Path(__file__).resolve().parents[2])
        argv = [src, self.serve or "", str(req_r), str(rep_w), str(life_r), str(stat_w)]
        env = _child_env(self.runtime, self.env, self._scratch, self.env_pass)
        libs = [*self.read_paths, env.get("TVMFFI_RUNTIME") or spawn.own_runtime()]
        self.exec_reason = spawn.fork_refusal(env, self.python, libs)
        keep = (req_r, rep_w, life_r, stat_w, fault_fd, *[fd for fd in (ord_r, cg_fd) if fd >= 0])
        try:
            if self.exec_reason is None:
                self.proc = spawn.fork_worker(argv, out_w, keep, self._scratch, env)
            else:
                self.proc = subprocess.Popen(
                    [self.python, "-I", "-c", BOOT, *argv],
                    stdin=subprocess.DEVNULL,
                    stdout=out_w,
                    stderr=out_w,
                    pass_fds=keep,
                    cwd=self._scratch,
                    env=env,
                    start_new_session=True,
                )
        finally:
            for fd in (req_r, rep_w, life_r, stat_w, out_w, *([ord_r] if ord_r >= 0 else [])):
                os.close(fd)
            if self.cgroup is not None:
                self.cgroup.close_fd()
        self._lifeline, self.status = Lifeline(life_w), zygote.StatusStream(stat_r)
        self.relay = Relay(out_r, self.stderr_mode)
        self.relay.start()
        self.chan = protocol.Endpoint(key, rep_r, req_w, parent=True)
        self.starts += 1
        try:
            protocol.write_all(req_w, key)
            config = messages.Config(
                sandbox=self.use_sandbox,
                memory_limit=self.memory_limit,
                cpu_limit=self.cpu_limit,
                scratch=self._scratch,
                scratch_limit=self.scratch_limit,
                fault_fd=fault_fd,
                read=tuple(self.read_paths),
                write=tuple(self.write_paths),
                ncpu=ncpu,
                order_fd=ord_r,
                cgroup_fd=cg_fd,
            )
            self.chan.send(messages.encode(config))
        except BrokenPipeError:
            raise self._death() from None
        try:
            hello = messages.decode(messages.Hello, self._recv(_START_TIMEOUT))
        except messages.MessageError as e:
            self._kill()
            raise ChannelTampered(str(e)) from None
        self.sandbox = hello.sandbox
        self.worker_pid = hello.pid
        _last_sandbox = self.sandbox
        if self.cgroup is not None and self.sandbox.memory_mechanism != "cgroup-v2":
            self.cgroup.remove()  # the worker could not join it: the watch applies
            self.cgroup = None
        self.meter = Meter(self._scratch)
        if "scratch-tmpfs" in self.sandbox.applied:
            self.meter.attach(self.worker_host_pid())
        if self.require and (self.sandbox.missing or not self.sandbox.enabled):
            self._kill()
            self._cleanup()
            raise SandboxUnavailable(require_message(self.sandbox))
        self._stop_watch.clear()
        self._watch = threading.Thread(
            target=self._watch_scratch, daemon=True, name="tvmffi-scratch-watch"
        )
        self._watch.start()

    def _watch_scratch(self) -> None:
        """Kill the worker when its scratch directory grows past the bound
        (RLIMIT_FSIZE bounds each file; this bounds them all)."""
        leave_interrupts_to_main()
        p = self.proc
        while p is not None and not self._stop_watch.wait(0.1):
            if p.poll() is not None or self._scratch_over():
                return

    def _scratch_over(self) -> bool:
        """Past the scratch bound: the worker is killed (True)."""
        meter, p = self.meter, self.proc
        if meter is None or p is None or self.scratch_exceeded:
            return self.scratch_exceeded
        if meter.usage(p.pid) <= self.scratch_limit:
            return False
        self.scratch_exceeded = True
        if not self._signal_supervisor():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        return True

    def _signal_supervisor(self) -> bool:
        """A byte on the lifeline: the supervisor kills every descendant of
        the worker and exits (kernel.py). False when there is none to ask."""
        sb = self.sandbox
        return sb is not None and "subreaper" in sb.applied and self._lifeline.ask_kill()

    def abort(self) -> None:
        """Kill the worker's tree from another thread (an interrupt) while
        the thread using it may be inside a request: nothing that thread
        holds is closed; it sees the worker die and closes it as after any
        death (scratch dir included)."""
        p = self.proc
        if self._signal_supervisor() or p is None or p.returncode is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self, check: bool = False) -> None:
        """End the worker. check: a worker that then dies by a signal (a crash
        after its last reply, e.g. in a thread the library started) raises
        ChildCrashed, as does one that went over a limit."""
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
                # Killed by us for lingering at exit: not a crash of its own.
                self._cleanup()
                return
        if check and p is not None and ((p.returncode or 0) < 0 or self.scratch_exceeded):
            death = self._death()
            death.after_reply = True
            raise death
        self._cleanup()

    def kill(self) -> None:
        """Kill the child (and everything it started); the next request starts a new one."""
        self._kill()
        self._cleanup()

    def _kill(self) -> None:
        p = self.proc
        if p is None:
            return
        # Hang up the lifeline first: the supervisor kills every descendant
        # of the worker (setsid() and fork chains included, with or without a
        # PID namespace), then exits. Killing it first would orphan them.
        if self._signal_supervisor():
            self._lifeline.close()
            try:
                p.wait(timeout=_KILL_GRACE)
                return
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                p.kill()
            except ProcessLookupError:
                pass
        p.wait()
        self._lifeline.close()

    def _cleanup(self) -> None:
        if self.chan is not None:
            for fd in (self.chan.in_fd, self.chan.out_fd):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self.chan = None
        self._lifeline.close()
        if self.status is not None:
            self.status.close()
            self.status = None
        if self.order_w is not None:
            try:
                os.close(self.order_w)
            except OSError:
                pass
            self.order_w = None
        self.child = None
        if self.relay is not None:
            self.relay.join(timeout=1.0)
        self._stop_watch.set()
        if self._watch is not None and self._watch is not threading.current_thread():
            self._watch.join(timeout=1.0)
            self._watch = None
        if self.meter is not None:
            self.meter.close()
            self.meter = None
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self._scratch is not None:
            files.remove_tree(self._scratch)
            self._scratch = None
        if self.fault_fd is not None:
            os.close(self.fault_fd)
            self.fault_fd = None
        self.proc = None

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(check=exc[0] is None)

    def __del__(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self._kill()
        except Exception:
            pass

    # -- I/O -------------------------------------------------------------------
    def denials(self, said: str) -> list[Denial]:
        """Paths the library's words (`said`) name as denied that the sandbox
        keeps from it, each with the option that would allow it."""
        info = self.sandbox
        if not self.use_sandbox or info is None or "landlock-fs" not in info.applied:
            return []
        # Our sys.path may hold our current directory (python -m); the
        # worker's (python -I) never does.
        ours = [p for p in python_paths() if p not in ("/", os.getcwd())]
        reads = [*self.read_paths, *SYSTEM_READ, *ours]
        writes = [*filter(None, [self._scratch]), *self.write_paths, "/dev/null"]
        from .denials import suggest  # only after a failure

        return suggest(said, reads, writes)

    def worker_host_pid(self) -> int | None:
        """The worker proper's pid as we see it: the supervisor's grandchild
        (its child is the namespace's init, or a subreaper without one)."""
        p = self.proc
        if p is None or p.poll() is not None:
            return None
        return failures.grandchild(p.pid)

    def peak_memory(self) -> int | None:
        """The worker's peak memory (bytes) as its limit counts it: the
        cgroup's memory.peak, else the peak private data of the worker
        proper (what RLIMIT_DATA bounds, from /proc). None if gone."""
        if self.cgroup is not None:
            return self.cgroup.peak()
        pid = self.worker_host_pid()
        return None if pid is None else failures.data_peak(pid)

    def memory_limit_reached(self) -> dict[str, int] | None:
        """{"limit", "peak"} (bytes) when the worker's memory came within a
        quarter of --memory-limit (or the cgroup hit it): its allocations
        may have failed for that reason, whatever the library then said."""
        limit = self.memory_limit
        peak = self.peak_memory() if limit else None
        if not limit or peak is None:
            return None
        hit = self.cgroup is not None and self.cgroup.limit_hits() > 0
        if peak * 4 < limit * 3 and not hit:
            return None
        return {"limit": limit, "peak": peak}

    def stderr_text(self, limit: int = _STDERR_TAIL) -> str:
        """The last `limit` bytes the child wrote to stdout/stderr."""
        r = self.relay
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
        if self.fault_fd is None:
            return ""
        data = files.read_log(self.fault_fd, _STDERR_TAIL)
        return text.terminal(text.from_bytes(data))

    def _status(self) -> tuple[int | None, int | None]:
        """(wait status of the worker proper, its peak RSS in KiB) from the supervisor."""
        return self.status.final() if self.status is not None else (None, None)

    def _death(self) -> ChildCrashed:
        p = self.proc
        if p is None:
            return ChildCrashed(None, None, "")
        rc: int | None
        try:
            rc = p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._kill()
            rc = p.returncode
        _, peak_kb = self._status()
        self._memory_death()
        if self.relay is not None:
            self.relay.join(timeout=1.0)
        tail = self.stderr_text() + self._fault_log()
        self._cleanup()
        return self.verdict(rc, peak_kb, tail)

    def _memory_death(self) -> None:
        """Whether the memory limit ended the tree, before its records go:
        the supervisor's watch said so ("m" line), or the cgroup's kernel
        killed for it. Sets memory_killed_kb."""
        if self.status is not None and self.status.memory_kb is not None:
            self.memory_killed_kb = self.status.memory_kb
        elif self.cgroup is not None and self.cgroup.oom_kills() > 0:
            self.memory_killed_kb = (self.cgroup.peak() or 0) >> 10

    def verdict(self, rc: int | None, peak_kb: int | None, tail: str) -> ChildCrashed:
        """How a process of this worker ended (rc: negative for a signal)."""
        sig = signal_name(rc)
        if self.scratch_exceeded:
            return ScratchLimitExceeded(self.scratch_limit, tail)
        limit = self.memory_limit
        if limit and self.memory_killed_kb is not None:
            return MemoryLimitExceeded(limit, self.memory_killed_kb, sig, rc, tail, tree=True)
        if limit and sig is not None and peak_kb is not None and peak_kb * 1024 >= limit // 2:
            return MemoryLimitExceeded(limit, peak_kb, sig, rc, tail)
        return ChildCrashed(sig, rc, tail)

    # -- requests --------------------------------------------------------------
    def call(self, task: str, request: JsonDict, timeout: float | None = None) -> Any:
        """Run tvmffi_cli.<task>.run(request) in the child and return its result."""
        with self._lock:
            self.send(messages.encode(messages.Request(task, request)))
            raw = self.read_line(timeout)
            if self.meter is not None and self.meter.tmpfs_fd is not None and self._scratch_over():
                # Checked at once where it is cheap (the tmpfs's own count):
                # the library may have answered between two watches.
                raise self._death()
        try:
            reply = messages.decode(messages.Reply, raw)
        except messages.MessageError as bad:
            raise WorkerError(f"task {task}: the worker's reply is not a reply ({bad})") from None
        if reply.ok:
            return reply.result
        err = reply.error
        assert err is not None
        if err.type == "MemoryError" and self.memory_limit:
            self.kill()
            raise MemoryLimitExceeded(self.memory_limit, None)
        cls = getattr(errors, err.type, None)
        if err.known and isinstance(cls, type) and issubclass(cls, TvmffiError):
            e = cls(err.message)
            e.exit_code = err.exit_code
            raise e
        if err.known:
            e2 = TvmffiError(err.message)
            e2.exit_code = err.exit_code
            raise e2
        raise WorkerError(
            f"task {task} failed in the worker: {err.type}: {err.message}", err.traceback
        )


def run_task(
    task: str,
    request: JsonDict,
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


def sandbox_field(ran: bool = True) -> JsonDict:
    """The `sandbox` field of every --json output: what the last worker of
    this process was confined with (or, with ran=False or before any worker,
    that no library code ran)."""
    info = last_sandbox() if ran else None
    if info is None:
        return no_worker_field()
    return {**info.to_json(), "ran": True}
