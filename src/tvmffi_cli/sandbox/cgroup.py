"""A cgroup v2 per worker, where this user has a delegated one: the kernel
then bounds the memory of the worker's whole process tree (memory.max, no
swap), its task count (pids.max, root included) and can kill all of it
(cgroup.kill), whatever the library does.

    cg = cgroup.make(limit=4 << 30)  # None where no writable cgroup v2 has
    cg.procs_fd                      # the memory and pids controllers
    cg.oom_kills(); cg.peak()        # after a death: was it the limit?
    cg.remove()                      # kill what is left, rmdir

Where: $TVMFFI_CGROUP (a directory of a cgroup v2 whose subtree_control
enables memory and pids, writable by this user), else the parent of our own
cgroup when it is such a directory (systemd's Delegate=yes puts a service in
a leaf under one). A cgroup with processes of its own cannot hand memory
to children ("no internal processes"), so our own is never used. The worker
joins it from the supervisor's init (runtime/sandbox: a write of "0" to the
cgroup.procs descriptor passed here), before it forks the worker proper.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

#: A cgroup v2 directory with memory and pids delegated to this user.
ENV = "TVMFFI_CGROUP"
_PREFIX = "tvmffi-"
_found: list[str | None] = []


def _read(path: str, limit: int = 65536) -> str:
    with open(path, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


def _mount_point() -> str | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or
    .../unified on a hybrid system)."""
    try:
        text = _read("/proc/self/mountinfo", 1 << 20)
    except OSError:
        return None
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            fields = left.split()
            if len(fields) > 4:
                return fields[4]
    return None


def _own() -> str | None:
    """Our cgroup v2 path ("0::/a/b" in /proc/self/cgroup)."""
    try:
        for line in _read("/proc/self/cgroup").splitlines():
            if line.startswith("0::"):
                return line[3:].strip()
    except OSError:
        pass
    return None


def usable(d: str) -> bool:
    """A cgroup v2 directory whose children get memory and pids controls,
    and in which this user may make them."""
    try:
        ctl = _read(os.path.join(d, "cgroup.subtree_control")).split()
    except OSError:
        return False
    return {"memory", "pids"} <= set(ctl) and os.access(d, os.W_OK | os.X_OK)


def find() -> str | None:
    """The delegated cgroup to make workers' cgroups in (None: none here)."""
    if _found:
        return _found[0]
    env = os.environ.get(ENV)
    found: str | None = None
    if env:
        found = env if usable(env) else None
    else:
        root, own = _mount_point(), _own()
        if root is not None and own is not None and own not in ("", "/"):
            parent = os.path.dirname(os.path.join(root, own.lstrip("/")))
            found = parent if usable(parent) else None
    _found.append(found)
    return found


def _sweep(base: str) -> None:
    """Remove cgroups of ours left by a tvmffi that was killed (rmdir fails
    on one still in use)."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for n in names:
        if n.startswith(_PREFIX):
            try:
                os.rmdir(os.path.join(base, n))
            except OSError:
                pass


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class Cgroup:
    path: str
    #: cgroup.procs, opened for writing: the worker's init writes "0" to it.
    procs_fd: int

    def _events(self) -> dict[str, int]:
        out: dict[str, int] = {}
        try:
            for line in _read(os.path.join(self.path, "memory.events")).splitlines():
                k, _, v = line.partition(" ")
                out[k] = int(v) if v.strip().isdigit() else 0
        except OSError:
            pass
        return out

    def oom_kills(self) -> int:
        """Processes the kernel killed for the limit."""
        return self._events().get("oom_kill", 0)

    def limit_hits(self) -> int:
        """Times the tree's usage reached memory.max (and was reclaimed)."""
        return self._events().get("max", 0)

    def peak(self) -> int | None:
        """The tree's peak memory (bytes; memory.peak, Linux 5.19+)."""
        try:
            return int(_read(os.path.join(self.path, "memory.peak")).strip())
        except (OSError, ValueError):
            return None

    def close_fd(self) -> None:
        if self.procs_fd >= 0:
            os.close(self.procs_fd)
            self.procs_fd = -1

    def remove(self) -> None:
        """Kill whatever is left in it and remove it."""
        import time

        self.close_fd()
        try:
            _write(os.path.join(self.path, "cgroup.kill"), "1")
        except OSError:
            pass
        deadline = time.monotonic() + 2.0
        while True:
            try:
                os.rmdir(self.path)
                return
            except OSError as e:
                # EBUSY: processes are still leaving it; anything else is final.
                if e.errno != errno.EBUSY or time.monotonic() > deadline:
                    return
                time.sleep(0.01)


def make(limit: int, tasks: int) -> Cgroup | None:
    """A new cgroup for one worker: memory.max `limit` bytes, no swap, the
    whole tree killed when the kernel has to kill for memory, at most
    `tasks` tasks. None where no delegated cgroup is at hand (or one refused
    a setting: then the supervisor's watch applies)."""
    base = find()
    if base is None:
        return None
    _sweep(base)
    path = os.path.join(base, _PREFIX + os.urandom(6).hex())
    try:
        os.mkdir(path, 0o755)
    except OSError:
        return None
    try:
        _write(os.path.join(path, "memory.max"), str(limit))
        _write(os.path.join(path, "pids.max"), str(tasks))
        for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
            if os.path.exists(os.path.join(path, name)):
                _write(os.path.join(path, name), value)
        fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        try:
            os.rmdir(path)
        except OSError:
            pass
        return None
    return Cgroup(path, fd)
