"""The typed protocol of `tvmffi inspect` (inspect/messages.py): what the
worker sends decodes to what it meant, and the parent refuses a reply that
does not decode instead of reading what it can of it. Cheap: no worker runs
(the sandbox's answers are stood in for)."""

import json
from pathlib import Path

import pytest

import fixturebuild
from tvmffi_cli.inspect import engine, loads
from tvmffi_cli.inspect.messages import (
    CudaDevice,
    CudaDevices,
    FieldInfo,
    FunctionInfo,
    GlobalMeta,
    Introspect,
    Introspected,
    Loaded,
    LoadFailed,
    LoadOnly,
    MethodInfo,
    TypeInfo,
    decode_introspect,
    decode_introspected,
    decode_load_only,
    decode_load_reply,
    encode,
)
from tvmffi_cli.sandbox import process
from tvmffi_cli.sandbox.messages import MessageError

#: The official test library (apache-tvm-ffi, a test dependency): a loadable host library.
#: Located, never imported: importing tvm_ffi would load the official
#: libtvm_ffi.so into this test process beside ours (same soname).
T = str(
    (fixturebuild.official_package_dir() or Path("/nonexistent")) / "lib" / "libtvm_ffi_testing.so"
)


def _wire(obj):
    """As the channel carries it: JSON text and back."""
    return json.loads(json.dumps(obj))


def test_messages_survive_the_channel():
    reply = Introspected(
        functions=(
            FunctionInfo("add", '{"x": 1}', {"x": 1}, "adds"),
            FunctionInfo("f", None, None, None),
        ),
        globals=("a.b", "c"),
        types=(
            TypeInfo(
                "t.T",
                70,
                "ffi.Object",
                (FieldInfo("x", -1, 3, None, '{"type_schema": "int"}'),),
                (MethodInfo("make", "makes one", True, None),),
                "a type",
                ("__ffi_init__",),
            ),
        ),
        global_info=(GlobalMeta("a.b", "{}"), GlobalMeta("c", None)),
        module={"kind": "library"},
        errors=("e",),
        warnings=("w1", "w2"),
        cuda_devices=CudaDevices((CudaDevice(0, "GPU", (9, 0)),), None),
    )
    assert decode_introspected(_wire(encode(reply))) == reply
    bare = Introspected((), (), (), (), None, (), ())
    assert decode_introspected(_wire(encode(bare))) == bare
    req = Introspect("/lib.so", None, True)
    assert decode_introspect(_wire(encode(req))) == req
    assert decode_load_only(_wire(encode(LoadOnly("/lib.so", "/rt.so")))) == LoadOnly(
        "/lib.so", "/rt.so"
    )
    assert decode_load_reply(_wire(encode(Loaded(3, 4)))) == Loaded(3, 4)
    assert decode_load_reply(_wire(encode(LoadFailed("no")))) == LoadFailed("no")


def _introspected(**change):
    obj = encode(Introspected((FunctionInfo("f", None, None, None),), (), (), (), None, (), ()))
    obj.update(change)
    return obj


@pytest.mark.parametrize(
    "obj, message",
    [
        ([], "reply: not a JSON object"),
        (_introspected(functions=5), "reply: field 'functions' is int, expected a list"),
        (
            _introspected(functions=[{"name": 1, "metadata_raw": None, "doc": None}]),
            "reply.functions[0]: field 'name' is int, expected a string",
        ),
        (
            _introspected(globals=["a", 2]),
            "reply: field 'globals' is list, expected a list of strings",
        ),
        (_introspected(types=["t"]), "reply.types[0]: not a JSON object"),
        (
            _introspected(
                types=[
                    {
                        "type_key": "t.T",
                        "type_index": 70,
                        "parent_type_key": None,
                        "fields": [{"name": "x", "static_type_index": "int", "flags": 0}],
                        "methods": [],
                        "doc": None,
                        "attrs": [],
                    }
                ]
            ),
            "reply.types[0].fields[0]: field 'static_type_index' is str, expected an integer",
        ),
        (_introspected(module="m"), "reply: field 'module' is str, expected a JSON object"),
        (
            _introspected(global_info=[{"name": "g", "metadata": 7}]),
            "reply.global_info[0]: field 'metadata' is int, expected a string",
        ),
        (
            _introspected(
                cuda_devices={"devices": [{"ordinal": 0, "name": "G", "compute_capability": [9]}]}
            ),
            "reply.cuda_devices.devices[0]: field 'compute_capability' is list, expected [major, minor]",
        ),
        (_introspected(errors=None), "reply: field 'errors' is NoneType, expected a list"),
    ],
)
def test_a_malformed_introspected_is_refused(obj, message):
    with pytest.raises(MessageError) as e:
        decode_introspected(obj)
    assert str(e.value) == message


@pytest.mark.parametrize(
    "obj, message",
    [
        (
            {"status": "loaded", "globals": -1, "types": 0},
            "reply: field 'globals' is int, expected a count (>= 0)",
        ),
        (
            {"status": "loaded", "types": 0},
            "reply: field 'globals' is missing, expected an integer",
        ),
        ({"status": "ok"}, "reply: status 'ok' is not a reply to a load"),
        ({"status": "load_failed"}, "reply: field 'message' is missing, expected a string"),
    ],
)
def test_a_malformed_load_reply_is_refused(obj, message):
    with pytest.raises(MessageError) as e:
        decode_load_reply(obj)
    assert str(e.value) == message


def test_the_engine_reads_nothing_of_a_tampered_reply(monkeypatch):
    sent = []

    def run_task(task, request, **kw):
        sent.append((task, request))
        return {"functions": 5, "globals": ["planted"]}

    monkeypatch.setattr(process, "run_task", run_task)
    monkeypatch.delenv("TVMFFI_RUNTIME", raising=False)
    from tvmffi_cli.binary import open_binary

    with open_binary(T) as b:
        rep = engine.static_report(b)
        engine.dynamic_part(rep, b, T, 30.0)
    assert sent == [("inspect.task", {"path": T, "runtime": None, "cuda_devices": False})]
    assert rep["errors"][-1] == {
        "where": "load",
        "message": "loading the library failed "
        "(MessageError: reply: field 'functions' is int, expected a list)",
    }
    assert rep["globals"] == [] and rep["types"] == []


class _Worker:
    """A stand-in for sandbox.process.Worker answering `reply`."""

    reply: object = None

    def __init__(self, **kw):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def call(self, task, request, timeout):
        assert (task, request) == ("inspect.load_task", {"path": T, "runtime": "/rt.so"})
        return self.reply


@pytest.mark.parametrize(
    "reply, expected",
    [
        ({"status": "loaded", "globals": 2, "types": 0}, (True, "")),
        (
            {"status": "load_failed", "message": "undefined symbol: X"},
            (False, "undefined symbol: X"),
        ),
        (
            {"status": "loaded"},
            (
                False,
                "the worker's reply is malformed (reply: field 'globals' is missing, expected an integer)",
            ),
        ),
        ("loaded", (False, "the worker's reply is malformed (reply: not a JSON object)")),
    ],
)
def test_a_range_load_trusts_only_a_reply_that_decodes(monkeypatch, reply, expected):
    monkeypatch.setattr(_Worker, "reply", reply)
    monkeypatch.setattr(process, "Worker", _Worker)
    assert loads.load_on(T, "/rt.so", 5.0) == expected
