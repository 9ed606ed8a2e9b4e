"""One JSON contract (issue 20 item 7): every command's --json has the keys
`library`, `runtime`, `sandbox`, `elapsed_s`, `errors`, validates against its
schema, and is laid out the same way: one line when stdout is not a terminal
(TVMFFI_JSON_INDENT=N indents). A raised error's backtrace is null when the
runtime recorded none, never ""."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import fixturebuild

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "src" / "tvmffi_cli" / "schemas"
KEYS = ("library", "runtime", "sandbox", "elapsed_s", "errors")


@pytest.fixture(scope="module")
def lib():
    return str(fixturebuild.build(ROOT / "examples" / "add_one.c", name="contract_add_one"))


def run(*args, env=None):
    e = dict(os.environ)
    e.pop("TVMFFI_JSON_INDENT", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=e,
        timeout=300,
    )


def doc_of(schema, p, codes=(0,)):
    assert p.returncode in codes, (p.returncode, p.stderr)
    assert p.stdout.count("\n") == 1, "one line when piped"
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, json.loads((SCHEMAS / f"{schema}.schema.json").read_text()))
    for k in KEYS:
        assert k in doc, (schema, k)
    assert isinstance(doc["errors"], list)
    assert isinstance(doc["elapsed_s"], (int, float)) and 0 <= doc["elapsed_s"] < 300
    assert {"enabled", "ran", "applied", "missing"} <= set(doc["sandbox"])
    return doc


def test_every_command_has_the_contract_keys(lib, tmp_path):
    d = doc_of("inspect", run("inspect", "--static", "--json", lib))
    assert (d["library"], d["runtime"], d["errors"], d["sandbox"]["ran"]) == (lib, None, [], False)
    d = doc_of("call", run("call", "--json", lib, "mul3", "2", "3", "7"))
    assert (d["library"], d["result"], d["errors"]) == (os.path.abspath(lib), 42, [])
    assert d["runtime"]["kind"] == "builtin"
    d = doc_of("call", run("call", "--json", lib, "mul3", "--float", "2.5"), codes=(1,))
    assert d["errors"] == [d["error"]] and d["error"]["kind"] == "TypeError"
    assert d["error"]["backtrace"] is None  # none recorded: null, never ""
    d = doc_of("bench", run("bench", "--json", lib, "mul3", "2", "3", "7", "--rounds", "2"))
    assert d["library"] == os.path.abspath(lib) and d["errors"] == []
    d = doc_of("conform", run("conform", "--json", "--select", "export-names,no-crash", lib))
    assert d["library"] == lib and d["runtime"]["kind"] == "builtin" and d["errors"] == []
    d = doc_of("diff", run("diff", "--json", "--static", lib, lib))
    assert (d["library"], d["old"], d["new"], d["runtime"]) == (lib, lib, lib, None)
    d = doc_of("diff", run("diff", "--json", lib, lib))
    assert d["runtime"]["kind"] == "builtin" and d["sandbox"]["ran"]
    d = doc_of("extract", run("extract", "--json", lib, "-o", tmp_path / "x"))
    # The manifest names the file by its base name (it travels with the files).
    assert d["library"] == os.path.basename(lib) and d["runtime"] is None


def test_indent_on_request_and_terminal_safe(lib):
    p = run("inspect", "--static", "--json", lib, env={"TVMFFI_JSON_INDENT": "2"})
    assert p.returncode == 0 and p.stdout.startswith('{\n  "path": ')
    assert json.loads(p.stdout)["library"] == lib
    p = run("config", "--json")
    assert p.returncode == 0 and p.stdout.count("\n") == 1
