"""valgrind memcheck over a C program that calls every one of the 50 C API
functions (tests/c_hard/capi_all.c: objects, functions, globals, errors,
strings, big integers, data types, reflection, init-once, custom allocator,
streams, tensor allocation and DLPack exchange, containers through the ffi.*
globals, loading a fixture library), and over the runtime test programs:
no definite or indirect leak, no invalid access. Coverage of the 50 names is
checked on the program's undefined symbols, so a function dropped from the
program fails the test."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import fixturebuild
from tvmffi_cli.abi.capi import C_API_NAMES

HERE = Path(__file__).resolve().parent
C_HARD = HERE / "c_hard"
C_EXT = HERE / "c_ext"
C_CORE = HERE / "c"

CAPI_ALL_EXPECTED = """\
live objects: core=+4 env=+0
capi_all: checks=79 failures=0
"""
VALGRIND_ARGS = [
    "--leak-check=full",
    "--errors-for-leak-kinds=definite,indirect",
    "--error-exitcode=99",
]


def basic_library():
    return fixturebuild.build("c/basic.c", headers="ours")


def capi_all_program():
    return fixturebuild.build(
        C_HARD / "capi_all.c", name="hard-capi_all", headers="ours", shared=False
    )


def _libdir():
    return Path(fixturebuild.our_runtime()).parent


def _env():
    return dict(os.environ, LD_LIBRARY_PATH=str(_libdir()))


def parse_summary(text):
    """Numbers from valgrind's closing summary (bytes lost per kind, errors)."""

    def num(pat):
        m = re.search(pat, text)
        return int(m.group(1).replace(",", "")) if m else None

    s = {
        "errors": num(r"ERROR SUMMARY: ([\d,]+) errors"),
        "definite": num(r"definitely lost: ([\d,]+) bytes"),
        "indirect": num(r"indirectly lost: ([\d,]+) bytes"),
        "possible": num(r"possibly lost: ([\d,]+) bytes"),
        "reachable": num(r"still reachable: ([\d,]+) bytes"),
        "invalid": len(
            re.findall(
                r"Invalid (?:read|write|free)|uninitialised|"
                r"Mismatched free",
                text,
            )
        ),
    }
    if "All heap blocks were freed" in text:
        s.update(definite=0, indirect=0, possible=0, reachable=0)
    return s


def run_valgrind(argv, timeout=300):
    vg = shutil.which("valgrind")
    if vg is None:
        pytest.skip("valgrind is not installed (apt-get install valgrind)")
    proc = subprocess.run(
        [vg, *VALGRIND_ARGS, *map(str, argv)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
    )
    return proc, parse_summary(proc.stderr)


def _assert_clean(proc, s, what):
    tail = proc.stderr[-6000:]
    assert s["errors"] == 0 and s["invalid"] == 0, f"{what}: memcheck errors\n{tail}"
    assert s["definite"] == 0 and s["indirect"] == 0, f"{what}: leaks\n{tail}"
    assert proc.returncode != 99, f"{what}: valgrind reported errors\n{tail}"


def test_capi_all_calls_every_c_api_function():
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run(
        [nm, "-u", str(capi_all_program())], capture_output=True, text=True, check=True
    ).stdout
    used = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    missing = sorted(set(C_API_NAMES) - used)
    assert not missing, f"capi_all.c does not call: {missing}"


def test_capi_all_runs_clean_natively():
    proc = subprocess.run(
        [str(capi_all_program()), str(basic_library())],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == CAPI_ALL_EXPECTED


def test_capi_all_under_valgrind():
    proc, s = run_valgrind([capi_all_program(), basic_library()])
    _assert_clean(proc, s, "capi_all")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout == CAPI_ALL_EXPECTED


def _ext(name):
    return fixturebuild.build(
        C_EXT / f"{name}.c", headers="ours", shared=False, name=f"cext-{name}"
    )


def _core(name, flags=()):
    return fixturebuild.build(
        C_CORE / f"{name}.c", name=name, headers="ours", shared=False, flags=["-O1", *flags]
    )


def _libbin():
    return fixturebuild.build(
        "runtime/libbin.c", headers="ours", link_runtime=False, name="libbin-"
    )


RUNTIME_PROGRAMS = [
    ("rt_core", lambda: [_core("rt_core")]),
    ("rt_ext-tensor", lambda: [_ext("rt_ext"), "tensor"]),
    ("rt_ext-bigint", lambda: [_ext("rt_ext"), "bigint"]),
    (
        "rt_ext-load",
        lambda: [
            _ext("rt_ext"),
            "load",
            _libbin(),
            fixturebuild.build("runtime/ctor.c", headers="ours"),
            "loader",
        ],
    ),
    ("container_probe", lambda: [_ext("container_probe")]),
    ("dtype_probe", lambda: [_ext("dtype_probe"), "int8", "float32x4", "complex64", "@3,64,4"]),
    (
        "stress-small",
        lambda: [
            fixturebuild.build(
                C_HARD / "stress.c",
                name="hard-stress",
                headers="ours",
                shared=False,
                flags=["-pthread", "-D_GNU_SOURCE"],
            ),
            2000,
        ],
    ),
    (
        "thread-exit",
        lambda: [
            fixturebuild.build(
                C_HARD / "thread_exit.c",
                name="hard-thread_exit",
                headers="ours",
                shared=False,
                flags=["-pthread"],
            )
        ],
    ),
]


@pytest.mark.parametrize("name,argv", RUNTIME_PROGRAMS, ids=[n for n, _ in RUNTIME_PROGRAMS])
def test_runtime_programs_under_valgrind(name, argv):
    proc, s = run_valgrind(argv())
    _assert_clean(proc, s, name)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]


def test_summary_parser_sees_errors_and_leaks(tmp_path):
    """The checks above can fail: a program with a leak and an invalid read
    is reported as such."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    src = tmp_path / "bad.c"
    src.write_text(
        "#include <stdlib.h>\n#include <stdio.h>\n"
        "int main(void) { int* p = malloc(4 * sizeof(int)); p[0] = 1;\n"
        "  volatile int x = p[4]; (void)x; p = NULL;\n"
        "  char** q = malloc(sizeof(char*)); *q = malloc(10); q = NULL;\n"
        "  return 0; }\n"
    )
    exe = tmp_path / "bad"
    subprocess.run([gcc, "-g", "-O0", str(src), "-o", str(exe)], check=True)
    proc, s = run_valgrind([exe])
    assert proc.returncode == 99
    assert s["invalid"] >= 1 and s["errors"] >= 2
    assert s["definite"] == 16 + 8 and s["indirect"] == 10
