"""Options of the command line as a user meets them (issue 14): config flags in
order, global options anywhere, -V, -q, numeric validation, exit codes for
what the user gave wrong, output width and trailing blanks."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest

from tvmffi_cli.cli.main import hoist_global_flags
from tvmffi_cli.render.common import NoTrailingSpace, fit_lines, strip_trailing

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "src" / "tvmffi_cli" / "schemas"


def tvmffi(
    *args: str, env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    return r.stderr


@pytest.fixture(scope="module")
def add_lib(tmp_path_factory: pytest.TempPathFactory) -> str:
    """examples/add_one.c built with what `tvmffi config` prints."""
    flags = tvmffi("config", "--cflags", "--ldflags", "--libs").stdout.split()
    out = tmp_path_factory.mktemp("lib") / "libadd_one.so"
    r = subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-shared",
            "-fPIC",
            str(ROOT / "examples" / "add_one.c"),
            "-o",
            str(out),
            *flags,
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return str(out)


@pytest.fixture(scope="module")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("txt") / "notes.txt"
    p.write_text("not a library\n")
    return str(p)


# ------------------------------------------------------------------ config


def test_config_prints_every_flag_in_the_order_given() -> None:
    inc = tvmffi("config", "--includedir").stdout.strip()
    libdir = tvmffi("config", "--libdir").stdout.strip()
    r = tvmffi("config", "--cflags", "--libs")
    assert r.returncode == 0
    assert r.stdout.splitlines() == [f"-I{inc}", "-ltvm_ffi"]
    r = tvmffi("config", "--libs", "--ldflags", "--cflags")
    assert r.stdout.splitlines() == ["-ltvm_ffi", f"-L{libdir}", f"-I{inc}"]


def test_config_has_the_flags_of_tvm_ffi_config() -> None:
    want: dict[str, Callable[[str], bool]] = {
        "--includedir": lambda v: (Path(v) / "tvm" / "ffi" / "c_api.h").is_file(),
        "--dlpack-includedir": lambda v: (Path(v) / "dlpack" / "dlpack.h").is_file(),
        "--libdir": lambda v: (Path(v) / "libtvm_ffi.so").is_file(),
        "--libfiles": lambda v: Path(v).name == "libtvm_ffi.so" and Path(v).is_file(),
        "--cmakedir": lambda v: (Path(v) / "tvm_ffi-config.cmake").is_file(),
        "--cflags": lambda v: v.startswith("-I") and "-std" not in v,
        "--cxxflags": lambda v: v.startswith("-I") and v.endswith(" -std=c++17"),
        "--ldflags": lambda v: v.startswith("-L"),
        "--libs": lambda v: v == "-ltvm_ffi",
    }
    r = tvmffi("config", *want)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(want)
    for (flag, ok), line in zip(want.items(), lines):
        assert ok(line), (flag, line)


def test_config_json_has_every_value_and_matches_schema() -> None:
    doc = json.loads(tvmffi("config", "--json").stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "config.schema.json").read_text()))
    assert {"dlpack_includedir", "cmakedir", "cxxflags"} <= set(doc)


# ------------------------------------------------------------------ globals


def test_version_short_and_long() -> None:
    import tvmffi_cli

    for flag in ("-V", "--version"):
        r = tvmffi(flag)
        assert r.returncode == 0
        assert r.stdout.strip() == f"tvmffi, version {tvmffi_cli.__version__}"


def test_quiet_prints_nothing_but_keeps_exit_code_and_error(text_file: str) -> None:
    r = tvmffi("-q", "config", "--libs")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    r = tvmffi("config", "--libs", "--quiet")  # after the subcommand too
    assert r.returncode == 0 and r.stdout == ""
    r = tvmffi("inspect", text_file, "-q")  # the fast path of inspect
    assert r.returncode == 2 and r.stdout == ""
    assert "not a library" in one_line_error(r)


def test_debug_after_the_subcommand_is_the_global_flag(text_file: str) -> None:
    r = tvmffi("config", "--libs", "--debug")
    assert r.returncode == 0 and r.stdout.strip() == "-ltvm_ffi"
    r = tvmffi("conform", text_file, "--debug")
    assert r.returncode == 2
    assert "Traceback" in r.stderr  # --debug shows where the error came from
    assert "not a library" in r.stderr


def test_global_flags_are_not_taken_from_values_or_after_double_dash() -> None:
    assert hoist_global_flags(["call", "l.so", "f", "-q"]) == (["-q"], ["-q", "call", "l.so", "f"])
    assert hoist_global_flags(["call", "l.so", "f", "--str", "-q"]) == (
        [],
        ["call", "l.so", "f", "--str", "-q"],
    )
    assert hoist_global_flags(["call", "l.so", "f", "--", "--debug"]) == (
        [],
        ["call", "l.so", "f", "--", "--debug"],
    )
    assert hoist_global_flags(["--debug", "inspect", "x", "--quiet"]) == (
        ["--debug", "--quiet"],
        ["--debug", "--quiet", "inspect", "x"],
    )


# ------------------------------------------------------------------ numbers

NUMERIC = [
    ("inspect", "--timeout"),
    ("conform", "--timeout"),
    ("conform", "--jobs"),
    ("call", "--timeout"),
    ("bench", "--timeout"),
    ("bench", "--repeat"),
    ("bench", "--rounds"),
    ("stubs", "--timeout"),
    ("diff", "--timeout"),
]


@pytest.mark.parametrize(("cmd", "flag"), NUMERIC)
@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "abc", "1e99"])
def test_every_numeric_option_is_validated(add_lib: str, cmd: str, flag: str, value: str) -> None:
    if flag in ("--jobs", "--repeat", "--rounds") and value == "1e99":
        value = "99999999999999999999999"
    args = [cmd, add_lib]
    if cmd in ("call", "bench"):
        args += ["mul3", "1", "2", "3"]
    elif cmd == "diff":
        args += [add_lib]
    r = tvmffi(*args, flag, value)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = one_line_error(r)
    assert flag in err and value in err


def test_valid_numbers_still_work(add_lib: str) -> None:
    assert tvmffi("inspect", add_lib, "--timeout", "20").returncode == 0
    assert tvmffi("conform", add_lib, "--timeout", "5", "--jobs", "1").returncode == 0


# ------------------------------------------------------------------ exit codes


@pytest.mark.parametrize("cmd", ["inspect", "conform", "call", "bench", "stubs", "diff"])
@pytest.mark.parametrize("which", ["program", "text"])
def test_not_a_library_is_exit_2(cmd: str, which: str, text_file: str) -> None:
    path = "/bin/ls" if which == "program" else text_file
    if which == "program" and not Path(path).exists():
        pytest.skip("/bin/ls is missing")
    args = [cmd, path] + (["f"] if cmd in ("call", "bench") else [path] if cmd == "diff" else [])
    r = tvmffi(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = one_line_error(r)
    assert path in err or os.path.realpath(path) in err


def test_a_program_still_reads_statically() -> None:
    if not Path("/bin/ls").exists():
        pytest.skip("/bin/ls is missing")
    r = tvmffi("inspect", "--static", "--json", "/bin/ls")
    assert r.returncode == 0
    assert json.loads(r.stdout)["kind"] == "executable"  # a PIE, not "shared"


@pytest.mark.parametrize("cmd", ["inspect", "conform", "call"])
@pytest.mark.parametrize("runtime", ["text", "program", "missing"])
def test_bad_runtime_is_exit_2(add_lib: str, text_file: str, cmd: str, runtime: str) -> None:
    rt = {"text": text_file, "program": "/bin/ls", "missing": "/nonexistent/libtvm_ffi.so"}[runtime]
    args = [cmd, add_lib] + (["mul3", "1", "2", "3"] if cmd == "call" else [])
    r = tvmffi(*args, env={"TVMFFI_RUNTIME": rt})
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "TVMFFI_RUNTIME" in one_line_error(r)


def test_the_library_failing_is_still_exit_1(add_lib: str) -> None:
    """Contrast: a good file whose call fails is the library's doing (1)."""
    r = tvmffi("call", add_lib, "add_one", "--tensor", "int32[3]:zeros")
    assert r.returncode == 1, (r.stdout, r.stderr)


