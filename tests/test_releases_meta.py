"""Every official release's own test library, on the builtin runtime, against
that release's own `tvm_ffi` (tests/release_meta.py has the oracle).

Per release: loaded `inspect` lists exactly the globals and types the
release's runtime registers when it loads the library; every signature the
metadata declares (by the release's own parser) is parsed with the same
parameter count and typed in `stubs`; calls through `tvmffi call --json`
give the release's own results, with arguments read by the type schema;
`conform` passes; `diff` to the next release reports no break the releases
themselves do not show. One inspect document and one oracle subprocess per
release (module-level caches in release_meta).
"""

from __future__ import annotations

import json

import pytest

import release_meta as meta
import releases
from tvmffi_cli.abi import typeschema

NEXT = list(zip(releases.RELEASES, releases.RELEASES[1:]))


@pytest.mark.parametrize("version", releases.RELEASES)
def test_inspect_lists_what_the_release_registers(version):
    code, doc = meta.inspect_doc(version)
    assert code == 0 and doc is not None, doc and doc["errors"]
    o = meta.oracle(version)
    assert sorted(doc["globals"]) == sorted(o["globals"])
    assert sorted(t["type_key"] for t in doc["types"]) == sorted(o["types"])
    assert doc["errors"] == []
    # metadata is an object wherever it appears, with its type in the one model
    for info in doc["global_info"].values():
        assert isinstance(info["metadata"], dict)
    for t in doc["types"]:
        for m in t["methods"]:
            assert isinstance(m["metadata"], dict), (t["type_key"], m["name"])
            assert "type" in m and m["type"]["type"] == "ffi.Function"


@pytest.mark.parametrize("version", releases.RELEASES)
def test_every_declared_signature_is_typed(version):
    declared = meta.declared(version)
    assert declared, "the release's test library declares signatures"
    assert meta.ours(version) == declared  # same functions, same parameter counts
    assert meta.stub_typed(version) == len(declared)


@pytest.mark.parametrize("version", releases.RELEASES)
def test_docs_equal_the_release_own(version):
    # export docs (__tvm_ffi__doc_<name>, from 0.1.5) and reflected field/method docs
    assert meta.docs(version) == meta.oracle(version)["docs"]


@pytest.mark.parametrize("version", releases.RELEASES)
def test_calls_equal_the_release_own_results(version):
    o = meta.oracle(version)
    ran = 0
    for name, argv, _py in meta.CALLS:
        if name not in o["calls"]:
            continue
        got = meta.call_ours(version, name, argv)
        assert got["result"] == o["calls"][name], name
        ran += 1
        if name == "testing.schema_id_float":
            # "2" was read by the type schema (float), not guessed (int)
            assert got["args"][0]["type"] == "float"
    assert ran >= 3


@pytest.mark.parametrize("version", releases.RELEASES)
def test_conform_passes(version):
    r = meta.tvmffi("conform", str(releases.release_testing_lib(version)), "--json")
    doc = json.loads(r.stdout)
    errors = [
        (x["function"], x["check"], x["message"])
        for x in doc["results"]
        if x["status"] == "fail" and x["severity"] == "error"
    ]
    assert r.returncode == 0 and doc["passed"], errors or r.stderr[-2000:]
    assert errors == []


@pytest.mark.parametrize(("old", "new"), NEXT, ids=[f"{a}->{b}" for a, b in NEXT])
def test_diff_to_the_next_release_has_no_false_break(old, new):
    assert meta.false_breaks(old, new) == []


def test_oracle_sees_the_formats():
    # The three function formats the releases write, as they wrote them.
    old = meta.inspect_doc("0.1.14.post1")[1]
    new = meta.inspect_doc("0.1.15.post2")[1]
    assert old is not None and new is not None
    ts_old = old["global_info"]["testing.add_one"]["metadata"]["type_schema"]
    ts_new = new["global_info"]["testing.add_one"]["metadata"]["type_schema"]
    assert json.loads(ts_old) == {"type": "ffi.Function", "args": [{"type": "int"}] * 2}
    assert "named_args" in json.loads(ts_new)
    assert typeschema.parse_type(ts_old) == typeschema.parse_type(ts_new)
    assert meta.oracle("0.1.0")["globals"]["testing.apply"] == "Callable[..., Any]"
