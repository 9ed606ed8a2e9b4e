"""The child side of sandbox/process.py.

Started as `python -I -c BOOT <src> <serve> <req_fd> <rep_fd> <lifeline_fd>
<status_fd>` (-I: no current directory, no user site, no PYTHON* variables on
the path), with fd 0 on /dev/null and fds 1 and 2 on a capture pipe the
parent relays to its stderr marked as the library's. Before any library code
can run:

1. the 32-byte channel key, then the config frame (protocol.py), are read
   from the request pipe;
2. resource limits are set (address space, CPU time, no core files);
3. kernel.launch(): this process becomes a supervisor, a child becomes the
   init of a new PID namespace, and its child (the worker proper) returns
   here; the lifeline and status fds stay with the supervisor only;
4. kernel.confine() (unless --no-sandbox): Landlock, seccomp, capabilities;
5. a "hello" frame reports what was applied.

Then each request frame {"task": "<dotted name>", "request": {...}} gets one
reply frame {"ok": true, "result": ...} or {"ok": false, "error": {...}} (typed in
messages.py: Config, Hello, Request, Reply); or,
with <serve> set, the task's serve(channel) speaks its own message stream
over the same authenticated channel.
"""

from __future__ import annotations

import importlib
import os
import re
import signal
import sys
from types import ModuleType
from typing import Any

from . import kernel, messages, protocol, zygote
from .policy import device_nodes

# A task is a module named by its dotted path under tvmffi_cli ("call.task",
# "inspect.task", "conform.probe_task", "sandbox.selftest") that defines
# `run(request: dict) -> dict` (JSON values) and, for a streaming protocol,
# `serve(channel)`. Library code runs only in tasks, never in the parent.
_TASK_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")

#: Read-only paths every worker needs: the loader's files and system libraries,
#: and the few kernel files glibc, Python and numpy read.
SYSTEM_READ = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/localtime",
    "/proc/self",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/sys/vm/overcommit_memory",
    "/sys/devices/system/cpu",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
    "/dev/null",
)

#: What GPU drivers read while they start (CUDA's cuInit, ROCm's runtime),
#: readable where a GPU device node is (policy.device_nodes): their /proc
#: and /sys files, profiles under /etc. Their libraries and
#: tools (/usr/lib/x86_64-linux-gnu/libcuda*, /usr/local/cuda,
#: /usr/local/nvidia) are beneath /usr; their device nodes are write paths
#: (policy.DEVICE_NODES). Missing paths are skipped.
GPU_READ = (
    "/proc/driver/nvidia",
    "/proc/devices",
    "/proc/modules",
    "/proc/sys/vm/mmap_min_addr",
    "/proc/sys/vm/max_map_count",
    "/proc/sys/kernel/numa_balancing",
    "/sys/bus/pci",
    "/sys/devices",
    "/sys/module/nvidia",
    "/sys/module/nvidia_uvm",
    "/sys/module/amdgpu",
    "/sys/class/kfd",
    "/etc/nvidia",
    "/etc/OpenCL",
    "/opt/rocm",
)


def load_task(name: object) -> ModuleType:
    if not isinstance(name, str) or not _TASK_NAME.match(name):
        raise ValueError(f"bad task name {name!r}")
    mod = importlib.import_module(f"tvmffi_cli.{name}")
    if not (hasattr(mod, "run") or hasattr(mod, "serve")):
        raise ValueError(f"{name!r} is not a task module")
    return mod


def handle(msg: Any) -> messages.Reply:
    """One request -> one reply (never raises)."""
    try:
        req = messages.decode(messages.Request, msg)
        mod = load_task(req.task)
        return messages.Reply(ok=True, result=mod.run(req.request))
    except MemoryError:
        return messages.Reply(
            ok=False, error=messages.TaskError("MemoryError", "out of memory", 1, False)
        )
    except Exception as e:
        import traceback  # on error only: it pulls in textwrap and more

        from ..errors import TvmffiError

        known = isinstance(e, TvmffiError)
        return messages.Reply(
            ok=False,
            error=messages.TaskError(
                type=type(e).__name__,
                message=str(e),
                exit_code=getattr(e, "exit_code", 3),
                known=known,
                traceback=None if known else traceback.format_exc(),
            ),
        )


#: Seconds the worker waits, after its last request, for threads the library
#: started to end, so a crash in one shortly after the reply is still this
#: step's (the parent judges it from the exit status).
LINGER = 0.25


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _linger(base: int) -> None:
    import time

    deadline = time.monotonic() + LINGER
    while _threads() > base and time.monotonic() < deadline:
        time.sleep(0.005)


def serve_requests(chan: protocol.Endpoint) -> None:
    base = _threads()
    while True:
        try:
            msg = chan.recv()
        except protocol.ChannelClosed:
            _linger(base)
            return
        reply = handle(msg)
        try:
            chan.send(messages.encode(reply))
        except (TypeError, ValueError) as e:
            err = messages.TaskError("InternalError", f"task reply is not sendable: {e}", 3, False)
            chan.send(messages.encode(messages.Reply(ok=False, error=err)))


