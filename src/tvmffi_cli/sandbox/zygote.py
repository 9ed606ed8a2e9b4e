"""A worker that loaded a library once and forks a probe child per order (conform).

A crash of library code in an ordinary worker costs a new worker, which loads
the library again (a second of start-up and loading for a large library).
Here the worker loads it and becomes a *zygote*: it runs no more library code,
waits for orders on a socket of its own and forks a probe child for each
(in C: no Python runs in the zygote between two forks, so it writes, and
copies, almost none of the pages it shares with the child); the probe child
speaks the main lane of the channel (sandbox/protocol.py) as the
worker would have, and a crash ends only it.

Process tree: the supervisor O, the init A (or a second subreaper without a
PID namespace), the zygote B, and B's probe child C. B makes C through a
middle process that exits at once (kernel.fork_orphan: a vfork child that
forks; else two forks), so C is reparented to A: A, trusted C code,
reaps C and O passes its end on to tvmffi as a status line (its wait status
and peak RSS). The verdict on a probe child comes from that record, never
from B's or C's word. B names C's pid; a lying zygote can point at another
real end at most (a crash stays a crash: the events stop before "done").

Fallback (today's worker, replaced after each crash) when the zygote may not
fork: the library started threads at load (a fork copies their locks
mid-use), it opened a GPU device node at load (CUDA was initialized in the
zygote: it does not survive fork; a GPU library must initialize in each
probe child), there is no supervisor to reap the children, or seccomp without a
PID namespace or Landlock's signal scope would keep a probe child from
signalling itself (abort() would not end it by SIGABRT).

Parent side: StatusStream, spawn(), recv(), end_child(); child side: refusal(),
serve_orders().
"""

from __future__ import annotations

import os
import select
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from . import failures, files, kernel, protocol

if TYPE_CHECKING:
    from typing import Protocol

    from .relay import Relay

    class Worker(Protocol):
        """What this module uses of process.Worker (which imports it)."""

        chan: protocol.Endpoint | None
        status: StatusStream | None
        order_w: int | None
        child: Child | None
        relay: Relay | None
        fault_fd: int | None

        def read_line(self, timeout: float | None = None) -> Any: ...
        def kill(self) -> None: ...
        def verdict(
            self, rc: int | None, peak_kb: int | None, tail: str
        ) -> failures.ChildCrashed: ...


#: An order on the order socket: the main lane's frame counts (sent, received)
#: the probe child resumes from; the answer: its pid (0: the fork failed).
#: The same layout as tvmffi_sandbox_zygote_serve's (runtime/sandbox).
ORDER = struct.Struct("<QQ")
ANSWER = struct.Struct("<i")

#: How long the parent waits for the zygote's answer to an order, and for
#: the supervisor's record of a probe child known to be ending.
ORDER_TIMEOUT = 30.0
END_GRACE = 5.0


class ZygoteLost(Exception):
    """The zygote cannot serve another probe child (the caller replaces the worker)."""


# -- parent side ---------------------------------------------------------------


class StatusStream:
    """The supervisor's lines on status_fd: "c <pid> <status> <maxrss_kb>" as
    probe children (and orphans) end, "m <kb>" when its memory watch killed
    the tree, then "<status> <maxrss_kb>" of the worker itself when it exits."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = b""
        self._children: dict[int, tuple[int, int]] = {}
        self._final: tuple[int, int] | None = None
        #: What the tree held (KiB) when the supervisor killed it for memory.
        self.memory_kb: int | None = None
        self.eof = False

    def pump(self, wait: float = 0.0) -> None:
        """Read what the supervisor wrote (waiting up to `wait` seconds for it)."""
        while not self.eof:
            try:
                ready, _, _ = select.select([self.fd], [], [], wait)
            except (OSError, ValueError):
                self.eof = True
                return
            if not ready:
                return
            wait = 0.0
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            if not data:
                self.eof = True
                break
            self._buf += data
            *lines, self._buf = self._buf.split(b"\n")
            for line in lines:
                self._parse(line.split())

    def _parse(self, parts: list[bytes]) -> None:
        try:
            if len(parts) == 4 and parts[0] == b"c":
                self._children[int(parts[1])] = (int(parts[2]), int(parts[3]))
            elif len(parts) == 2 and parts[0] == b"m":
                self.memory_kb = int(parts[1])
            elif len(parts) == 2:
                self._final = (int(parts[0]), int(parts[1]))
        except ValueError:
            pass  # not the supervisor's line: nothing to learn from it

    def child(self, pid: int) -> tuple[int, int] | None:
        """(wait status, peak RSS KiB) of probe child `pid` once it ended."""
        return self._children.pop(pid, None)

    def final(self, wait: float = 2.0) -> tuple[int | None, int | None]:
        """(wait status, peak RSS KiB) of the worker proper, after it exited."""
        deadline = time.monotonic() + wait
        while self._final is None and not self.eof and time.monotonic() < deadline:
            self.pump(max(0.0, deadline - time.monotonic()))
        return self._final if self._final is not None else (None, None)

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.eof = True


@dataclass
class Child:
    """The living probe child: its pid, and where its output starts."""

    pid: int
    output_mark: int
    fault_mark: int
    #: The supervisor's record once it ended: (wait status, peak RSS KiB).
    ended: tuple[int, int] | None = None


def _unread(fd: int) -> int:
    """Bytes written to a pipe and not read yet (FIONREAD works on either end)."""
    import fcntl
    import termios

    buf = bytearray(4)
    try:
        fcntl.ioctl(fd, termios.FIONREAD, buf)
    except OSError:
        return -1
    return int.from_bytes(buf, "little")


def order_socket() -> tuple[int, int]:
    """(the zygote's end, tvmffi's end) of the order socket: orders one way,
    the zygote's answers (a pid each) the other."""
    import socket

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    return theirs.detach(), ours.detach()


