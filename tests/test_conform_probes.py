"""`tvmffi conform` probes everything: globals registered at load (a library
with no `__tvm_ffi_` export at all), functions without metadata called with
object arguments, and --threads N."""

import re
import shlex
import subprocess
import sys

import pytest

from test_conform import bad_results, conform_json

GLOBALS = [
    "conform_globals.bad_clobber",
    "conform_globals.bad_keep",
    "conform_globals.count_args",
    "conform_globals.first_arg",
    "conform_globals.kind_of",
]


def test_globals_registered_at_load_are_probed(build_lib):
    lib = build_lib("conform/globals_only.c")
    r, doc = conform_json(lib, "-j", "2")
    assert doc["functions"] == [] and doc["globals"] == GLOBALS
    assert r.returncode == 1
    assert bad_results(doc) == {
        ("arg-refcount", "conform_globals.bad_keep"),
        ("args-unchanged", "conform_globals.bad_clobber"),
        ("arg-bounds", "conform_globals.first_arg"),
    }
    keep = next(
        x
        for x in doc["results"]
        if x["function"] == "conform_globals.bad_keep" and x["check"] == "arg-refcount"
    )
    assert (
        "objects:1: object argument 0 has +1 strong reference(s) after the call (2 -> 3)"
        in keep["message"]
    )
    # Every global got the full per-function check set, and the probes ran.
    for g in GLOBALS:
        got = {x["check"]: x["status"] for x in doc["results"] if x["function"] == g}
        assert got["no-crash"] == "pass" and got["error-protocol"] == "pass", (g, got)
    good = {
        x["check"]: x["status"]
        for x in doc["results"]
        if x["function"] == "conform_globals.count_args"
    }
    assert good["arg-refcount"] == "pass" and good["args-unchanged"] == "pass"
    assert good["thread-safety"] == "pass"


def test_reproducer_of_a_global_finding_exits_1(build_lib):
    lib = build_lib("conform/globals_only.c")
    _r, doc = conform_json(lib, "--select", "arg-refcount")
    res = next(x for x in doc["results"] if x["status"] == "fail")
    cmd = shlex.split(res["reproduce"])
    assert cmd == [
        "tvmffi",
        "conform",
        str(lib),
        "--select",
        "arg-refcount",
        "--function",
        "conform_globals.bad_keep",
    ]
    again = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *cmd[1:], "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert again.returncode == 1 and "(2 -> 3)" in again.stdout


def test_well_behaved_globals_pass(build_lib):
    lib = build_lib("conform/globals_only.c", defines=("CONFORM_GOOD_ONLY",))
    r, doc = conform_json(lib)
    assert doc["globals"] == [
        "conform_globals.count_args",
        "conform_globals.first_arg",
        "conform_globals.kind_of",
    ]
    # A global without a registered signature that reads args[0] when given
    # none (the PackedArgs idiom of real libraries): a warning, not a failure.
    (w,) = [x for x in doc["results"] if x["status"] == "fail"]
    assert (w["check"], w["function"], w["severity"]) == (
        "arg-bounds",
        "conform_globals.first_arg",
        "warning",
    )
    assert "no signature" in w["message"] and "--strict" in w["message"]
    assert r.returncode == 0 and doc["passed"] is True
    strict, sdoc = conform_json(lib, "--strict")
    assert strict.returncode == 1 and sdoc["passed"] is False
    # Exports are held to their count check: zoo's untyped arg_bounds__reads_first
    # stays an error (test_conform.py's zoo test).


def test_untyped_exports_are_probed_with_object_arguments(build_lib):
    r, doc = conform_json(build_lib("conform/untyped.c"))
    assert r.returncode == 1
    assert bad_results(doc) == {("arg-refcount", "keeps_ref"), ("args-unchanged", "clobbers_args")}
    msg = next(
        x["message"]
        for x in doc["results"]
        if (x["check"], x["function"]) == ("args-unchanged", "clobbers_args")
    )
    assert msg.startswith("the argument array was modified by the call (objects:1, objects:4, ")
    # four object kinds in one call: String, Array, Tensor, Function
    ok = next(
        x["message"]
        for x in doc["results"]
        if (x["check"], x["function"]) == ("arg-refcount", "count")
    )
    # String, Array, Tensor, Function; int, containers, 1-3 tensors and their variants
    assert re.fullmatch(r"\d+ object argument\(s\) unchanged", ok) and int(ok.split()[0]) > 5


def test_threads_option_turns_concurrency_findings_into_errors(build_lib):
    lib = build_lib("conform/zoo.c")
    sel = ("--select", "thread-safety", "--function", "thread_safety__counter")
    r, doc = conform_json(lib, *sel)
    res = doc["results"][0]
    assert r.returncode == 0 and res["status"] == "fail" and res["severity"] == "warning"
    assert "4 concurrent calls" in res["message"]
    r, doc = conform_json(lib, *sel, "--threads", "8")
    res = doc["results"][0]
    assert r.returncode == 1 and res["status"] == "fail" and res["severity"] == "error"
    assert "8 concurrent calls" in res["message"]
    assert res["reproduce"].endswith("--threads 8")


@pytest.mark.parametrize("n", ["1", "1000"])
def test_threads_out_of_range_is_a_usage_error(build_lib, n):
    from test_conform import conform

    r = conform(build_lib("conform/good.c"), "--threads", n)
    assert r.returncode == 2 and "--threads" in r.stderr


