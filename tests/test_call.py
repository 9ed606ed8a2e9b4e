"""`tvmffi call`: the design card's example, tensors (.npy, .npz, literals,
--out), globals, name resolution, raised errors, crash and hang containment,
usage errors. Value round-trips are in test_call_values.py."""

import json
import os

import numpy as np
import pytest

from test_call_helpers import (
    InProcessCall,
    crashy,
    kernels,
    kitchen,
    runtime_problem,
    tvmffi,
    typed,
    validate,
)

RUNTIMES = ["ours", "official"]


def runtime_path(which):
    import fixturebuild

    if which == "official":
        p = fixturebuild.official_runtime()
        if p is None:
            pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
        return str(p)
    return str(fixturebuild.our_runtime())


@pytest.fixture(scope="session", params=RUNTIMES)
def rt(request):
    """--runtime PATH for the runtime under test; tests run on both."""
    p = runtime_path(request.param)
    problem = runtime_problem(p)
    if problem is not None:
        pytest.skip(f"the {request.param} runtime cannot host a library yet: {problem}")
    return p


@pytest.fixture(scope="session")
def any_rt():
    """One working runtime (ours preferred) for tests about the CLI itself."""
    for which in RUNTIMES:
        p = runtime_path(which)
        if runtime_problem(p) is None:
            return p
    pytest.fail("no runtime can host a library")


@pytest.fixture(scope="module")
def workers():
    made = {}
    # One worker per runtime for the module (setdefault(k, InProcessCall(k))
    # would start, and leak, a new one on every call).
    yield lambda runtime: made.get(runtime) or made.setdefault(runtime, InProcessCall(runtime))
    for c in made.values():
        c.close()


@pytest.fixture
def via_worker(workers, rt):
    """call_json's twin through one persistent worker per runtime (fast): the
    same task and renderer as the CLI, without two interpreter start-ups."""
    return lambda lib, *argv, expect="ok": workers(rt).json(lib, *argv, expect=expect)


@pytest.fixture
def x_npy(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    p = tmp_path / "x.npy"
    np.save(p, x)
    return p


def call_json(*args, rt, expect_rc=0, cwd=None):
    r = tvmffi("call", *args, "--json", "--runtime", rt, cwd=cwd)
    assert r.returncode == expect_rc, (r.returncode, r.stdout, r.stderr)
    doc = json.loads(r.stdout)
    return validate(doc, "call")


# -- the design card ---------------------------------------------------------------


def test_design_card_example_verbatim(tmp_path, x_npy, any_rt):
    """`tvmffi call lib.so add_one --tensor x.npy`, run from the file's directory."""
    lib = tmp_path / "lib.so"
    lib.write_bytes(kernels().read_bytes())
    before = x_npy.read_bytes()
    r = tvmffi(
        "call",
        "lib.so",
        "add_one",
        "--tensor",
        "x.npy",
        cwd=tmp_path,
        env={"TVMFFI_RUNTIME": any_rt},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "None"
    assert "arg0 after the call: <DLTensor* float32[2, 3] on cpu:0>" in r.stdout
    assert "[[1., 2., 3.]," in r.stdout and "[4., 5., 6.]]" in r.stdout
    assert x_npy.read_bytes() == before  # the input file is never modified


def test_add_one_in_place_json_and_out(tmp_path, x_npy, rt):
    out = tmp_path / "out"
    before = x_npy.read_bytes()
    doc = call_json(kernels(), "add_one", "--tensor", x_npy, "--out", out, rt=rt)
    assert doc["resolved"] == "export" and doc["type"] == "None" and doc["result"] is None
    (a0,) = doc["args"]
    assert a0["type"] == "DLTensor*"
    assert a0["value"] == {
        "type": "DLTensor*",
        "dtype": "float32",
        "shape": [2, 3],
        "strides": None,
        "device": "cpu:0",
        "data": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
    }
    assert doc["files"] == [{"what": "arg0", "path": str(out / "arg0.npy")}]
    np.testing.assert_array_equal(
        np.load(out / "arg0.npy"), np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    )
    assert x_npy.read_bytes() == before
    assert sorted(os.listdir(out)) == ["arg0.npy"]  # no temporary files left behind


def test_out_refuses_to_overwrite_without_force(tmp_path, x_npy, any_rt):
    out = tmp_path / "out"
    out.mkdir()
    (out / "arg0.npy").write_bytes(b"keep me")
    r = tvmffi("call", kernels(), "add_one", "--tensor", x_npy, "--out", out, "--runtime", any_rt)
    assert r.returncode == 2
    assert (
        r.stderr.strip() == f"tvmffi: error: {out / 'arg0.npy'} exists; pass --force to overwrite"
    )
    assert (out / "arg0.npy").read_bytes() == b"keep me"
    r = tvmffi(
        "call",
        kernels(),
        "add_one",
        "--tensor",
        x_npy,
        "--out",
        out,
        "--force",
        "--runtime",
        any_rt,
        env={"COLUMNS": "200"},
    )  # text follows the width
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out / "arg0.npy")[0], [1, 2, 3])
    assert f"wrote {out / 'arg0.npy'}" in r.stdout


