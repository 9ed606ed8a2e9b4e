"""`tvmffi conform` in CI: version skew (min-runtime, inspect's
min_runtime_version), exit-clean, reproducers, configuration and
suppressions, JUnit without false failures, --strict and the summary line."""

import json
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from test_conform import ROOT, bad_results, conform, conform_json
from tvmffi_cli.abi import versions


# --- the version table ------------------------------------------------------------
def test_min_runtime_table():
    assert versions.min_runtime([]).version == "0.1.0"
    assert versions.min_runtime(["TVMFFIFunctionCall"]).version == "0.1.0"
    assert versions.min_runtime(["TVMFFIHandleInitOnce", "TVMFFIObjectIncRef"]).version == "0.1.5"
    r = versions.min_runtime(["TVMFFITensorCreateUnsafeView", "TVMFFISetCustomAllocator"])
    assert r.version == "0.1.13" and r.reasons == ("TVMFFISetCustomAllocator needs 0.1.13",)
    r = versions.min_runtime(["TVMFFIErrorCreateWithCauseAndExtraContext"])
    assert r.version == "0.1.8" and any("Error object" in x for x in r.reasons)
    assert versions.newer("0.1.13", "0.1.8") and not versions.newer("0.1.8", "0.1.8.post2")
    with pytest.raises(ValueError):
        versions.parse_version("latest")


def test_inspect_reports_min_runtime_version(build_lib):
    lib = build_lib("conform/needs_0_1_8.c")
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", "--json", "--static", str(lib)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    schema = json.loads((ROOT / "src/tvmffi_cli/schemas/inspect.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["min_runtime_version"] == "0.1.8"
    assert "TVMFFIErrorCreateWithCauseAndExtraContext needs 0.1.8" in doc["min_runtime_reasons"]
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", "--static", str(lib)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**__import__("os").environ, "NO_COLOR": "1", "COLUMNS": "300"},
    )
    assert "apache-tvm-ffi runtime >= 0.1.8" in r.stdout


def test_min_runtime_fails_a_library_needing_a_newer_runtime(build_lib):
    lib = build_lib("conform/needs_0_1_8.c")
    r, doc = conform_json(lib, "--min-runtime", "0.1.5")
    assert r.returncode == 1 and bad_results(doc) == {("min-runtime", None)}
    res = next(x for x in doc["results"] if x["check"] == "min-runtime")
    assert "needs apache-tvm-ffi >= 0.1.8 but must run on 0.1.5" in res["message"]
    assert doc["min_runtime_version"] == "0.1.8"
    # The reproducer shows the failure again and exits 1.
    again = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *shlex.split(res["reproduce"])[1:]],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**__import__("os").environ, "NO_COLOR": "1", "COLUMNS": "300"},
    )
    assert again.returncode == 1 and "must run on 0.1.5" in again.stdout
    r, doc = conform_json(lib, "--min-runtime", "0.1.8")
    assert r.returncode == 0 and not bad_results(doc)
    r = conform(lib, "--min-runtime", "soon")
    assert r.returncode == 2 and "not a version" in r.stderr and r.stderr.count("\n") == 1


# --- exit ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "defines, needle",
    [
        ((), "killed by SIGSEGV at exit"),
        (("CONFORM_EXIT_HANG",), "hangs at exit: no exit within 2 s"),
    ],
)
def test_exit_clean_catches_crash_and_hang_at_exit(build_lib, defines, needle):
    lib = build_lib("conform/exit_crash.c", defines=defines)
    r, doc = conform_json(lib, "--timeout", "2")
    assert r.returncode == 1
    assert bad_results(doc) == {("exit-clean", None)}
    res = next(x for x in doc["results"] if x["check"] == "exit-clean")
    assert needle in res["message"]
    cmd = shlex.split(res["reproduce"])
    assert cmd[:5] == ["tvmffi", "conform", str(lib), "--select", "exit-clean"]
    again = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *cmd[1:], "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert again.returncode == 1 and needle in again.stdout


