"""What a new user meets in the first hour (issue 31): `tvmffi` alone, one
line for every unknown option, Object parameters given as positionals,
globals as attributes of a loaded library, output at 80 columns and in a
pipe, a crash that says it read past the arguments, docs/call.md's messages.

T is the official test library of the apache-tvm-ffi test dependency
(tvm_ffi/lib/libtvm_ffi_testing.so). Cost: about 40 tvmffi runs, ~40 s on
2 cores.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

import fixturebuild
from test_call_helpers import kernels, tvmffi, typed
from test_readme import missing_lines, parse_readme

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def T() -> str:
    d = fixturebuild.official_package_dir()
    lib = d / "lib" / "libtvm_ffi_testing.so" if d else None
    if lib is None or not lib.is_file():
        pytest.skip("apache-tvm-ffi (its test library) is not installed")
    return str(lib)


def narrow(*args, columns=80, **kw):
    env = {"COLUMNS": str(columns), "NO_COLOR": "1"}
    env.update(kw.pop("env", {}))
    return tvmffi(*args, env=env, **kw)


# ---------------------------------------------------------------------------
# `tvmffi` alone


def test_no_arguments_prints_a_short_usage_and_exits_0():
    r = tvmffi()
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == "usage: tvmffi [-V] [-q] [--debug] COMMAND [ARGS]..."
    for cmd in ("inspect", "call", "bench", "conform", "config", "stubs", "diff", "extract"):
        assert any(ln.startswith(f"  {cmd}  ") for ln in lines), cmd
    assert all(len(ln) <= 80 for ln in lines)
    assert lines[-1].startswith("`tvmffi COMMAND --help`")
    assert tvmffi("-q").stdout == ""  # quiet: nothing on stdout, still exit 0


# ---------------------------------------------------------------------------
# one error style


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["conform", "x.so", "--selct", "a"],
            "tvmffi conform: error: unknown option --selct (did you mean --select?)",
        ),
        (["call", "--jsn"], "tvmffi call: error: unknown option --jsn (did you mean --json?)"),
        (
            ["bench", "x.so", "f", "--rpeat", "3"],
            "tvmffi bench: error: unknown option --rpeat (did you mean --repeat?)",
        ),
        (
            ["inspect", "--stati", "x.so"],
            "tvmffi inspect: error: unknown option --stati (did you mean --static?)",
        ),
        (
            ["stubs", "--chek", "x.so"],
            "tvmffi stubs: error: unknown option --chek (did you mean --check?)",
        ),
        (
            ["extract", "--forc", "x.so"],
            "tvmffi extract: error: unknown option --forc (did you mean --force?)",
        ),
        (["config", "--lbs"], "tvmffi config: error: unknown option --lbs (did you mean --libs?)"),
        (["--debg", "config"], "tvmffi: error: unknown option --debg (did you mean --debug?)"),
        (
            ["stubs", "--zzzz", "x.so"],
            "tvmffi stubs: error: unknown option --zzzz (see tvmffi stubs --help)",
        ),
        (
            ["call", "x.so", "f", "-zz"],
            "tvmffi call: error: unknown option -zz (see tvmffi call --help; "
            "a text starting with '-' goes after --str or after --)",
        ),
    ],
)
def test_unknown_options_are_one_line_of_one_form(argv, line):
    r = tvmffi(*argv)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", line + "\n")


def test_conform_function_typo_names_the_closest(T):
    r = tvmffi("conform", T, "--select", "library-load", "--function", "testing.ech")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--function testing.ech: the library has no such" in r.stderr
    assert "; closest: testing.echo" in r.stderr


def _docs_error_examples():
    blocks = parse_readme((ROOT / "docs" / "call.md").read_text())
    return [
        c
        for b in blocks
        for c in b.commands
        if c.text.startswith("tvmffi call lib.so ")
        and any(re.match(r"tvmffi( call)?: error:", e) for e in c.expected)
    ]


def test_docs_call_md_shows_the_messages_the_program_prints():
    """Each error example of docs/call.md, run on the call fixtures (lib.so:
    kernels.c for the add_* names, typed.cc for the schema-typed ones)."""
    import shlex

    examples = _docs_error_examples()
    assert len(examples) >= 5
    for c in examples:
        argv = shlex.split(c.text, comments=True)[3:]
        lib = kernels() if argv[0].startswith("add_") else typed()
        r = tvmffi("call", lib, *argv)
        got = r.stderr.replace(lib.name, "lib.so")
        assert r.returncode == c.exit_code, (c.text, r.stderr)
        assert missing_lines(c.expected, got) == [], f"docs/call.md:{c.line}: {c.text}\n{got}"


# ---------------------------------------------------------------------------
# Object parameters as positionals


@pytest.mark.parametrize("runtime", ["builtin", "official"])
def test_object_parameters_take_positionals_by_the_schema(T, runtime):
    r = tvmffi("call", T, "testing.object_use_count", "float32[2]:ones", "--runtime", runtime)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["1", "arg0 after the call: <Tensor float32[2] on cpu:0>"]
    r = tvmffi("call", T, "testing.schema_id_object", "[1,2]", "--json", "--runtime", runtime)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["type"], doc["result"]) == ("Array", [1, 2])
    r = tvmffi("call", T, "testing.schema_id_object", '{"a": 1}', "--runtime", runtime)
    assert (r.returncode, r.stdout) == (0, '{"a": 1}\n'), r.stderr


def test_an_object_parameter_says_what_it_takes(T):
    r = tvmffi("call", T, "testing.object_use_count", "5")
    assert r.returncode == 2
    assert r.stderr == (
        "tvmffi: error: argument 0 '5': expected an Object: a JSON list or object "
        "(Array, Map) or a tensor (x.npy, float32[2]:ones)\n"
    )


# ---------------------------------------------------------------------------
# Python API: globals as attributes and items


def test_loaded_library_reaches_globals_by_attribute_and_item(T):
    code = f"""
