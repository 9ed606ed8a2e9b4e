"""The typed messages between tvmffi and its worker (sandbox/messages.py):
every type survives encode -> JSON -> decode, and what is not the expected
message is refused."""

import json

import pytest

from tvmffi_cli.sandbox import kernel, messages

APPLIED = kernel.Applied(
    True, ("seccomp", "landlock-fs"), ("pid-namespace",), ("no ns",), 1 << 30, 17
)

EXAMPLES = [
    messages.Config(True, 1 << 30, 17, "/tmp/s", 1 << 20, 9, ("/lib.so",), ("/out",), 2),
    messages.Config(False, None, None, "", None, -1, (), (), 1),
    messages.Config(True, None, None, "/tmp/s", None, 9, (), (), 2, order_fd=11),
    messages.Hello(2, APPLIED),
    messages.Request("call.task", {"path": "/lib.so", "args": [1, 2.5, "x", None]}),
    messages.Request("sandbox.selftest"),
    messages.Reply(True, {"result": [1, {"a": None}]}),
    messages.Reply(True, None),
    messages.Reply(False, error=messages.TaskError("InputError", "bad", 2, True)),
    messages.Reply(False, error=messages.TaskError("KeyError", "'x'", 3, False, "Traceback...")),
]


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: type(m).__name__)
def test_round_trip(msg):
    wire = json.loads(json.dumps(messages.encode(msg)))
    assert messages.decode(type(msg), wire) == msg


def test_every_message_type_is_exercised():
    assert {type(m) for m in EXAMPLES} == set(messages.Message.__args__)


@pytest.mark.parametrize(
    "kind,obj",
    [
        (messages.Hello, {"pid": 2, "sandbox": {}}),  # no greeting mark
        (messages.Hello, {"hello": 1, "pid": "2", "sandbox": {}}),
        (messages.Config, {"sandbox": 1}),
        (messages.Request, {"task": 3}),
        (messages.Reply, {"ok": "yes"}),
        (
            messages.Reply,
            {
                "ok": False,
                "error": {"type": "X", "message": "m", "exit_code": True, "known": False},
            },
        ),
        (messages.Reply, [1, 2]),
    ],
)
def test_not_the_expected_message(kind, obj):
    with pytest.raises(messages.MessageError):
        messages.decode(kind, obj)


# -- the frames under the messages (sandbox/protocol.py) ----------------------


def _frame(key, direction, seq, payload):
    """A frame built from protocol.py's documented layout, independently of it."""
    import hashlib
    import struct

    head = struct.pack(">I", len(payload))
    mac = hashlib.blake2b(
        direction + seq.to_bytes(8, "big") + head + payload, key=key, digest_size=32
    ).digest()
    return head + mac + payload


def _read_with(key, data, parent=True):
    import os

    from tvmffi_cli.sandbox import protocol

    r, w = os.pipe()
    try:
        os.write(w, data)
        os.close(w)
        w = -1
        return protocol.Endpoint(key, r, -1, parent=parent).recv(deadline=None)
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_frame_is_the_documented_layout():
    from tvmffi_cli.sandbox import protocol

    key = bytes(range(32))
    payload = b'{"ok":true}'
    assert protocol.encode(key, b"W", 0, {"ok": True}) == _frame(key, b"W", 0, payload)
    assert _read_with(key, _frame(key, b"W", 0, payload)) == {"ok": True}


@pytest.mark.parametrize(
    "what", ["other key", "replayed", "wrong direction", "flipped bit", "cut short"]
)
def test_frames_not_made_with_the_key_and_order_are_refused(what):
    from tvmffi_cli.sandbox import protocol

    key = bytes(range(32))
    payload = b'{"ok":true}'
    data = {
        "other key": _frame(bytes(32), b"W", 0, payload),
        "replayed": _frame(key, b"W", 1, payload),
        "wrong direction": _frame(key, b"P", 0, payload),
        "flipped bit": _frame(key, b"W", 0, payload)[:-1] + b"]",
        "cut short": _frame(key, b"W", 0, payload)[:-3],
    }[what]
    with pytest.raises(protocol.ChannelError):
        _read_with(key, data)