def test_exit_clean_fresh_process_reads_a_library_outside_the_tree(build_lib, tmp_path):
    # When no probe worker ended normally (every one crashed), exit-clean loads
    # the library in a fresh worker; that worker must be allowed to read the
    # library where it is (xgrammar in ~/.cache: "Permission denied", skipped).
    from tvmffi_cli.conform import exit_check

    lib = tmp_path / "elsewhere" / "libgood.so"
    lib.parent.mkdir()
    shutil.copy(build_lib("conform/good.c"), lib)
    got = exit_check.run(str(lib), 10.0)
    assert (got.status, got.message) == ("pass", "loaded, released and exited with status 0")


def test_exit_clean_passes_good_libraries(build_lib):
    r, doc = conform_json(build_lib("conform/good.c"), "--select", "library-load,exit-clean")
    assert r.returncode == 0
    assert {x["check"]: x["status"] for x in doc["results"]} == {
        "library-load": "pass",
        "exit-clean": "pass",
    }


# --- configuration -------------------------------------------------------------------
def _pyproject(tmp_path, body):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n" + body)
    return tmp_path


def test_pyproject_suppression_with_reason(build_lib, tmp_path):
    lib = build_lib("conform/exit_crash.c")
    d = _pyproject(
        tmp_path,
        '[tool.tvmffi.conform]\nignore = ["doc-utf8"]\n\n'
        '[[tool.tvmffi.conform.suppress]]\ncheck = "exit-clean"\n'
        'reason = "the vendor driver crashes at exit; tracked upstream"\n',
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "tvmffi_cli",
            "conform",
            str(lib),
            "--json",
            "--junit-xml",
            "out.xml",
        ],
        capture_output=True,
        text=True,
        cwd=d,
        check=False,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout
    doc = json.loads(r.stdout)
    res = next(x for x in doc["results"] if x["check"] == "exit-clean")
    assert res["status"] == "fail"
    assert res["suppressed"] == "the vendor driver crashes at exit; tracked upstream"
    assert not any(x["check"] == "doc-utf8" for x in doc["results"])
    suite = ET.parse(d / "out.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    case = next(c for c in suite.iter("testcase") if c.get("name") == "exit-clean")
    assert "tracked upstream" in case.find("skipped").get("message")


def test_suppression_by_function_glob(build_lib, tmp_path):
    cfg = tmp_path / "conform.toml"
    cfg.write_text(
        '[[suppress]]\ncheck = "error-protocol"\nfunction = "error_protocol__*"\n'
        'reason = "legacy return codes, fixed in v2"\n'
    )
    r, doc = conform_json(build_lib("conform/zoo.c"), "--select", "error-protocol", "--config", cfg)
    assert r.returncode == 0
    sup = {x["function"] for x in doc["results"] if x.get("suppressed")}
    assert sup == {
        "error_protocol__returns_one",
        "error_protocol__no_error",
        "error_protocol__stale_error",
    }


@pytest.mark.parametrize(
    "body, needle",
    [
        ('[[suppress]]\ncheck = "no-leak"\n', "needs a reason"),
        ('[[suppress]]\ncheck = "no-such-check"\nreason = "x"\n', "check must be one of"),
        ('select = ["nope"]\n', "unknown check id 'nope'"),
        ("threads = 1\n", "threads must be an integer >= 2"),
        ('colour = "red"\n', "unknown key(s) colour"),
        ("[[suppress\n", "not valid TOML"),
    ],
)
def test_bad_configuration_is_a_usage_error(build_lib, tmp_path, body, needle):
    cfg = tmp_path / "c.toml"
    cfg.write_text(body)
    r = conform(build_lib("conform/good.c"), "--config", cfg)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1


# --- JUnit, --strict, summary -----------------------------------------------------------
def test_warnings_never_fail_junit_when_the_run_passes(build_lib, tmp_path):
    lib = build_lib("conform/zoo.c")
    out = tmp_path / "j.xml"
    r = conform(lib, "--select", "export-names,orphan-getter", "--junit-xml", out)
    assert r.returncode == 0
    root = ET.parse(out).getroot()
    assert not list(root.iter("failure")) and not list(root.iter("error"))
    warned = [
        c
        for c in root.iter("testcase")
        if any(p.get("name") == "warning" for p in c.iter("property"))
    ]
    assert {c.get("name") for c in warned} == {"export-names", "orphan-getter"}
    assert "tvmffi conform PASSED" in root.find("testsuite").find("system-out").text
    # --strict: the same warnings fail the run, and are failures in JUnit.
    r = conform(lib, "--select", "export-names,orphan-getter", "--strict", "--junit-xml", out)
    assert r.returncode == 1
    assert len(list(ET.parse(out).getroot().iter("failure"))) == len(warned)


def test_summary_line_is_last_and_plain(build_lib):
    r = conform(
        build_lib("conform/zoo.c"),
        "--select",
        "symbol-kind",
        env={"NO_COLOR": "1", "COLUMNS": "80"},
    )
    last = r.stdout.rstrip("\n").splitlines()[-1]
    assert last.startswith("tvmffi conform FAILED zoo-") and "1 error(s), 0 warning(s)" in last
    assert "Reproduce:" in r.stdout and r.stderr == ""  # no progress bar without a terminal


@pytest.mark.parametrize(
    "fn, first, needle",
    [
        ("no_crash__abort", ["tvmffi", "call"], "crashed the worker process (SIGABRT)"),
        # the call that crashed, with its arguments (the probe's int)
        ("no_crash__segv", ["tvmffi", "call"], "crashed the worker process (SIGSEGV)"),
    ],
)
def test_crash_reproducers_exit_1(build_lib, fn, first, needle):
    lib = build_lib("conform/zoo.c")
    r, doc = conform_json(lib, "--select", "no-crash", "--function", fn)
    assert r.returncode == 1 and [x["function"] for x in doc["results"]] == [fn]
    cmd = shlex.split(doc["results"][0]["reproduce"])
    assert cmd[:2] == first and cmd[2] == str(lib)
    again = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *cmd[1:]],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "NO_COLOR": "1", "COLUMNS": "300"},
    )
    assert again.returncode == 1 and needle in again.stdout + again.stderr