def test_out_is_not_a_directory(tmp_path, x_npy, any_rt):
    f = tmp_path / "file"
    f.write_text("x")
    r = tvmffi("call", kernels(), "add_one", "--tensor", x_npy, "--out", f, "--runtime", any_rt)
    assert r.returncode == 2 and "not a directory" in r.stderr


def test_tensor_result_written_as_result_npy(tmp_path, x_npy, rt):
    out = tmp_path / "o"
    doc = call_json(kernels(), "scale2", "--tensor", x_npy, "--out", out, rt=rt)
    assert doc["type"] == "Tensor"
    assert doc["result"] == {
        "type": "ffi.Tensor",
        "dtype": "float32",
        "shape": [2, 3],
        "strides": None,
        "device": "cpu:0",
        "data": [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]],
    }
    assert [f["what"] for f in doc["files"]] == ["arg0", "result"]
    np.testing.assert_array_equal(
        np.load(out / "result.npy"), 2 * np.arange(6, dtype=np.float32).reshape(2, 3)
    )
    np.testing.assert_array_equal(np.load(out / "arg0.npy"), np.load(x_npy))


def test_npz_and_literal_tensors(tmp_path, via_worker):
    np.savez(tmp_path / "in.npz", x=np.array([1.5, 2.5], dtype=np.float32), other=np.zeros(3))
    doc = via_worker(
        kernels(), "add_into", "--tensor", f"{tmp_path}/in.npz:x", "--tensor", "float32[2]:zeros"
    )
    assert doc["args"][0]["value"]["data"] == [1.5, 2.5]
    assert doc["args"][1]["value"]["data"] == [2.5, 3.5]
    doc = via_worker(kernels(), "add_one", "float32[2,2]:arange")
    assert doc["args"][0]["value"]["data"] == [[1.0, 2.0], [3.0, 4.0]]


def test_large_tensor_has_no_data_but_a_preview(any_rt):
    r = tvmffi("call", kernels(), "scale2", "--tensor", "float32[1000]:ones", "--runtime", any_rt)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "<Tensor float32[1000] on cpu:0>"
    assert "[2., 2., 2., ..., 2., 2., 2.]" in r.stdout
    doc = call_json(kernels(), "scale2", "--tensor", "float32[1000]:ones", rt=any_rt)
    assert "data" not in doc["result"] and doc["result"]["shape"] == [1000]


def test_owned_tensor_in_place_leaves_the_file_alone(x_npy, via_worker):
    before = x_npy.read_bytes()
    doc = via_worker(kernels(), "add_one", "--tensor", x_npy, "--owned-tensors")
    assert doc["args"][0]["value"]["data"] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert x_npy.read_bytes() == before


