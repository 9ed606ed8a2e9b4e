"""`tvmffi bench`: the C timing loop of our runtime, its JSON, errors."""

import json
from pathlib import Path

import pytest

from test_call import runtime_path
from test_call_helpers import crashy, kernels, runtime_problem, tvmffi, validate


@pytest.fixture(scope="session")
def ours():
    p = runtime_path("ours")
    problem = runtime_problem(p)
    if problem is not None:
        pytest.skip(f"our runtime cannot host a library yet: {problem}")
    return p


def bench_json(*args, rt, expect_rc=0):
    r = tvmffi("bench", *args, "--json", "--runtime", rt)
    assert r.returncode == expect_rc, (r.stdout, r.stderr)
    return validate(json.loads(r.stdout), "bench")


def test_bench_json_counts_and_order(ours):
    doc = bench_json(kernels(), "add_int", "1", "2", "--repeat", "1000", "--rounds", "4", rt=ours)
    assert doc["calls"] == 4000 and doc["calls_per_round"] == 1000 and doc["rounds"] == 4
    s = doc["ns_per_call"]
    assert 0 < s["min"] <= s["median"] <= s["max"]
    assert len(doc["round_ns"]) == 4
    assert s["min"] == min(doc["round_ns"]) / 1000
    assert doc["resolved"] == "export"


def test_bench_calibrates_rounds(ours):
    doc = bench_json(kernels(), "add_int", "--int", "1", "--int", "2", "--rounds", "2", rt=ours)
    # A ~2-20 ns call needs far more than one call to fill a ~20 ms round.
    assert doc["calls_per_round"] > 10_000
    assert doc["calls"] == 2 * doc["calls_per_round"]


def test_bench_tensor_kernel_and_globals(ours):
    doc = bench_json(
        kernels(),
        "add_one",
        "--tensor",
        "float32[64]:zeros",
        "--repeat",
        "50",
        "--rounds",
        "2",
        rt=ours,
    )
    assert doc["calls"] == 100
    doc = bench_json(kernels(), "callfix.mul", "3", "4", "--repeat", "10", "--rounds", "1", rt=ours)
    assert doc["resolved"] == "global"


def test_bench_text(ours):
    r = tvmffi(
        "bench",
        kernels(),
        "add_int",
        "1",
        "2",
        "--repeat",
        "100",
        "--rounds",
        "3",
        "--runtime",
        ours,
        env={"COLUMNS": "200"},
    )  # the line folds to the width
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("add_int: ")
    assert "per call (median; min " in r.stdout
    assert "over 3 rounds of 100 calls, timed in C" in r.stdout


def test_bench_reports_a_raising_function_without_timing_it(ours):
    doc = bench_json(kernels(), "fail_value", "--str", "nope", rt=ours, expect_rc=1)
    assert doc["error"]["kind"] == "ValueError" and doc["error"]["message"] == "nope"
    r = tvmffi("bench", kernels(), "add_int", "1", "--runtime", ours)
    assert r.returncode == 1 and r.stderr == "TypeError: add_int expects (int, int)\n"


def test_bench_crash_is_contained(ours):
    r = tvmffi("bench", crashy(), "segv", "--runtime", ours)
    assert r.returncode == 1
    assert r.stderr == "tvmffi: error: segv crashed the worker process (SIGSEGV)\n"


@pytest.mark.parametrize("how", ["path", "official"])
def test_bench_without_the_c_timing_loop_loops_through_ctypes(how):
    import json

    import fixturebuild

    off = fixturebuild.official_runtime()
    if off is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    if runtime_problem(str(off)) is not None:
        pytest.skip("the official runtime cannot host our fixture here")
    sel = str(off) if how == "path" else "official"
    r = tvmffi(
        "bench",
        kernels(),
        "add_int",
        "1",
        "2",
        "--runtime",
        sel,
        "--rounds",
        "2",
        "--repeat",
        "1000",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["timer"] == "ctypes" and doc["calls"] == 2000
    assert doc["runtime"]["kind"] == "official" and doc["runtime"]["instrumented"] is False
    assert doc["runtime"]["path"] == str(Path(off).resolve())
    r = tvmffi(
        "bench",
        kernels(),
        "add_int",
        "1",
        "2",
        "--runtime",
        sel,
        "--rounds",
        "2",
        "--repeat",
        "1000",
    )
    assert r.returncode == 0 and "looped through ctypes" in r.stdout
    assert r.stderr.startswith("runtime: official (requested with --runtime")


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--repeat", "0"], "--repeat 0: must be between 1 and"),
        (["--rounds", "x"], "--rounds x: not an integer"),
        (["--rounds", "1000001"], "must be between 1 and 100000"),
    ],
)
def test_bench_usage_errors(args, msg):
    r = tvmffi("bench", kernels(), "add_int", "1", "2", *args)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