def test_exit_failure_under_a_runtime_that_itself_fails_is_not_blamed(monkeypatch):
    from tvmffi_cli.conform import exit_check
    from tvmffi_cli.conform.results import Result

    bad = Result("exit-clean", None, "fail", "the process is killed by SIGSEGV at exit")
    assert exit_check.blame_runtime(bad, 1.0, None) is bad  # our runtime: no control run
    calls = []

    def control(path, timeout, runtime):
        calls.append((path, runtime))
        return Result("exit-clean", None, "fail", "killed by SIGABRT at exit")

    monkeypatch.setattr(exit_check, "run", control)
    got = exit_check.blame_runtime(bad, 1.0, "/rt/libtvm_ffi.so")
    assert calls == [(None, "/rt/libtvm_ffi.so")] and got.status == "skip"
    assert "alone does not exit cleanly either" in got.message
    monkeypatch.setattr(
        exit_check, "run", lambda *a: Result("exit-clean", None, "pass", "exited with status 0")
    )
    assert exit_check.blame_runtime(bad, 1.0, "/rt/libtvm_ffi.so") is bad


def test_progress_bar_only_on_long_runs():
    from tvmffi_cli.cli.conform import PROGRESS_MIN, _ProgressBar

    bar = _ProgressBar()
    bar.update(1, PROGRESS_MIN - 1, "f")
    assert bar._p is None  # a short run: no bar
    bar.update(1, PROGRESS_MIN, "f")
    assert bar._p is not None
    bar.close()