def test_tensor_argument_modes(via_worker):
    """DLTensor* views by default; owned ffi.Tensor objects with --owned-tensors."""
    doc = via_worker(kernels(), "describe", "--tensor", "float32[2]")
    assert doc["result"] == "type_index:7"
    doc = via_worker(kernels(), "describe", "--tensor", "float32[2]", "--owned-tensors")
    assert doc["result"] == "type_index:70"
    assert doc["args"][0]["type"] == "Tensor"
    doc = via_worker(kernels(), "add_one", "--tensor", "float32[3]:ones", "--owned-tensors")
    assert doc["args"][0]["value"]["data"] == [2.0, 2.0, 2.0]


def test_schema_typed_tensor_parameter_passes_an_owned_tensor(via_worker):
    doc = via_worker(typed(), "tensor_numel", "float32[2,5]:zeros")
    assert doc["result"] == 10 and doc["args"][0]["type"] == "Tensor"


# -- name resolution and globals --------------------------------------------------------


def test_global_registered_at_load(rt):
    doc = call_json(kernels(), "callfix.mul", "6", "7", rt=rt)
    assert (doc["resolved"], doc["result"]) == ("global", 42)


def test_more_globals(via_worker):
    doc = via_worker(kernels(), "callfix.greet", "--str", "world")
    assert doc["result"] == "hello, world"
    doc = via_worker(kitchen(), "kitchen.add", "2", "40")
    assert (doc["resolved"], doc["result"]) == ("global", 42)


def test_unknown_function_lists_the_closest_names(any_rt):
    r = tvmffi("call", kernels(), "add_onee", "--runtime", any_rt)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "no function 'add_onee'" in r.stderr
    assert "closest: add_one, " in r.stderr
    r = tvmffi("call", kernels(), "callfix.mull", "1", "2", "--runtime", any_rt)
    assert r.returncode == 2 and "closest: callfix.mul" in r.stderr


def test_dotted_names_are_only_globals(any_rt):
    r = tvmffi("call", kernels(), "x.add_one", "--runtime", any_rt)
    assert r.returncode == 2 and "no function 'x.add_one'" in r.stderr


# -- raised errors ------------------------------------------------------------------------


def test_raised_error_human(any_rt):
    r = tvmffi("call", kitchen(), "fail_runtime", "x", "--runtime", any_rt)
    assert r.returncode == 1
    assert r.stderr == "RuntimeError: kitchen failed: x\n"
    assert r.stdout == ""


def test_raised_error_backtrace_under_verbose(any_rt):
    r = tvmffi("call", kitchen(), "fail_value", "boom", "-v", "--runtime", any_rt)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "ValueError: kitchen failed: boom"
    assert lines[1] in ("Backtrace:", "(no backtrace recorded)")


@pytest.mark.parametrize(
    "func,args,kind,message",
    [
        ("fail_value", ["x"], "ValueError", "kitchen failed: x"),
        ("fail_type", ["3"], "TypeError", "bad type for 3"),
        ("fail_index", ["9"], "IndexError", "index 9 out of range"),
        ("fail_custom", ["odd"], "KitchenError", "odd"),
    ],
)
def test_raised_error_json(func, args, kind, message, via_worker):
    doc = via_worker(kitchen(), func, *args, expect="raised")
    assert doc["error"]["kind"] == kind and doc["error"]["message"] == message
    bt = doc["error"]["backtrace"]
    assert bt is None or (isinstance(bt, str) and bt)  # null when none recorded, never ""


def test_error_with_cause(any_rt):
    r = tvmffi("call", kitchen(), "fail_with_cause", "y", "--runtime", any_rt)
    assert r.returncode == 1
    assert r.stderr.splitlines() == ["RuntimeError: outer: y", "  caused by ValueError: inner: y"]


def test_c_library_errors(rt, via_worker):
    doc = call_json(kernels(), "fail_value", "--str", "broken input", rt=rt, expect_rc=1)
    assert doc["error"]["kind"] == "ValueError" and doc["error"]["message"] == "broken input"
    doc = via_worker(kernels(), "fail_kind", "MyKind", "why", expect="raised")
    assert (doc["error"]["kind"], doc["error"]["message"]) == ("MyKind", "why")
    doc = via_worker(kernels(), "add_int", "1", expect="raised")
    assert doc["error"] == {
        "kind": "TypeError",
        "message": "add_int expects (int, int)",
        "backtrace": doc["error"]["backtrace"],
    }