def spawn(w: Worker) -> Child:
    """Order a new probe child; ZygoteLost when the zygote cannot give one."""
    chan, status, order_w = w.chan, w.status, w.order_w
    if chan is None or status is None or order_w is None:
        raise ZygoteLost("the worker is gone")
    # The main lane resumes where the last probe child left it: nothing of
    # its may be half-read, and no request of ours may wait unread in the
    # pipe (the next child would take it as its own).
    if chan.pending() or _unread(chan.out_fd) != 0:
        raise ZygoteLost("the last probe child left the channel mid-message")
    try:
        protocol.write_all(order_w, ORDER.pack(chan.send_seq, chan.recv_seq))
        pid = _answer(order_w, time.monotonic() + ORDER_TIMEOUT)
    except OSError as e:
        raise ZygoteLost(f"the zygote did not fork a probe child ({e})") from None
    relay = w.relay
    child = Child(pid, relay.total if relay else 0, _log_size(w.fault_fd))
    w.child = child
    return child


def _answer(fd: int, deadline: float) -> int:
    """The zygote's answer to an order: the probe child's pid."""
    data = b""
    while len(data) < ANSWER.size:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise OSError("no answer in time")
        chunk = os.read(fd, ANSWER.size - len(data))
        if not chunk:
            raise OSError("the zygote is gone")
        data += chunk
    (pid,) = ANSWER.unpack(data)
    if pid <= 1:  # 0: the fork failed; the namespace's init is never a probe child
        raise OSError(f"answered pid {pid}")
    return int(pid)


def _log_size(fd: int | None) -> int:
    try:
        return os.fstat(fd).st_size if fd is not None else 0
    except OSError:
        return 0


