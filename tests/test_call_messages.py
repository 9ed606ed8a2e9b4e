"""The typed protocol of `tvmffi call`/`tvmffi bench` between the parent and
its worker (call/messages.py, call/specs.py, call/describe.py): every message
survives encode -> JSON -> decode, a reply decoded from its JSON encodes to
the same JSON, and what is not a well-formed reply is refused with one clear
error, also when the library forges it inside the worker."""

import json
import subprocess
import sys

import pytest

import fixturebuild
from test_call_helpers import InProcessCall, kernels, kitchen
from tvmffi_cli.call import describe as D
from tvmffi_cli.call import messages as M
from tvmffi_cli.call import specs as S
from tvmffi_cli.sandbox.messages import Frozen, MessageError

INT = D.Scalar("int", 3)
DESCS = [
    D.Scalar("None"),
    D.Scalar("bool", True),
    INT,
    D.Scalar("float", 2.5),
    D.Scalar("float", "-Infinity"),
    D.Scalar("DataType", "bfloat16"),
    D.Scalar("Device", "cuda:1"),
    D.Scalar("void*", "0x10"),
    D.Text("héllo"),
    D.Text("ab", size=1 << 21),
    D.Blob(3, "AQID"),
    D.Blob(1 << 21, "AA==", truncated=True),
    D.ShapeValue((2, 3)),
    D.Items("Array", (INT, D.Items("List", ()))),
    D.Items("Array", (INT,), size=200_000),
    D.Pairs("Map", ((D.Text("k"), INT), (INT, D.Scalar("None")))),
    D.Pairs("Dict", (), size=5),
    D.TensorValue("Tensor", "float32", (2,), None, "cpu:0", [1.0, "NaN"], "[1., nan]"),
    D.TensorValue("DLTensor*", "int8", (4, 4), (1, 4), "cuda:0"),
    D.TensorValue("Tensor", "float32", error="unreadable tensor: NULL shape"),
    D.TensorValue("Tensor", "float32", (2,), error="unreadable tensor: bad strides"),
    D.ErrorValue("ValueError", "bad", None),
    D.Handle("Function"),
    D.Handle("Module", "cuda"),
    D.Handle("Module"),
    D.ObjectValue("my.Point", 130, (("x", INT), ("label", D.Text("here")))),
    D.ObjectValue("my.Broken", 131, (), "AttributeError: boom"),
    D.ObjectValue("...", truncated=True),
]

SPECS = [
    S.NoneArg(),
    S.IntArg(-7),
    S.BoolArg(False),
    S.FloatArg("nan"),
    S.StrArg("--json"),
    S.BytesArg(hex="00ff"),
    S.BytesArg(path="/in/blob.bin"),
    S.DtypeArg("int8x4"),
    S.DeviceArg("cuda:1", 2, 1),
    S.ShapeArg((2, 3)),
    S.ArrayArg((S.IntArg(1), S.ArrayArg(()))),
    S.MapArg(((S.StrArg("a"), S.FloatArg("2.5")), (S.IntArg(1), S.NoneArg()))),
    S.TensorArg("literal", dtype="float32", shape=(2, 3), fill="ones"),
    S.TensorArg(
        "npz", path="/in/a.npz", key="w", raw_dtype="bfloat16", device="cuda:0", owned=True
    ),
    S.Positional("12", S.IntArg(12)),
    S.Positional("[1, 2", None, "argument '[1, 2' looks like JSON but is not"),
]

CUDA = M.CudaInfo("cuda:0", "NVIDIA H100", "9.0", 13000, "libcuda.so.1", "tvmffi")
MESSAGES = [
    M.LoadRequest("/lib.so", None, "dltensor"),
    M.CallRequest("/lib.so", "f", tuple(SPECS), "/work"),
    M.CallRequest(
        "/lib.so", "f", (), "/", "object", "/rt.so", "default", "/out", True, True, True, 10, 3, 5
    ),
    M.Loaded(),
    M.LoadFailed("libx.so: cannot open shared object file"),
    M.Refused("no function 'g'", 2),
    M.Raised(M.RaisedError("ValueError", "bad", "  File ...", M.Cause("KeyError", "'k'"))),
    M.Raised(M.RaisedError("CUDA_ERROR_ILLEGAL_ADDRESS", "m", cuda=M.CudaFault(700, True)), CUDA),
    M.CallOk("export", 12, D.Items("Array", tuple(DESCS)), tuple(DESCS[:3])),
    M.CallOk(
        "global",
        0,
        INT,
        (),
        ("argument 0: bfloat16",),
        CUDA,
        (M.OutFile("arg0", "/o/arg0.npy", "ab" * 32), M.OutFile("result", None, error="no")),
    ),
    M.BenchOk("export", 20, "c", 10, 2, (60, 70), M.Stats(6.0, 6.5, 7.0)),
    M.BenchOk(
        "export",
        20,
        "cuda-events",
        10,
        2,
        (60, 70),
        M.Stats(6, 6.5, 7),
        M.BenchGpu(M.Stats(1.0, 1.5, 2.0), 4096, None, CUDA),
    ),
]


