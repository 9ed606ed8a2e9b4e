"""Static reading of huge module trees is bounded (issue 23 item 7): past the
detail limit modules are counted per kind, in the decoder, in `inspect
--static --json` (schema fields module_count/modules_listed/truncated/kinds)
and in the human tree. The 490,000-module timing is bench/bench_inspect_modules.py."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import tools_fixtures
from tvmffi_cli.binary import libbin

N = 200_000
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "src/tvmffi_cli/schemas/inspect.schema.json").read_text()
)


@pytest.fixture(scope="module")
def many_lib():
    return tools_fixtures.incbin_library("many-modules", tools_fixtures.many_modules_image(N))


def _inspect(lib, *flags, limit="50"):
    env = dict(os.environ, TVMFFI_MODULE_DETAIL_LIMIT=limit, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", "--static", *flags, str(lib)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_decoder_lists_the_first_modules_and_counts_all():
    img = tools_fixtures.many_modules_image(1000)
    lb = libbin.decode(img, detail_limit=10)
    assert [m.index for m in lb.modules] == list(range(10))
    assert lb.modules[0].kind == "_lib" and lb.modules[0].imports == list(range(1, 11))
    assert lb.modules[0].import_count == 999
    assert lb.module_count == 1000 and lb.truncated
    assert lb.kinds == {"_lib": 1, "tiny": 999}
    assert lb.errors == []
    full = libbin.decode(img)
    assert len(full.modules) == 1000 and not full.truncated
    assert full.summary()["kinds"] == {"tiny": 999, "_lib": 1}


def test_errors_and_kinds_are_bounded():
    # Every module but _lib has an empty kind (one problem each), and a
    # second image has 1000 distinct kinds.
    q = lambda v: v.to_bytes(8, "little")
    n = 500
    tree = q(n + 1) + b"".join(q(0) for _ in range(n + 1)) + q(0)
    body = tree + q(4) + b"_lib" + (q(0) + q(1) + b"x") * (n - 1)
    lb = libbin.decode(q(len(body)) + body, detail_limit=5)
    assert len(lb.errors) == libbin.ERROR_LIMIT + 1
    assert lb.errors[-1]["message"] == f"{n - 1 - libbin.ERROR_LIMIT} more problems not listed"
    mods = [("_lib", None)] + [(f"k{i}", b"") for i in range(1000)]
    lb = libbin.decode(libbin.encode(mods), detail_limit=5)
    assert len(lb.kinds) == libbin.KIND_LIMIT + 1
    assert lb.kinds[libbin.OTHER_KINDS] == 1001 - libbin.KIND_LIMIT
    assert sum(lb.kinds.values()) == 1001


def test_cycle_found_past_the_detail_limit():
    mods = [("_lib", None)] + [("k", b"") for _ in range(20)]
    tree = [[1]] + [[i + 1] for i in range(1, 20)] + [[15]]
    lb = libbin.decode(libbin.encode(mods, tree), detail_limit=3)
    assert [e["message"] for e in lb.errors] == [
        "import tree has a cycle through modules 20 and 15"
    ]


def test_inspect_static_json_summarizes(many_lib):
    p = _inspect(many_lib, "--json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    jsonschema.validate(rep, SCHEMA)
    lb = rep["library_bin"]
    assert (lb["module_count"], lb["modules_listed"], lb["truncated"]) == (N, 50, True)
    assert lb["kinds"] == {"tiny": N - 1, "_lib": 1}
    assert [m["index"] for m in rep["modules"]] == list(range(50))
    assert rep["modules"][0]["imports"] == list(range(1, 51))
    assert rep["modules"][0]["import_count"] == N - 1
    assert len(p.stdout) < 100_000  # 200,000 modules listed would be ~40 MB


def test_inspect_static_human_says_what_it_left_out(many_lib):
    p = _inspect(many_lib)
    assert p.returncode == 0, p.stderr
    assert (
        "... 199,950 more modules not listed (200,000 in all; by kind: tiny 199,999, _lib 1)"
        in p.stdout
    )
    assert "imports [1, 2, 3" in p.stdout and "50, ... 199,999 in all]" in p.stdout
    assert "#49 tiny" in p.stdout and "#50 tiny" not in p.stdout