import tvmffi_cli
lib = tvmffi_cli.load({T!r})
print(lib.testing.add_one(1), lib["testing.add_one"](2), "testing.add_one" in lib)
print(lib.get_global("testing.add_one")(3), "add_one" in dir(lib.testing), "testing" in dir(lib))
for get in (lambda: lib.testing.ad_one, lambda: lib["testing.ad_one"]):
    try:
        get()
    except (AttributeError, KeyError) as e:
        print(type(e).__name__, str(e).strip("'\\""))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    missing = (
        "libtvm_ffi_testing.so has no function 'testing.ad_one' (no export, no global); "
        "closest: testing.add_one"
    )
    lines = r.stdout.splitlines()
    assert lines[:2] == ["2 3 True", "4 True True"]
    assert lines[2].startswith(f"AttributeError {missing}") and lines[3].startswith(
        f"KeyError {missing}"
    )


# ---------------------------------------------------------------------------
# 80 columns and pipes


def _exports_lines(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if "Functions (" in ln)
    end = next(
        (i for i, ln in enumerate(lines) if i > start and ln[:4] in ("├── ", "└── ")), len(lines)
    )
    return lines[start + 1 : end]


def test_inspect_at_80_columns_keeps_signatures_and_docs(T):
    r = narrow("inspect", T)
    assert r.returncode == 0, r.stderr
    body = _exports_lines(r.stdout)
    text = "\n".join(body)
    assert "testing_dll_schema_id_int(int) -> int" in text
    assert "testing_dll_test_add_with_docstring(int, int) -> int" in text
    assert "…" not in text
    doc = " ".join(ln.strip("│└├─ ") for ln in body if "Add two" in ln or "sum." in ln)
    assert "Add two integers" in doc, body
    assert all(len(ln) <= 80 for ln in body), body


def test_inspect_at_80_columns_keeps_the_doc_column_when_it_fits(build_lib):
    lib = fixturebuild.build(
        "call/typed.cc",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
        flags=["-Wno-unused-parameter"],
    )
    wide, slim = tvmffi("inspect", lib, env={"COLUMNS": "200"}), narrow("inspect", lib)
    assert wide.returncode == slim.returncode == 0
    for out in (wide.stdout, slim.stdout):
        sigs = [ln for ln in _exports_lines(out) if "sum_list" in ln]
        assert any("sum_list(Array[int]) -> int" in ln for ln in sigs), sigs
    assert all(len(ln) <= 80 for ln in _exports_lines(slim.stdout))


def test_conform_at_80_columns_breaks_neither_names_nor_findings(T):
    r = narrow(
        "conform",
        T,
        "--select",
        "arg-bounds",
        "--function",
        "testing.echo",
        "--function",
        "testing.object_use_count",
    )
    lines = r.stdout.splitlines()
    assert lines[0] == f"tvmffi conform {T}"  # the path is never broken
    row = next(ln for ln in lines if ln.startswith("testing.echo "))
    assert row.split()[:2] == ["testing.echo", "WARN"]
    i = lines.index(row)
    finding = " ".join(ln.strip() for ln in lines[i + 1 : i + 5] if ln.startswith("    "))
    assert finding.startswith("arg-bounds (warning): out-of-bounds argument read: called with 0")
    table = lines[: lines.index("Reproduce:")]  # reproducers and fixes are one line each
    assert [ln for ln in table if len(ln) > 80 and T not in ln] == []


def test_conform_keeps_its_table_where_it_fits(T):
    r = narrow("conform", T, "--select", "arg-bounds", "--function", "testing.echo", columns=160)
    assert any(
        re.match(r"┃ function +┃ status ┃ +checks ┃ findings", ln) for ln in r.stdout.splitlines()
    )


def test_call_matrix_title_keeps_the_path_whole(T):
    r = narrow("call", T, "testing.add_one", "1", "--runtime", "builtin", "--runtime", "official")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"tvmffi call {T} testing.add_one"


def _in_terminal(argv, columns, how):
    """Run argv with stdout a pipe and a pseudo-terminal of `columns` as
    stderr ("stderr") or only as the controlling terminal ("tty"); "none":
    no terminal at all (a new session)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TVMFFI_RUNTIME")}
    env["NO_COLOR"] = "1"

    def own_terminal():
        os.setsid()
        if how == "tty":
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    try:
        p = subprocess.run(
            [sys.executable, "-m", "tvmffi_cli", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave if how == "stderr" else subprocess.PIPE,
            preexec_fn=own_terminal,
            env=env,
            timeout=120,
        )
    finally:
        os.close(slave)
        os.close(master)
    return p.stdout.decode()


@pytest.mark.parametrize("how", ["stderr", "tty"])
def test_a_pipe_in_a_terminal_is_as_wide_as_the_terminal(T, how):
    out = _in_terminal(["inspect", T], 80, how)
    body = _exports_lines(out)
    assert body and all(len(ln) <= 80 for ln in body), body
    assert not any(ln.strip(" │").startswith("name ") for ln in body)  # the narrow form


def test_a_pipe_without_a_terminal_is_160_wide(T):
    out = _in_terminal(["inspect", T], 80, "none")
    assert any(ln.strip(" │└─").startswith("name ") for ln in _exports_lines(out))


# ---------------------------------------------------------------------------
# a crash says why


@pytest.mark.parametrize("runtime", ["builtin", "official"])
def test_a_call_that_reads_past_its_arguments_says_so(T, runtime):
    r = tvmffi("call", T, "testing.echo", "--runtime", runtime)
    assert r.returncode == 1 and r.stdout == ""
    lines = [ln for ln in r.stderr.splitlines() if not ln.startswith("runtime: ")]
    assert lines == [
        "tvmffi: error: testing.echo crashed the worker process (SIGSEGV): out-of-bounds "
        "argument read: called with 0 arguments, it read args[0] from the guard page"
    ]
    r = tvmffi("call", T, "testing.echo", "--json", "--runtime", runtime)
    err = json.loads(r.stdout)["error"]
    assert err["kind"] == "Crash" and "it read args[0] from the guard page" in err["message"]


def test_the_official_runtimes_backtrace_only_with_v(T):
    r = tvmffi("call", T, "testing.echo", "--runtime", "official", "-v")
    assert r.returncode == 1
    assert "Segfault encountered" in r.stderr and "it read args[0] from the guard page" in r.stderr


def test_a_crash_elsewhere_is_not_blamed_on_the_arguments():
    r = tvmffi("call", fixturebuild.build("c/crashy.c", headers="ours"), "segv")
    assert r.returncode == 1
    assert r.stderr == "tvmffi: error: segv crashed the worker process (SIGSEGV)\n"


# ---------------------------------------------------------------------------
# the run leaves nothing in the temp directory


def test_the_session_check_fails_a_run_that_litters(tmp_path):
    (tmp_path / "test_litter.py").write_text(
        "import tempfile\n\ndef test_litters():\n    tempfile.mkdtemp(prefix='left-behind-')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TVMFFI_TEST_RUN_TMPDIR"}
    env["PYTHONPATH"] = str(ROOT / "tests")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "-q",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path / "test_litter.py"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 passed" in r.stdout
    assert re.search(
        r"FAILED \(litter\): the run left 1 entr\S* in the temp directory: left-behind-", r.stdout
    )
