"""Framing of the parent <-> worker channel.

Every message is one frame:

    length   4 bytes, big-endian, of the payload (at most MAX_FRAME)
    mac      32 bytes, keyed BLAKE2b-256(key; direction || seq || length || payload)
    payload  JSON, UTF-8

`key` is 32 random bytes the parent writes to the request pipe before the
worker loads anything; `direction` is b"P" (parent -> worker) or b"W"; `seq`
counts the frames of one direction (8 bytes, big-endian) from 0, so a frame
cannot be replayed, reordered or sent the other way. Whatever the library
writes to the reply pipe is not a frame under this key: the parent reports
the channel as tampered with (a failure), never as a result.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

# hmac.compare_digest's C implementation (what operator.py re-exports).
from _operator import _compare_digest as compare_digest
from typing import Any

try:
    # The C module itself: importing hashlib or hmac also loads OpenSSL, a
    # tenth of a `tvmffi call` on both sides of the channel.
    from _blake2 import blake2b
except ImportError:  # another Python implementation
    from hashlib import blake2b

KEY_BYTES = 32
MAC_BYTES = 32
#: The largest payload either side accepts; a reply past it is refused
#: before it is read (a library cannot make the parent buffer gigabytes).
MAX_FRAME = 64 << 20
_HEADER = struct.Struct(">I")
TO_WORKER = b"P"
TO_PARENT = b"W"


class ChannelError(Exception):
    """The stream is not a sequence of authentic frames (tampered or cut)."""


class ChannelTimeout(Exception):
    """No complete frame arrived before the deadline."""


class ChannelClosed(Exception):
    """End of stream at a frame boundary."""


def new_key() -> bytes:
    return os.urandom(KEY_BYTES)


def _mac(key: bytes, direction: bytes, seq: int, payload: bytes) -> bytes:
    msg = direction + seq.to_bytes(8, "big") + _HEADER.pack(len(payload))
    # Keyed BLAKE2 is a MAC by design (no HMAC construction needed).
    return blake2b(msg + payload, key=key, digest_size=MAC_BYTES).digest()


def encode(key: bytes, direction: bytes, seq: int, obj: Any) -> bytes:
    payload = json.dumps(obj, separators=(",", ":")).encode("ascii")
    if len(payload) > MAX_FRAME:
        raise ValueError(f"message of {len(payload)} bytes is over the {MAX_FRAME}-byte cap")
    return _HEADER.pack(len(payload)) + _mac(key, direction, seq, payload) + payload


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exact(fd: int, n: int) -> bytes | None:
    """n bytes from fd; None when it reaches end of file first."""
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


class Endpoint:
    """One side of the channel: send() on `out_fd`, recv() from `in_fd`."""

    def __init__(self, key: bytes, in_fd: int, out_fd: int, *, parent: bool) -> None:
        self.key = key
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.send_dir = TO_WORKER if parent else TO_PARENT
        self.recv_dir = TO_PARENT if parent else TO_WORKER
        self.send_seq = 0
        self.recv_seq = 0
        self._buf = bytearray()

    def pending(self) -> int:
        """Bytes read from the pipe and not yet returned as a message."""
        return len(self._buf)

    def send(self, obj: Any) -> None:
        data = encode(self.key, self.send_dir, self.send_seq, obj)
        self.send_seq += 1
        write_all(self.out_fd, data)

    def _fill(self, need: int, deadline: float | None) -> None:
        while len(self._buf) < need:
            if deadline is not None:
                wait = max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([self.in_fd], [], [], wait)
                if not ready:
                    raise ChannelTimeout()
            chunk = os.read(self.in_fd, min(1 << 20, max(need - len(self._buf), 1 << 16)))
            if not chunk:
                if self._buf:
                    raise ChannelError(
                        f"the stream ended inside a frame ({len(self._buf)} of {need} bytes)"
                    )
                raise ChannelClosed()
            self._buf += chunk

    def recv(self, deadline: float | None = None) -> Any:
        """The next authentic message; ChannelError if the bytes are not one."""
        head = _HEADER.size + MAC_BYTES
        self._fill(head, deadline)
        (length,) = _HEADER.unpack_from(self._buf, 0)
        if length > MAX_FRAME:
            raise ChannelError(
                f"a frame claims {length} bytes (cap {MAX_FRAME}): not written by tvmffi"
            )
        self._fill(head + length, deadline)
        mac = bytes(self._buf[_HEADER.size : head])
        payload = bytes(self._buf[head : head + length])
        del self._buf[: head + length]
        if not compare_digest(mac, _mac(self.key, self.recv_dir, self.recv_seq, payload)):
            raise ChannelError(
                "a message failed authentication: something other than "
                "tvmffi wrote to the worker's channel"
            )
        self.recv_seq += 1
        try:
            return json.loads(payload.decode("ascii"))
        except ValueError as e:
            raise ChannelError(f"an authentic message is not JSON: {e}") from None
