"""The smaller items of issue 20 item 7, one test each: bad --out and a
directory as LIB are one line and exit 2; every command spells its options'
values the same way; every command that loads a library takes --no-sandbox
and --memory-limit."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import fixturebuild
from test_call_helpers import tvmffi
from tvmffi_cli.cli.app import cli

ROOT = Path(__file__).resolve().parents[1]
LOADING = ["inspect", "call", "bench", "conform", "stubs", "diff"]


@pytest.fixture(scope="module")
def lib():
    return str(fixturebuild.build(ROOT / "examples" / "add_one.c", name="contract_add_one"))


def help_of(cmd):
    r = CliRunner().invoke(cli, [cmd, "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    return r.output


def test_out_that_cannot_be_created_is_bad_input(lib):
    r = tvmffi("call", lib, "mul3", "1", "2", "3", "--out", "/proc/forbidden")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (
        "tvmffi: error: --out /proc/forbidden: cannot create (No such file or directory)\n"
    )


def test_a_directory_is_named_as_one(tmp_path):
    for cmd in ("call", "bench"):
        r = tvmffi(cmd, tmp_path, "f")
        assert r.returncode == 2
        assert r.stderr == f"tvmffi: error: {tmp_path}: is a directory, not a library\n"


def test_option_values_are_spelt_the_same_everywhere():
    seen = {}
    for cmd in [*LOADING, "extract", "config"]:
        text = help_of(cmd)
        assert not re.search(r"--[\w-]+ (TEXT|INTEGER|FLOAT|S)\b", text), (cmd, text)
        m = re.search(r"--timeout (\w+)", text)
        if m:
            seen[cmd] = m.group(1)
    assert set(seen) == set(LOADING) and set(seen.values()) == {"SECONDS"}, seen


def test_every_loading_command_takes_the_confinement_options(lib):
    for cmd in LOADING:
        text = help_of(cmd)
        assert "--no-sandbox" in text and "--memory-limit SIZE" in text, cmd
    r = tvmffi("diff", "--json", "--no-sandbox", "--memory-limit", "1G", lib, lib)
    assert r.returncode == 0, r.stderr
    sb = json.loads(r.stdout)["sandbox"]
    assert (sb["enabled"], sb["memory_limit"]) == (False, 1 << 30)
    r = tvmffi("stubs", "--no-sandbox", lib)
    assert r.returncode == 0 and "def mul3(" in r.stdout
    assert "sandbox: OFF" in r.stderr or r.stderr == ""


def test_stub_tensor_parameters_take_numpy_arrays(lib, tmp_path):
    # add_one(DLTensor*): a NumPy array type-checks against the stub, a str does not.
    r = tvmffi("stubs", lib, "-o", tmp_path / "addone.pyi")
    assert r.returncode == 0, r.stderr
    assert "def add_one(arg0: TensorLike, /) -> None" in (tmp_path / "addone.pyi").read_text()
    # A stand-in with NumPy's own __dlpack__ signatures (numpy/__init__.pyi):
    # type-checking against NumPy itself costs a minute of mypy.
    (tmp_path / "use.py").write_text(
        "from typing import Any\nfrom addone import add_one\n"
        "class Arr:\n"
        "    def __dlpack__(self, *, stream: None = None, max_version: tuple[int, int] | None"
        " = None, dl_device: tuple[int, int] | None = None, copy: bool | None = None)"
        " -> Any:\n        return None\n"
        "    def __dlpack_device__(self) -> tuple[int, int]:\n        return (1, 0)\n"
        "add_one(Arr())\nadd_one('no')\n"
    )
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "use.py", "addone.pyi"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    if "No module named mypy" in p.stderr:
        pytest.skip("mypy is not installed (pip install '.[test]' on Python >= 3.10)")
    assert p.stdout.splitlines()[0] == (
        'use.py:9: error: Argument 1 to "add_one" has incompatible type "str"; '
        'expected "Tensor | SupportsDLPack"  [arg-type]'
    ), p.stdout
    assert "Found 1 error in 1 file" in p.stdout
