"""How much disk the worker's scratch directory takes, as the parent measures
it for --scratch-limit (process.Worker's watch).

With a mount namespace, the scratch directory is a tmpfs the worker's init
mounted ("scratch-tmpfs"): its own accounting counts every byte at any
depth, files unlinked while open included, and the kernel stops writes a
little past the bound (kernel.scratch_tmpfs_size). The parent reaches it
through /proc/<worker>/root (a descriptor kept from the start, so the count
survives the worker's processes).

Without one, the parent walks the directory (files.tree_usage: allocated
blocks, any depth) and adds the files the worker's processes hold open or
mapped after unlinking them (/proc/<pid>/fd; /proc/<pid>/map_files where
the kernel lets us read it, which takes CAP_SYS_ADMIN).

    m = Meter(scratch)
    m.attach(worker_host_pid)    # after the worker said "scratch-tmpfs"
    m.usage(supervisor_pid)      # bytes
"""

from __future__ import annotations

import os
import stat

from . import files

#: Processes of one worker's tree the meter visits at most.
_TREE_CAP = 4096


def tree_pids(root: int, cap: int = _TREE_CAP) -> list[int]:
    """`root` and its descendants (the children files of every thread)."""
    out = [root]
    i = 0
    while i < len(out) and len(out) < cap:
        pid = out[i]
        i += 1
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    out += [int(c) for c in f.read(1 << 16).split()][: cap - len(out)]
            except (OSError, ValueError):
                pass
    return out


def _unlinked_blocks(st: os.stat_result, dev: int, seen: set[tuple[int, int]]) -> int:
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 0 or st.st_dev != dev:
        return 0
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return 0
    seen.add(key)
    return int(st.st_blocks) * 512


def held_unlinked(pids: list[int], dev: int) -> int:
    """Bytes of files on device `dev` that are unlinked but still held by
    a descriptor or a mapping of one of `pids` (each file once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    map_files = True
    want = f"{os.major(dev):02x}:{os.minor(dev):02x}"
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []
        for n in fds:
            try:
                total += _unlinked_blocks(os.stat(f"/proc/{pid}/fd/{n}"), dev, seen)
            except OSError:
                pass
        if not map_files:
            continue
        try:
            with open(f"/proc/{pid}/maps", "rb") as f:
                maps = f.read(1 << 22).decode("ascii", "replace").splitlines()
        except OSError:
            continue
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) < 6 or fields[3] != want or not line.endswith(" (deleted)"):
                continue
            try:
                total += _unlinked_blocks(os.stat(f"/proc/{pid}/map_files/{fields[0]}"), dev, seen)
            except PermissionError:
                map_files = False  # takes CAP_SYS_ADMIN: not this user
                break
            except OSError:
                pass
    return total


class Meter:
    """The scratch directory's usage in bytes (see the module's doc)."""

    def __init__(self, scratch: str) -> None:
        self.scratch = scratch
        self.tmpfs_fd: int | None = None
        try:
            self.dev = os.stat(scratch).st_dev
        except OSError:
            self.dev = -1

    def attach(self, worker_pid: int | None) -> bool:
        """Keep a descriptor of the worker's scratch tmpfs (seen from its
        mount namespace); False when it cannot be reached."""
        if worker_pid is None:
            return False
        flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
        try:
            fd = os.open(f"/proc/{worker_pid}/root{self.scratch}", flags)
        except OSError:
            return False
        try:
            if os.fstat(fd).st_dev != self.dev:  # the tmpfs, not our directory
                self.tmpfs_fd = fd
                return True
        except OSError:
            pass
        os.close(fd)
        return False

    def usage(self, root_pid: int | None) -> int:
        total = files.tree_usage(self.scratch)
        if self.tmpfs_fd is not None:
            try:
                sv = os.fstatvfs(self.tmpfs_fd)
                total += (sv.f_blocks - sv.f_bfree) * sv.f_frsize
            except OSError:
                pass
        elif root_pid is not None and self.dev >= 0:
            total += held_unlinked(tree_pids(root_pid), self.dev)
        return total

    def close(self) -> None:
        if self.tmpfs_fd is not None:
            os.close(self.tmpfs_fd)
            self.tmpfs_fd = None