def test_usage_errors_are_one_line() -> None:
    for args in (["frobnicate"], ["inspect", "--bogus", "x"], ["config", "--nope"]):
        r = tvmffi(*args)
        assert r.returncode == 2
        assert "--help" in one_line_error(r)


# ------------------------------------------------------------------ people's output


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "{lib}"],
        ["inspect", "--static", "{lib}"],
        ["conform", "{lib}"],
        ["call", "{lib}", "add_one", "--tensor", "float32[40]:arange"],
        ["bench", "{lib}", "mul3", "1", "2", "3", "--rounds", "2", "--repeat", "10"],
        ["--help"],
        ["config", "--help"],
    ],
)
def test_human_output_has_no_trailing_blanks_and_fits_60_columns(
    add_lib: str, args: list[str]
) -> None:
    r = tvmffi(*[a.format(lib=add_lib) for a in args], env={"COLUMNS": "60", "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines
    assert [ln for ln in lines if ln != ln.rstrip()] == []
    # A path cannot be broken; conform's verdict line stays one line on purpose
    # (soft_wrap: CI logs grep it); everything else fits.
    assert [
        ln
        for ln in lines
        if len(ln) > 60 and add_lib not in ln and not ln.startswith("tvmffi conform ")
    ] == []


def test_strip_trailing_keeps_colour_codes() -> None:
    assert strip_trailing("a  \x1b[0m  \x1b[1m") == "a\x1b[0m\x1b[1m"
    assert strip_trailing("  x") == "  x"
    sink = io.StringIO()
    w = NoTrailingSpace(sink)
    w.write("ab  \ncd")
    assert sink.getvalue() == "ab\n"  # "cd" waits for the end of its line
    w.write("  \nef ")
    w.flush()
    assert sink.getvalue() == "ab\ncd\nef "


def test_fit_lines_breaks_long_lines_at_blanks() -> None:
    text = "  " + " ".join(f"w{i:02d}" for i in range(30))
    lines = fit_lines(text, 40).splitlines()
    assert all(len(ln) <= 40 for ln in lines) and len(lines) > 1
    assert lines[1].startswith("    w")
    assert " ".join(" ".join(ln.split()) for ln in lines) == " ".join(text.split())


# ------------------------------------------------------------------ completion


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_for_each_documented_shell(shell: str) -> None:
    r = tvmffi(env={"_TVMFFI_COMPLETE": f"{shell}_source"})
    assert r.returncode == 0, r.stderr
    assert "_tvmffi_completion" in r.stdout
    assert "_TVMFFI_COMPLETE" in r.stdout  # the script calls back into tvmffi
    readme = (ROOT / "README.md").read_text()
    assert f"_TVMFFI_COMPLETE={shell}_source tvmffi" in readme


def test_completion_answers_for_commands_and_config_flags() -> None:
    r = tvmffi(
        env={"_TVMFFI_COMPLETE": "bash_complete", "COMP_WORDS": "tvmffi con", "COMP_CWORD": "1"}
    )
    assert r.stdout.split() == ["plain,conform", "plain,config"]
    r = tvmffi(
        env={
            "_TVMFFI_COMPLETE": "bash_complete",
            "COMP_WORDS": "tvmffi config --cm",
            "COMP_CWORD": "2",
        }
    )
    assert r.stdout.split() == ["plain,--cmakedir"]
