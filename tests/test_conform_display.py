"""conform and inspect say what they did (issue 20 item 7): --function counts
only the selected functions; the progress callback names the function being
probed (a hang shows the culprit, not the last one done); a library whose
dependency is missing is "not loaded", not "ok" next to its load failure."""

import json
import subprocess
from pathlib import Path

import pytest

import fixturebuild
from test_call_helpers import tvmffi as run_tvmffi
from tvmffi_cli.conform import runner

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lib():
    return str(fixturebuild.build(ROOT / "examples" / "add_one.c", name="contract_add_one"))


def tvmffi(*args):
    return run_tvmffi(*args, env={"COLUMNS": "200"}, timeout=300)


def test_function_option_counts_only_the_selected(lib):
    r = tvmffi("conform", "--json", "--select", "no-crash", "--function", "mul3", lib)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["functions"], doc["globals"]) == (["mul3"], [])
    assert " over 1 function(s) " in doc["summary_line"]


def test_progress_names_the_running_function(lib):
    calls = []
    opts = runner.Options(select=frozenset({"no-crash"}), jobs=1)
    rep = runner.run(lib, progress=lambda d, t, n: calls.append((d, t, n)), options=opts)
    names = list(rep.functions) + list(rep.globals)
    n = len(names)
    assert n >= 3 and len(calls) == 2 * n
    # -j 1: each function is named while it runs (done not yet counted), then
    # its end is reported with nothing running.
    for i in range(n):
        start, end = calls[2 * i], calls[2 * i + 1]
        assert start[:2] == (i, n) and start[2] in names
        assert end == (i + 1, n, "")
    assert sorted(c[2] for c in calls[::2]) == sorted(names)


def test_missing_dependency_is_not_loaded(tmp_path):
    dep = tmp_path / "libgone_dep.so"
    (tmp_path / "gone.c").write_text("int gone(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", tmp_path / "gone.c", "-o", dep], check=True)
    lib = tmp_path / "libneeds_gone.so"
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            f"-I{fixturebuild.our_include()}",
            ROOT / "fixtures/c/needs_gone.c",
        ]
        + ["-Wl,--no-as-needed", f"-L{tmp_path}", "-lgone_dep"]
        + [f"-L{fixturebuild.our_runtime().parent}", "-ltvm_ffi", "-o", lib],
        check=True,
    )
    dep.unlink()
    r = tvmffi("inspect", lib)
    assert r.returncode == 1
    assert r.stdout.splitlines()[0].endswith("(load failed: static facts only)")
    r = tvmffi("conform", lib)
    assert r.returncode == 1
    row = next(ln for ln in r.stdout.splitlines() if "all 1 function" in ln)
    assert "not loaded" in row and "not probed: the library did not load" in row
    assert " ok " not in row
