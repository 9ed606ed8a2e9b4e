"""Issue 28 items 4 and 5: a finding can be acted on (the exact arguments of
the call, a `tvmffi call` reproducer, the library's own words, a fix line for
its cause, one sentence per cause), the summary never contradicts itself,
and what real libraries do by design is not an error."""

import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from test_conform import conform, conform_json
from tvmffi_cli.conform import callargs
from tvmffi_cli.conform.checks_crash import FunctionFacts, check_no_crash, check_tensor_bounds
from tvmffi_cli.conform.results import Report, Result
from tvmffi_cli.render.conform import counts_line


def tvmffi(*args):
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_tensor_finding_names_the_call_and_reproduces_with_call_guard(build_lib, tmp_path):
    lib = build_lib("conform/zoo.c")
    xml = tmp_path / "junit.xml"
    _r, doc = conform_json(
        lib, "--function", "tensor_bounds__reads_past", "--junit-xml", xml, "--timeout", "2"
    )
    res = next(x for x in doc["results"] if x["check"] == "tensor-bounds")
    assert res["status"] == "fail"
    # the exact arguments: dtype, shape, strides, byte offset, device, values
    assert res["message"].startswith(
        "valid (DLTensor* float32[1024] strides (1) byte_offset 0 cpu:0 zeros): killed by SIGSEGV"
    )
    assert res["details"]["args"] == [
        {
            "type": "DLTensor*",
            "dtype": "float32",
            "shape": [1024],
            "strides": [1],
            "byte_offset": 0,
            "device": "cpu:0",
            "values": "zeros",
            "memory": "between guard pages",
            "cli": "float32[1024]:zeros",
        }
    ]
    cmd = shlex.split(res["reproduce"])
    assert cmd == ["tvmffi", "call", str(lib), "tensor_bounds__reads_past"] + [
        "float32[1024]:zeros",
        "--guard",
    ]
    # the reproducer shows the bug (exit 1); without --guard the read lands in
    # readable memory
    again = tvmffi("call", lib, "tensor_bounds__reads_past", "float32[1024]:zeros", "--guard")
    assert again.returncode == 1 and "crashed the worker process (SIGSEGV)" in again.stderr
    # JUnit carries the same
    text = next(
        c.find("failure").text
        for c in ET.parse(xml).iter("testcase")
        if c.get("name") == "tensor-bounds"
    )
    assert "arguments of valid: (DLTensor* float32[1024] strides (1)" in text
    assert "reproduce: tvmffi call" in text


def test_a_failed_load_is_one_finding_with_the_library_s_own_words(build_lib):
    lib = build_lib("conform/load_aborts.c")
    r, doc = conform_json(lib)
    assert r.returncode == 1
    bad = [x for x in doc["results"] if x["status"] in ("fail", "error")]
    assert [x["check"] for x in bad] == ["library-load"]
    load = bad[0]
    said = (
        "loading the library crashes the process (SIGABRT): RuntimeError: Global Function "
        "`demo.add` is already registered"
    )
    # (then where another runtime may help: "; it did not load on the builtin runtime: ...")
    assert load["message"] == said or load["message"].startswith(said + "; it did not load on ")
    assert "[load_aborts] registering globals" in load["output"]
    has = next(x for x in doc["results"] if x["check"] == "has-functions")
    assert has["status"] == "skip" and "did not load" in has["message"]
    people = conform(lib, env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert "library output:" in people.stdout and "is already registered" in people.stdout


def test_warnings_are_counted_apart_from_failures(build_lib):
    lib = build_lib("conform/isolation.c")
    r = conform(lib, "--function", "register_item", env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert r.returncode == 0, r.stdout
    lines = r.stdout.rstrip("\n").splitlines()
    assert ", 0 failed, 1 warning(s), " in lines[-2], lines[-2]
    assert (
        lines[-1].startswith("tvmffi conform PASSED ") and "0 error(s), 1 warning(s)" in lines[-1]
    )


def test_counts_never_exceed_the_functions():
    # a finding on a symbol that is no probed function (an orphan getter's name)
    rs = [
        Result("orphan-getter", "ghost", "fail", "no function for this getter"),
        Result("no-crash", "f", "fail", "valid: killed by SIGSEGV"),
    ]
    rep = Report("/x/lib.so", rs, ["f"])
    assert " in 2 of 2 function(s)" in rep.summary_line()
    assert counts_line(rep) == "0 passed, 1 failed, 1 warning(s), 0 skipped"
    assert rep.counts()["blocking"] == 1 and rep.counts()["warning"] == 1


def _facts(step, **crash):
    f = FunctionFacts("k", ())
    f.params = ["ffi.Tensor"]
    f.crashes[step] = {"signal": "SIGSEGV", "hang": False, **crash}
    return f


def test_fix_lines_match_the_cause():
    cuda = check_no_crash(_facts("tensor:cuda"))
    assert cuda.fix.startswith("Check `device.device_type` before touching `data`")
    assert "cuda:0" in cuda.message
    offset = check_tensor_bounds(_facts("tensor:offset", tensor_oob=True))
    assert offset.fix.startswith("Add `byte_offset` to `data`")
    assert offset.severity == "error"  # it reads and writes other data (issue 28)
    dtypes = check_no_crash(_facts("tensor:float4_e2m1fn"))
    assert dtypes.fix.startswith("Check `dtype` (code, bits, lanes)")
    # a plain crash keeps the check's own fix
    plain = check_no_crash(_facts("valid"))
    assert plain.fix.startswith("Validate arguments")


def test_call_arguments_of_every_step_kind():
    assert callargs.args_of("zero-args", ["int"]) == []
    assert callargs.words(callargs.args_of("too-few", ["int", "float"])) == "(int 2)"
    wrong = callargs.args_of("wrong-type:0", ["ffi.Tensor"])
    assert wrong == [
        {
            "type": "ffi.String",
            "value": "tvmffi-conform-wrong-type",
            "cli": "tvmffi-conform-wrong-type",
        }
    ]
    strided = callargs.args_of("tensor:strided/padded", ["ffi.Tensor"])
    assert strided[0]["shape"] == [32, 32] and strided[0]["strides"] == [1, 32]
    assert strided[0]["memory"] == "padded"
    assert callargs.call_argv(strided) is None  # the command line builds contiguous tensors
    objs = callargs.args_of("objects:4", None)
    assert [a["type"] for a in objs] == [
        "ffi.String",
        "ffi.Array[int]",
        "ffi.Tensor",
        "ffi.Function",
    ]
    assert callargs.call_argv(objs) is None  # a Function argument has no literal
    assert callargs.call_argv(callargs.args_of("objects:map", None)) == [
        '{"tvmffi-conform-probe": 2}'
    ]


def test_a_use_count_that_varies_between_threads_is_not_a_race(official_runtime):
    lib = official_runtime.parent / "libtvm_ffi_testing.so"
    if not lib.is_file():
        pytest.skip("the official package has no lib/libtvm_ffi_testing.so")
    _r, doc = conform_json(
        lib, "--function", "testing.object_use_count", "--select", "thread-safety", "--threads", "4"
    )
    res = doc["results"][0]
    assert res["status"] == "pass", res
    assert "each the strong reference count of argument 0 during its call" in res["message"]