def _decode(msg, obj):
    """The decoder the receiving side uses for `msg`'s kind."""
    if isinstance(msg, (M.LoadRequest, M.CallRequest)):
        return M.decode_request(obj)
    if isinstance(msg, (M.Loaded, M.LoadFailed)):
        return M.decode_load_reply(obj)
    if isinstance(msg, M.BenchOk):
        return M.decode_bench_reply(obj)
    return M.decode_call_reply(obj)


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: type(m).__name__)
def test_round_trip(msg):
    wire = json.loads(json.dumps(M.encode(msg)))
    back = _decode(msg, wire)
    assert back == msg
    assert M.encode(back) == wire  # decoded from its JSON, encoded again: the same JSON


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: type(s).__name__)
def test_spec_round_trip(spec):
    assert S.decode_spec(json.loads(json.dumps(S.encode_spec(spec)))) == spec


def test_every_reply_type_and_description_is_exercised():
    assert {type(m) for m in MESSAGES} == set(M.Message.__args__)
    assert {type(d) for d in DESCS} == set(D.Desc.__args__)
    assert {type(s) for s in SPECS} == set(S.ArgSpec.__args__)


@pytest.fixture(scope="module")
def worker():
    call = InProcessCall(None)
    yield call
    call.close()


@pytest.mark.parametrize(
    "lib,argv",
    [
        (kitchen, ["make_point", "3", "4.5", "here"]),
        (kitchen, ["counts", '["a","b","a"]']),
        (kitchen, ["iota", "4"]),
        (kitchen, ["make_adder", "3"]),
        (kitchen, ["reverse", "0102"]),
        (kitchen, ["fail_with_cause"]),
        (kernels, ["describe", "--value", '[1, {"a": [2.5, null]}]', "--float", "-inf"]),
        (kernels, ["add_one", "--tensor", "float32[2,3]:arange"]),
    ],
    ids=lambda a: a if isinstance(a, str) else None,
)
def test_a_worker_reply_encodes_to_its_own_json(worker, lib, argv):
    """What the worker really sends: decoded and encoded again, the same JSON."""
    from dataclasses import replace

    from tvmffi_cli.call import argv as A
    from tvmffi_cli.call import files
    from tvmffi_cli.cli import call as cmd

    parsed = A.parse_argv([str(lib()), *argv], cmd.CALL_OPTIONS)
    job = cmd.base_request(parsed)
    _, args = files.private_inputs(job.request.args, job.request.cwd, into=worker.inputs)
    request = replace(job.request, runtime=None, args=args)
    wire = worker.worker.call("call.task", M.encode(request), timeout=60)
    reply = M.decode_call_reply(wire)
    assert isinstance(reply, (M.CallOk, M.Raised))
    assert M.encode(reply) == wire


OK = {"status": "ok", "resolved": "export", "call_ns": 5, "result": {"type": "None"}, "args": []}


@pytest.mark.parametrize(
    "obj,says",
    [
        ([1, 2], "reply: not a JSON object"),
        ({}, "field 'status' is missing"),
        ({"status": "loaded"}, "status 'loaded' is not a reply to this request"),
        ({"status": "input_error", "message": "m", "exit_code": True}, "'exit_code' is bool"),
        ({**OK, "call_ns": -1}, "'call_ns' is int, expected a count"),
        ({**OK, "resolved": None}, "'resolved' is NoneType, expected a string"),
        ({**OK, "args": {}}, "'args' is dict, expected a list"),
        ({**OK, "result": {"type": "int", "value": "42"}}, "'value' is str, expected an integer"),
        ({**OK, "result": {"type": "bool", "value": 1}}, "'value' is int, expected true or false"),
        ({**OK, "result": {"type": "Frob"}}, "unknown type 'Frob'"),
        ({**OK, "result": {"type": "Array", "items": [3]}}, "value description: not a JSON"),
        ({**OK, "result": {"type": "Map", "items": [[{"type": "None"}]]}}, "not a [key, value]"),
        ({**OK, "result": {"type": "Tensor", "shape": [1, "2"]}}, "a list of integers"),
        ({**OK, "result": {"type": "Tensor", "data": {"k": {1}}}}, "tensor data: not JSON"),
        ({**OK, "result": {"type": "Object", "type_key": "p", "fields": []}}, "'fields' is list"),
        ({**OK, "notes": [1]}, "'notes' is list, expected a list of strings"),
        ({**OK, "files": [{"what": "arg0", "path": 3}]}, "'path' is int"),
        ({**OK, "cuda": {"device": "cuda:0"}}, "reply.cuda: field 'name' is missing"),
        ({"status": "raised", "error": {"kind": "E"}}, "reply.error: field 'message' is missing"),
        ({"status": "raised", "error": {"kind": "E", "message": "m", "cause": 1}}, "'cause'"),
    ],
)
def test_malformed_replies_are_refused_with_one_clear_error(obj, says):
    with pytest.raises(MessageError) as e:
        M.decode_call_reply(obj)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_nesting_past_what_describe_makes_is_refused():
    deep = {"type": "None"}
    for _ in range(D.MAX_DEPTH + 3):
        deep = {"type": "Array", "items": [deep]}
    with pytest.raises(MessageError, match="nested deeper"):
        M.decode_call_reply({**OK, "result": deep})


