"""The parent's side of places a worker can write: its scratch directory,
staging directories, its fault log.

The library runs as the same user as tvmffi (without a user namespace), so
whatever it can write it can also replace by a symlink (to a file only the
user may read), a FIFO (that blocks a reader forever), a huge file, or a
directory it made unreadable. The parent therefore never follows a link
there, reads only regular files, with a size bound and without blocking, and
removes such trees itself, restoring directory modes on the way without ever
following a symlink.

    d = private_dir("tvmffi-scratch-")  # a new 0700 directory, as tempfile.mkdtemp
    fd = fault_log()                    # handed to the worker; read after a crash
    read_log(fd, 4096)
    with open_untrusted(path) as f: ... # O_NOFOLLOW|O_NONBLOCK, regular files only
    tree_usage(scratch)                 # bytes under a tree, links not followed
    remove_tree(scratch)                # whatever modes the library set
"""

from __future__ import annotations

import os
import stat
import sys
from typing import BinaryIO

#: Directory entries tree_usage() visits before it stops counting (each
#: entry still costs the tree its inode: a library cannot hide data in names).
USAGE_WALK_CAP = 200_000
_ENTRY_COST = 4096
_MAX_DEPTH = 256


def private_dir(prefix: str) -> str:
    """A new directory only this user may enter (mode 0700) in the temporary
    directory, as tempfile.mkdtemp(prefix=...) makes, without importing
    tempfile (with shutil, random and the compressors: a thirtieth of a
    `tvmffi call`)."""
    root = _temp_root()
    for _ in range(100):
        path = os.path.join(root, prefix + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return os.path.abspath(path)
    raise FileExistsError(f"{root}: no free name for a {prefix}* directory")


def _temp_root() -> str:
    """tempfile.gettempdir()'s choice: $TMPDIR, $TEMP, $TMP, /tmp, /var/tmp,
    /usr/tmp, the current directory; the first usable one."""
    tf = sys.modules.get("tempfile")
    if tf is not None:  # loaded anyway: its answer (and tempfile.tempdir) decides
        return str(tf.gettempdir())
    named = [os.environ.get(n) for n in ("TMPDIR", "TEMP", "TMP")]
    for d in [*filter(None, named), "/tmp", "/var/tmp", "/usr/tmp"]:
        if os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return d
    return os.getcwd()


class Untrusted(OSError):
    """A file in a worker-writable place is not a plain regular file."""


def open_untrusted(path: str, dir_fd: int | None = None) -> BinaryIO:
    """Open a file a worker could have replaced: no symlink followed, no
    blocking on a FIFO or device, regular files only (Untrusted otherwise)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == getattr(os, "ELOOP", 40):
            raise Untrusted(e.errno, f"{path}: a symlink where a file was expected") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Untrusted(f"{path}: not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def fault_log() -> int:
    """A descriptor for the worker's fault handler, created here so there is no
    name in the scratch directory the library could replace."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create("tvmffi-fault-log", os.MFD_CLOEXEC)
        except OSError:
            pass
    import tempfile

    f = tempfile.TemporaryFile()
    fd = os.dup(f.fileno())
    f.close()
    return fd


def read_log(fd: int, limit: int) -> bytes:
    """The first `limit` bytes of a fault log (a regular file of ours)."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.pread(fd, limit, 0)
    except OSError:
        return b""


def _dir_fd(name: str, dir_fd: int | None, writable: bool = False) -> int:
    """Open a directory without following a link, making it usable first if
    the library took our rights away (chmod 0 on a directory we own);
    `writable`: also give the owner write access (to remove entries)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        pass
    else:
        try:
            mode = os.fstat(fd).st_mode
            if writable and mode & 0o700 != 0o700:
                os.fchmod(fd, stat.S_IMODE(mode) | 0o700)
        except OSError:
            pass
        return fd
    # An O_PATH descriptor needs no rights on the directory itself; chmod
    # through /proc/self/fd acts on exactly that directory, never a link.
    path_fd = os.open(
        name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
    )
    try:
        os.chmod(f"/proc/self/fd/{path_fd}", 0o700)
    finally:
        os.close(path_fd)
    return os.open(name, flags, dir_fd=dir_fd)


def _remove_in(fd: int, depth: int, root: int) -> bool:
    """Empty the directory `fd`; True when a too-deep subtree was moved up
    to `root` (the caller passes over root again)."""
    moved = False
    for name in os.listdir(fd):
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            try:
                os.unlink(name, dir_fd=fd)
            except OSError:
                pass
            continue
        if depth >= _MAX_DEPTH:
            # Keep descriptors bounded: hoist the subtree to the top.
            try:
                os.rename(name, f".tvmffi-deep-{st.st_ino}", src_dir_fd=fd, dst_dir_fd=root)
                moved = True
            except OSError:
                pass
            continue
        try:
            sub = _dir_fd(name, fd, writable=True)
        except OSError:
            continue
        try:
            moved |= _remove_in(sub, depth + 1, root)
        finally:
            os.close(sub)
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError:
            pass
    return moved


def remove_tree(path: str | None) -> None:
    """Remove a tree a worker could write, whatever modes it set on its own
    directories; never follows a symlink (a link is removed, not its target)."""
    if not path:
        return
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    try:
        fd = _dir_fd(path, None, writable=True)
    except OSError:
        return
    try:
        for _ in range(10_000):
            try:
                if not _remove_in(fd, 0, fd):
                    break
            except OSError:
                break
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def tree_usage(path: str, cap: int = USAGE_WALK_CAP) -> int:
    """Bytes a tree takes on disk (allocated blocks, at least one page per
    entry), links not followed, directories the library made unreadable
    included, at any depth; counts at most `cap` entries (already a lot).
    Two descriptors at a time: the walk climbs back by "..", checked to be
    the directory it came from (a tree renamed under it ends the walk)."""
    try:
        root = _dir_fd(path, None)
    except OSError:
        return 0
    total, budget, cur = 0, cap, root
    try:
        stack = [(os.listdir(root), _identity(os.fstat(root)))]
        while stack:
            names, _ = stack[-1]
            if not names:
                stack.pop()
                if not stack:
                    break
                up = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=cur)
                if _identity(os.fstat(up)) != stack[-1][1]:
                    os.close(up)
                    break
                if cur != root:
                    os.close(cur)
                cur = up
                continue
            if budget <= 0:
                break
            budget -= 1
            name = names.pop()
            try:
                st = os.stat(name, dir_fd=cur, follow_symlinks=False)
            except OSError:
                continue
            total += max(st.st_blocks * 512, _ENTRY_COST)
            if not stat.S_ISDIR(st.st_mode):
                continue
            try:
                sub = _dir_fd(name, cur)
            except OSError:
                continue
            try:
                same = _identity(os.fstat(sub)) == _identity(st)
                sub_names = os.listdir(sub) if same else None
            except OSError:
                sub_names = None
            if sub_names is None:
                os.close(sub)
                continue
            if cur != root:
                os.close(cur)
            cur = sub
            stack.append((sub_names, _identity(st)))
    except OSError:
        pass
    finally:
        if cur != root:
            os.close(cur)
        os.close(root)
    return total