def recv(w: Worker, timeout: float | None) -> Any:
    """The next message of the probe child. Its end raises ChildCrashed with
    `probe_child` set (the zygote lives on: spawn() gives the next child);
    the worker's end, a timeout or a tampered channel end the worker as
    Worker.read_line does."""
    chan, status, child = w.chan, w.status, w.child
    if chan is None or status is None or child is None:
        return w.read_line(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if child.ended is None:
            status.pump()
            child.ended = status.child(child.pid)
        if child.ended is not None or status.eof:
            # Dead: what it wrote before dying is in the pipe already.
            msg = _try_recv(w, 0.0)
            if msg is not None:
                return msg
            if child.ended is None:
                return w.read_line(2.0)  # the worker ended: its death says how
            if chan.pending():
                w.kill()
                raise failures.ChannelTampered("a probe child died in the middle of a message")
            raise child_death(w, child, child.ended)
        if chan.pending():
            msg = _try_recv(w, 0.0)
            if msg is not None:
                return msg
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            return w.read_line(0.0)  # times out the way a worker does
        try:
            ready, _, _ = select.select([chan.in_fd, status.fd], [], [], wait)
        except (OSError, ValueError):
            return w.read_line(0.0)
        if chan.in_fd in ready:
            msg = _try_recv(w, 0.0)
            if msg is not None:
                return msg


def _try_recv(w: Worker, wait: float) -> Any:
    """One message if a whole one is there, else None."""
    chan = w.chan
    assert chan is not None
    if not chan.pending():  # else a whole frame may wait in the buffer already
        try:
            r, _, _ = select.select([chan.in_fd], [], [], wait)
        except (OSError, ValueError):
            return None
        if not r:
            return None
    try:
        return chan.recv(time.monotonic())
    except protocol.ChannelTimeout:
        return None  # part of a frame: the rest is on its way (or never comes)
    except protocol.ChannelClosed:
        time.sleep(0.01)  # everyone is gone: the supervisor's word follows
        return None
    except protocol.ChannelError as e:
        w.kill()
        raise failures.ChannelTampered(str(e)) from None


def child_death(w: Worker, child: Child, record: tuple[int, int]) -> failures.ChildCrashed:
    """The verdict on an ended probe child, from the supervisor's record."""
    wait_status, peak_kb = record
    w.child = None
    try:
        rc: int | None = os.waitstatus_to_exitcode(wait_status)
    except ValueError:
        rc = None
    tail = ""
    relay = w.relay
    if relay is not None:
        relay.settle()
        tail = _text(relay.since(child.output_mark))
    if w.fault_fd is not None:
        start = child.fault_mark
        data = files.read_log(w.fault_fd, start + 4096)[start:]
        tail += _text(data)
    death = w.verdict(rc, peak_kb, tail)
    death.probe_child = True
    return death


def _text(data: bytes) -> str:
    from .. import text

    return text.terminal(text.from_bytes(data))


def end_child(w: Worker, wait: float = END_GRACE) -> int | None:
    """Wait for the probe child, which was told to end (or ends itself), to
    be reaped: its exit code (negative: a signal), None if it did not end."""
    child, status = w.child, w.status
    if child is None or status is None:
        return None
    deadline = time.monotonic() + wait
    while True:
        rec = child.ended or status.child(child.pid)
        if rec is not None:
            w.child = None
            return os.waitstatus_to_exitcode(rec[0])
        left = deadline - time.monotonic()
        if left <= 0 or status.eof:
            return None
        status.pump(min(left, 0.1))


# -- child side (the worker) -----------------------------------------------------

#: Set by worker.main: the order socket (-1: none) and what the sandbox applied.
order_fd = -1
applied: tuple[str, ...] = ()


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def refusal() -> str | None:
    """Why this worker may not fork probe children (None: it may)."""
    if order_fd < 0:
        return "no order socket"
    if "subreaper" not in applied:
        return "no supervisor to reap probe children"
    if "seccomp" in applied and not {"pid-namespace", "landlock-scope"} & set(applied):
        return "a probe child could not signal itself (seccomp without a PID namespace or Landlock signal scope)"
    # A thread just joined (the probe watchdog) may linger in the kernel a
    # moment after Python is done with it; the library's own stay.
    deadline = time.monotonic() + 0.2
    n = _threads()
    while n != 1 and time.monotonic() < deadline:
        time.sleep(0.002)
        n = _threads()
    if n != 1:
        return f"{n - 1} other thread(s) after load: a fork would copy their locks mid-use"
    node = _open_device()
    if node is not None:
        return f"the library opened {node} while loading: a GPU context does not survive fork"
    return None


def _open_device() -> str | None:
    """A GPU device node (policy.device_nodes) this process holds open: the
    library initialized CUDA (or ROCm) at load, which a forked copy cannot
    use; each probe child must initialize its own."""
    from .policy import device_nodes

    nodes = {os.path.realpath(p) for p in device_nodes()}
    if not nodes:
        return None
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target in nodes:
            return target
    return None


def serve_orders(chan: protocol.Endpoint, before_order: Callable[[], None] | None = None) -> bool:
    """The zygote's loop: a probe child per order. Returns True in a probe
    child once it has its order (it then serves the main lane), False in the
    zygote when the orders end (the parent closed its end: the worker exits).
    A child forked ahead of its order runs `before_order` while it waits."""
    if kernel.has_order_loop():
        fd = kernel.serve_orders(order_fd)
        if fd is None:
            return False
        if before_order is not None:
            before_order()
        counts = _await_order(fd)
    else:
        got = _serve_in_python()
        if got is None:
            return False
        if before_order is not None:
            before_order()
        counts = got
    chan.recv_seq, chan.send_seq = counts
    return True


def _await_order(fd: int) -> tuple[int, int]:
    """A child forked ahead: its order from the zygote. The zygote ended
    without one: nothing ran here, the child exits."""
    data = protocol.read_exact(fd, ORDER.size)
    if data is None:
        os._exit(0)
    os.close(fd)
    sent, received = ORDER.unpack(data)
    return int(sent), int(received)


def _serve_in_python() -> tuple[int, int] | None:
    """serve_orders without the sandbox helper: the same orders and answers."""
    while True:
        data = protocol.read_exact(order_fd, ORDER.size)
        if data is None:
            return None
        counts = ORDER.unpack(data)
        try:
            forked = kernel.fork_orphan()
            pid = forked if forked is not None else _fork_twice()
        except OSError:
            pid = -1  # answered as 0: the parent replaces this worker
        if pid == 0:
            os.close(order_fd)
            return counts
        protocol.write_all(order_fd, ANSWER.pack(max(pid, 0)))


def _fork_twice() -> int:
    """Fork a grandchild and let the middle process exit, so the grandchild
    is reparented to the supervisor's init, which reports its end. Returns 0
    in the grandchild, its pid here."""
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(r)
        try:
            pid = os.fork()
        except OSError:
            os._exit(1)
        if pid == 0:
            os.close(w)
            return 0
        os.write(w, pid.to_bytes(4, "little"))
        os._exit(0)
    os.close(w)
    try:
        data = os.read(r, 4)
    finally:
        os.close(r)
    os.waitpid(middle, 0)
    if len(data) != 4:
        raise OSError("the probe child could not be forked")
    return int.from_bytes(data, "little")