@pytest.mark.parametrize(
    "obj,says",
    [
        ({"status": "ok"}, "'resolved' is missing"),
        ({**OK, "calls": 1}, "'timer' is missing"),
        (
            {
                "status": "ok",
                "resolved": "export",
                "calls": 1,
                "timer": "c",
                "calls_per_round": 1,
                "rounds": 1,
                "round_ns": [1],
                "ns_per_call": {"min": 1, "median": "1", "max": 1},
            },
            "reply.ns_per_call: field 'median' is str, expected a number",
        ),
    ],
)
def test_malformed_bench_replies_are_refused(obj, says):
    with pytest.raises(MessageError, match=says.replace(".", r"\.")):
        M.decode_bench_reply(obj)


def test_frozen_messages_are_dataclasses_that_cannot_change():
    import dataclasses

    ok = M.Refused("m", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ok.message = "other"
    assert dataclasses.is_dataclass(ok) and isinstance(ok, Frozen)
    assert dataclasses.replace(ok, exit_code=1) == M.Refused("m", 1) != ok
    assert hash(M.Refused("m", 2)) == hash(ok) and repr(ok) == "Refused(message='m', exit_code=2)"
    assert S.IntArg(1) != S.BoolArg(True) and S.IntArg(1) != (1,)


def _every_frozen(cls=Frozen):
    for sub in cls.__subclasses__():
        yield sub
        yield from _every_frozen(sub)


def test_the_shared_methods_see_the_dataclass_fields():
    import dataclasses

    for cls in _every_frozen():
        cls._made()
        assert cls._field_names == tuple(f.name for f in dataclasses.fields(cls)), cls


def test_a_description_decoded_fast_is_a_dataclass_in_a_fresh_process():
    # decode_desc builds the common forms without __init__ (Frozen._of)
    code = (
        "import dataclasses\n"
        "from tvmffi_cli.call import describe as D\n"
        "s = D.decode_desc({'type': 'Array', 'items': [{'type': 'int', 'value': 1}]})\n"
        "print(dataclasses.replace(s.items[0], value=2), s)\n"
        "s.items[0].value = 3\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout == (
        "Scalar(type='int', value=2) Items(type='Array', "
        "items=(Scalar(type='int', value=1),), size=None)\n"
    )
    assert r.stderr.splitlines()[-1] == (
        "dataclasses.FrozenInstanceError: cannot assign to field 'value'"
    )


def _forge(reply, *more):
    lib = fixturebuild.build("call/forge_reply.c", headers="ours")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tvmffi_cli",
            "call",
            lib,
            "forge",
            "--str",
            json.dumps(reply),
            *more,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_reply_forged_in_the_worker_is_refused():
    """The library rewrites the task's reply in the worker's own Python (the
    channel cannot tell): a malformed one fails the call with one line."""
    bad = {**OK, "result": {"type": "int", "value": "forty-two"}}
    r = _forge(bad)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (
        "tvmffi: error: forge: the worker's reply is malformed: value description: "
        "field 'value' is str, expected an integer\n"
    )
    r = _forge({**OK, "args": None}, "--json")
    assert r.returncode == 1, r.stderr
    err = json.loads(r.stdout)["error"]
    assert err["kind"] == "Tampered" and "field 'args' is NoneType" in err["message"]
    # the fixture works: a well-formed reply is taken (what the worker says it returned)
    assert _forge({**OK, "result": {"type": "int", "value": 42}}).stdout == "42\n"
