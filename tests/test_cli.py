"""The command-line shell: help, version, config, exit codes, one-line errors."""

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tvmffi_cli.abi.capi import C_API_NAMES

SCHEMAS = Path(__file__).resolve().parents[1] / "src" / "tvmffi_cli" / "schemas"

C_API = sorted(C_API_NAMES)


def tvmffi(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *args], capture_output=True, text=True, **kw
    )


def test_c_api_list_has_50_names():
    assert len(C_API) == 50 and len(set(C_API)) == 50


def test_help_lists_every_subcommand():
    r = tvmffi("--help")
    assert r.returncode == 0
    for name in ("inspect", "call", "bench", "conform", "config"):
        assert re.search(rf"^\s+{name}\s", r.stdout, re.M), name


def test_version():
    import tvmffi_cli

    r = tvmffi("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"tvmffi, version {tvmffi_cli.__version__}"


def test_unknown_command_is_a_usage_error():
    r = tvmffi("frobnicate")
    assert r.returncode == 2
    assert "No such command" in r.stderr
    assert "Traceback" not in r.stderr


def test_config_runtime_is_our_built_library():
    r = tvmffi("config", "--runtime")
    assert r.returncode == 0, r.stderr
    lib = Path(r.stdout.strip())
    assert lib.is_absolute() and lib.is_file() and lib.name == "libtvm_ffi.so"
    dyn = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert "Library soname: [libtvm_ffi.so]" in dyn
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True
    ).stdout
    exported = {line.split()[-1] for line in nm.splitlines() if " T " in line}
    missing = [n for n in C_API if n not in exported]
    assert missing == []


def test_config_flags_follow_tvm_ffi_config_conventions():
    inc = Path(tvmffi("config", "--includedir").stdout.strip())
    assert (inc / "tvm" / "ffi" / "c_api.h").is_file()
    assert (inc / "dlpack" / "dlpack.h").is_file()
    libdir = Path(tvmffi("config", "--libdir").stdout.strip())
    assert tvmffi("config", "--cflags").stdout.strip() == f"-I{inc}"
    assert tvmffi("config", "--ldflags").stdout.strip() == f"-L{libdir}"
    assert tvmffi("config", "--libs").stdout.strip() == "-ltvm_ffi"
    assert tvmffi("config", "--libfiles").stdout.strip() == str(libdir / "libtvm_ffi.so")


def test_config_json_matches_schema():
    r = tvmffi("config", "--json")
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / "config.schema.json").read_text()))
    assert doc["libs"] == "-ltvm_ffi"


def test_config_flags_build_a_library(tmp_path):
    """What config prints is enough to compile and link a C library against us."""
    flags = []
    for what in ("--cflags", "--ldflags", "--libs"):
        flags += tvmffi("config", what).stdout.split()
    src = Path(__file__).resolve().parents[1] / "examples" / "add_one.c"
    out = tmp_path / "libadd_one.so"
    r = subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-shared",
            "-fPIC",
            str(src),
            "-o",
            str(out),
            *flags,
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    dyn = subprocess.run(["readelf", "-d", str(out)], capture_output=True, text=True).stdout
    assert "Shared library: [libtvm_ffi.so]" in dyn
    assert "RPATH" not in dyn and "RUNPATH" not in dyn


@pytest.mark.parametrize("env_value", ["/nonexistent/libtvm_ffi.so"])
def test_bad_runtime_override_is_one_line(env_value):
    import os

    r = tvmffi("config", "--runtime", env={**os.environ, "TVMFFI_RUNTIME": env_value})
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert env_value in r.stderr