# -- crash and hang containment ------------------------------------------------------------


@pytest.mark.parametrize("func,sig", [("segv", "SIGSEGV"), ("abort", "SIGABRT")])
def test_crash_is_one_line(func, sig, any_rt):
    r = tvmffi("call", crashy(), func, "--runtime", any_rt)
    assert r.returncode == 1
    assert r.stderr == f"tvmffi: error: {func} crashed the worker process ({sig})\n"
    doc = call_json(crashy(), func, rt=any_rt, expect_rc=1)
    assert doc["error"]["kind"] == "Crash" and doc["error"]["signal"] == sig


def test_hang_is_killed_after_timeout(any_rt):
    import time

    t0 = time.monotonic()
    r = tvmffi("call", crashy(), "hang", "--timeout", "0.5", "--runtime", any_rt)
    assert r.returncode == 1
    assert r.stderr == "tvmffi: error: hang did not return within 0.5 s; the worker was killed\n"
    assert time.monotonic() - t0 < 30


def test_library_stdout_does_not_corrupt_json(any_rt):
    doc = call_json(crashy(), "chatty", rt=any_rt)
    assert doc["result"] == 7


# -- usage errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,msg",
    [
        (["add_int", "1", "--int", "2"], "mixing positional arguments with typed flags"),
        ([], "FUNC is missing"),
        (["add_one", "--tensor", "float32[2]:bogus"], "fill must be one of"),
        (["add_one", "--tensor", "missing.npy"], "--tensor missing.npy: no such file"),
        (["add_int", "--int", "x"], "bad int 'x'"),
        (["add_int", "--timeout", "0"], "--timeout 0: must be a positive number"),
        (["add_int", "--runtime", "/nonexistent.so"], "no such file"),
        (["add_int", "--bogus"], "unknown option --bogus"),
    ],
)
def test_usage_errors_are_one_line(args, msg):
    r = tvmffi("call", kernels(), *args) if args else tvmffi("call", kernels())
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert msg in r.stderr


def test_schema_typed_positional_error_is_one_line(any_rt):
    r = tvmffi("call", typed(), "sum_list", "[1, 2.5]", "--runtime", any_rt)
    assert r.returncode == 2
    assert r.stderr == "tvmffi: error: argument 0: 2.5 is not an int\n"


def test_missing_library_file():
    r = tvmffi("call", "/nonexistent/lib.so", "f")
    assert r.returncode == 2 and r.stderr == "tvmffi: error: /nonexistent/lib.so: no such file\n"


def test_help_lists_flags():
    r = tvmffi("call", "--help")
    assert r.returncode == 0
    assert "Usage: tvmffi call LIB FUNC [ARGS]... [OPTIONS]" in r.stdout
    for flag in (
        "--int",
        "--float",
        "--bool",
        "--str",
        "--bytes",
        "--none",
        "--dtype",
        "--device",
        "--tensor",
        "--value",
        "--out",
        "--force",
        "--timeout",
        "--owned-tensors",
        "--json",
    ):
        assert flag in r.stdout


def test_call_does_not_import_numpy_or_rich_in_the_parent(any_rt):
    """The CLI side stays light: values are built and decoded in the child."""
    import subprocess
    import sys

    code = (
        "import sys; from tvmffi_cli.cli import main as cli\n"
        "try:\n    cli.main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print('LOADED', 'numpy' in sys.modules, 'rich' in sys.modules, file=sys.stderr)"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "call",
            str(kernels()),
            "add_int",
            "1",
            "2",
            "--runtime",
            any_rt,
        ],
        capture_output=True,
        text=True,
    )
    assert r.stdout.strip() == "3", r.stderr
    assert "LOADED False False" in r.stderr