def _set_limits(memory: int | None, cpu: int | None, fsize: int | None = None) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if fsize:
        # No one file over the scratch bound (the parent bounds the total).
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if memory:
        # Private writable memory of each process (heap, anonymous and
        # copied-on-write mappings), not address space: CUDA reserves far
        # more address space than it uses, and cuInit fails under
        # RLIMIT_AS. The supervisor (or a cgroup) bounds the tree's sum.
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    if cpu:
        # SIGXCPU at the soft limit, SIGKILL at the hard one.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def python_paths() -> list[str]:
    """The interpreter's and tvmffi's own directories (readable in the
    sandbox): the prefixes, what of sys.path lies beneath them, and the
    tvmffi_cli package. Not every sys.path entry: a .pth file may put a
    project's root there (an editable install: its .env, its .git), which a
    forked worker never had either."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    out = set(roots)
    out.add(os.path.dirname(os.path.realpath(sys.executable)))
    for p in sys.path:
        if p and os.path.isabs(p):
            if any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots):
                out.add(p)
    out.update(kernel.package_dirs())
    return sorted(out)


def _start(
    req_fd: int, rep_fd: int, lifeline_fd: int, status_fd: int
) -> tuple[protocol.Endpoint, int]:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    key = protocol.read_exact(req_fd, protocol.KEY_BYTES)
    if key is None:
        raise SystemExit(0)  # the parent went away before the handshake
    chan = protocol.Endpoint(key, req_fd, rep_fd, parent=False)
    try:
        config = messages.decode(messages.Config, chan.recv())
    except messages.MessageError:
        raise SystemExit(2) from None
    enabled, memory, cpu = config.sandbox, config.memory_limit, config.cpu_limit
    _set_limits(None, cpu, config.scratch_limit)

    want_launch = kernel.LIFETIME + (("net-namespace",) if enabled else ())
    scratch = config.scratch
    tmpfs = kernel.scratch_tmpfs_size(config.scratch_limit) if config.scratch_limit else 0
    got, notes = kernel.launch(
        want_launch, lifeline_fd, status_fd, config.cgroup_fd, memory, scratch, tmpfs
    )
    # Only the worker proper gets here (the supervisor and the init never
    # return); the helper closed the cgroup's descriptor in every process.
    for fd in (lifeline_fd, status_fd):
        try:
            os.close(fd)
        except OSError:
            pass
    mechanism = kernel.memory_mechanism(got, memory)
    if memory and mechanism != "cgroup-v2":
        _set_limits(memory, None)
    if scratch:
        os.environ["TMPDIR"] = scratch
        os.chdir(scratch)  # onto the tmpfs, when one was mounted there
    want = want_launch
    in_pidns = bool(got & kernel.FEATURES["pid-namespace"])
    in_mountns = bool(got & kernel.FEATURES["mount-namespace"])
    if enabled:
        confine_want = tuple(n for n in kernel.CONFINEMENT if n != "net-namespace")
        reads = list(config.read)
        reads += list(SYSTEM_READ) + python_paths()
        if device_nodes():  # a GPU here: what its driver reads at start
            reads += GPU_READ
        if in_pidns and in_mountns:
            # A procfs of the worker's own namespace: its processes only
            # (probe children read their own /proc/self too).
            reads.append("/proc")
        writes = [scratch] if scratch else []
        writes += list(config.write)
        writes.append("/dev/null")
        got2, notes2 = kernel.confine(confine_want, reads, writes, in_pidns, in_mountns)
        got |= got2
        notes += notes2
        want += confine_want
        if scratch:
            os.chdir(scratch)  # onto the writable copy read-only-fs put there
    applied = kernel.names_of(got)
    info = kernel.Applied(
        enabled=enabled,
        applied=applied,
        missing=tuple(n for n in want if n not in applied),
        notes=notes,
        memory_limit=memory,
        cpu_limit=cpu,
        memory_mechanism=mechanism,
    )
    zygote.order_fd, zygote.applied = config.order_fd, applied
    chan.send(messages.encode(messages.Hello(pid=os.getpid(), sandbox=info)))
    return chan, config.fault_fd


#: The parent's fault log (-1: none): a task's own crash report goes there,
#: not into the library's output (call/guard.py: where a crash read).
FAULT_FD = -1


def main(argv: list[str] | None = None) -> int:
    global FAULT_FD
    argv = sys.argv[1:] if argv is None else argv
    serve, req_fd, rep_fd, lifeline_fd, status_fd = argv[0], *map(int, argv[1:5])
    # No signal blocked, whichever thread of tvmffi started us (its helper
    # threads block SIGINT, and an exec'd worker inherits that mask).
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    chan, fault_fd = _start(req_fd, rep_fd, lifeline_fd, status_fd)
    FAULT_FD = fault_fd
    try:
        import faulthandler

        # The worker's own stack on a crash goes to a file the parent created
        # and handed over (read for -v), not into the library's output, and
        # not to a name in the scratch directory the library could replace.
        if fault_fd >= 0:
            faulthandler.enable(file=fault_fd)
    except (ImportError, RuntimeError, ValueError, OSError):
        pass
    if serve:
        load_task(serve).serve(chan)
    else:
        serve_requests(chan)
    return 0


#: What the parent runs with `python -I -c`: put the package on the path
#: (a source checkout is not on an isolated interpreter's path), then main().
BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from tvmffi_cli.sandbox.worker import main; sys.exit(main(sys.argv[2:]))"
)
