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
    messages.Spawn(sent=7, received=12),
    messages.Spawned(pid=3),
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
        (messages.Spawn, {"sent": -1, "received": 0}),
        (messages.Spawn, {"sent": 1}),
        (messages.Spawned, {"pid": 1}),  # the namespace's init is never a probe child
        (messages.Spawned, {"pid": True}),
    ],
)
def test_not_the_expected_message(kind, obj):
    with pytest.raises(messages.MessageError):
        messages.decode(kind, obj)