def test_runtime_official_runs_the_checks_and_skips_instrumented_ones(build_lib, official_runtime):
    lib = build_lib(
        "conform/good_official.cc",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
    )
    r, doc = conform_json(lib, "--runtime", "official", "-j", "2")
    assert r.returncode == 0 and bad_results(doc) == set(), doc["summary_line"]
    load = next(x for x in doc["results"] if x["check"] == "library-load")
    assert str(official_runtime) in load["message"]
    assert "runtime without instrumentation" in load["message"]
    # Without a live-object count, results are still judged from their object
    # header (any runtime): functions returning objects are measured.
    leak = {x["function"]: x for x in doc["results"] if x["check"] == "no-leak"}
    assert leak["range"]["status"] == "pass", leak["range"]
    assert {x["status"] for x in leak.values()} <= {"pass", "skip"}
    # Checks that do not need instrumentation still ran.
    assert any(x["check"] == "valid-call" and x["status"] == "pass" for x in doc["results"])


def test_runtime_path_must_exist(build_lib, tmp_path):
    from test_conform import conform

    r = conform(build_lib("conform/good.c"), "--runtime", tmp_path / "nope.so")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_a_crash_only_under_concurrency_is_a_warning_without_threads(build_lib):
    lib = build_lib("conform/racy.c")
    r, doc = conform_json(lib)
    assert r.returncode == 0 and bad_results(doc) == {("thread-safety", "racy_crash")}
    res = next(x for x in doc["results"] if x["check"] == "thread-safety")
    assert res["severity"] == "warning"
    assert res["message"] == "concurrent calls killed by SIGSEGV; the single call succeeded"
    assert next(x for x in doc["results"] if x["check"] == "no-crash")["status"] == "pass"
    r, doc = conform_json(lib, "--threads", "3")
    res = next(x for x in doc["results"] if x["check"] == "thread-safety")
    assert r.returncode == 1 and res["severity"] == "error" and res["status"] == "fail"


def test_unknown_function_is_a_usage_error(build_lib):
    from test_conform import conform

    r = conform(build_lib("conform/globals_only.c"), "--function", "conform_globals.nope")
    assert r.returncode == 2 and "no such exported or registered function" in r.stderr


def test_wrong_type_an_own_type_may_convert_an_int(build_lib):
    # TVM's ir.Expr takes an int (its type traits make an IntImm): for a
    # library's own object type an accepted int is a conversion, not a
    # finding (258 false errors on apache-tvm 0.27's compiler library);
    # ffi.Array's rules never take an int, so there it stays an error.
    r, doc = conform_json(build_lib("conform/converts.c"), "--select", "wrong-type", "-j", "1")
    got = {x["function"]: (x["status"], x["message"]) for x in doc["results"]}
    assert got["expr_kind"] == (
        "pass",
        "parameter 0 (my.Expr) took an int and the call succeeded: the library's own type "
        "may convert plain values (as TVM's ir.Expr makes an IntImm of an int)",
    )
    assert got["opt_expr_kind"][0] == "pass"
    assert "Optional[my.Expr]" in got["opt_expr_kind"][1]
    assert got["arr_len"] == (
        "fail",
        "parameter 0 (ffi.Array[int]) accepted a String and the call succeeded",
    )
    assert r.returncode == 1


def test_type_of_str_reads_back_type_str():
    from tvmffi_cli.conform import sigs

    for text in ["int", "Optional[ir.Expr]", "ffi.Map[ffi.String, ffi.Array[Variant[int, x.Y]]]"]:
        assert sigs.type_str(sigs.type_of_str(text)) == text
    assert sigs.own_type_converts(sigs.type_of_str("Variant[ir.Expr, ffi.Array[ir.Expr]]"))
    assert not sigs.own_type_converts(sigs.type_of_str("Optional[ffi.Array[ir.Expr]]"))


def test_valid_call_a_nullable_object_reference_may_be_none(build_lib):
    # TVM's target.TargetCurrent declares target.Target and returns None when
    # no target is in scope (a null ObjectRef); ffi.Function is nullable too.
    # An ffi.Array is never null.
    _r, doc = conform_json(build_lib("conform/converts.c"), "--select", "valid-call", "-j", "1")
    got = {x["function"]: (x["status"], x["message"]) for x in doc["results"]}
    assert got["current_target"][0] == "pass"
    assert got["current_hook"][0] == "pass"
    assert got["no_array"] == ("fail", "returned None but the metadata declares ffi.Array[int]")


def test_arg_refcount_a_per_thread_context_stack_is_not_a_leak(build_lib):
    # TVM's relax.dpl.enter_context pushes its argument on a thread_local
    # stack: one more reference on every call, all released when the thread
    # ends. A leak (the same push, never released) stays an error.
    _r, doc = conform_json(
        build_lib("conform/context_stack.c"), "--select", "arg-refcount", "-j", "1"
    )
    got = {x["function"]: (x["status"], x["message"]) for x in doc["results"]}
    assert got["enter_scope"][0] == "pass"
    assert "released when the calling thread ended" in got["enter_scope"][1]
    assert got["leak_ref"][0] == "fail"
    assert "one more on a repeat call" in got["leak_ref"][1]
