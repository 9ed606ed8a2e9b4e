"""`--runtime auto|builtin|official|PATH` (tvmffi_cli.ffi.hosts) and the
reports of a library that fails while loading (issue 11, items 3 and 4)."""

import json
from pathlib import Path

import pytest

import fixturebuild
from test_call_helpers import kernels, tvmffi, validate
from tvmffi_cli.errors import InputError
from tvmffi_cli.ffi import hosts


def _official():
    off = fixturebuild.official_runtime()
    if off is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    return Path(off).resolve()


def needs_unknown():
    return fixturebuild.build("ecosystem/needs_unknown.c", headers="ours")


def test_official_runtime_is_found_without_importing_it():
    import sys

    off = _official()
    assert hosts.official_runtime_path() == off
    assert "tvm_ffi" not in sys.modules  # find_spec only locates the package


def test_named_choices():
    b = hosts.choose_runtime("builtin", kernels())
    assert (b.kind, b.instrumented, b.requested) == ("builtin", True, "builtin")
    assert b.path == str(fixturebuild.our_runtime().resolve())
    off = _official()
    o = hosts.choose_runtime("official", kernels())
    assert (o.kind, o.path, o.instrumented) == ("official", str(off), False)
    assert o.skip_reason("leak check") == (
        "leak check needs tvmffi's instrumented runtime; "
        "the library is hosted by the official runtime"
    )
    assert b.skip_reason("leak check") is None
    p = hosts.choose_runtime(str(off), None)
    assert (p.kind, p.instrumented) == ("official", False)  # the official file by path


def test_auto_picks_builtin_when_it_has_every_import():
    c = hosts.choose_runtime("auto", kernels())
    assert c.kind == "builtin" and c.missing == ()
    assert hosts.choose_runtime(None, kernels()).kind == "builtin"
    assert "TVMFFIFunctionCall" not in hosts.missing_symbols(kernels(), c.path)


def test_auto_falls_back_to_official_naming_the_missing_symbols():
    off = _official()
    c = hosts.choose_runtime("auto", needs_unknown())
    assert c.kind == "official" and c.path == str(off)
    assert c.missing == ("TVMFFIEcoFixtureNotARealFunction",)
    assert "lacks 1 symbol the library imports (TVMFFIEcoFixtureNotARealFunction)" in c.reason


def test_auto_without_official_exits_2_with_the_fix(monkeypatch):
    monkeypatch.setattr(hosts, "official_runtime_path", lambda: None)
    with pytest.raises(InputError) as e:
        hosts.choose_runtime("auto", needs_unknown())
    msg = str(e.value)
    assert "TVMFFIEcoFixtureNotARealFunction" in msg and "pip install apache-tvm-ffi" in msg


def test_auto_without_official_on_the_command_line(tmp_path):
    # A tvm_ffi package without a runtime shadows the installed one.
    (tmp_path / "tvm_ffi").mkdir()
    (tmp_path / "tvm_ffi" / "__init__.py").write_text("")
    r = tvmffi("call", needs_unknown(), "use", env={"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "TVMFFIEcoFixtureNotARealFunction" in r.stderr
    assert "pip install apache-tvm-ffi" in r.stderr


def test_bad_runtime_value():
    r = tvmffi("call", kernels(), "add_int", "1", "2", "--runtime", "offical")
    assert r.returncode == 2
    assert r.stderr == (
        "tvmffi: error: --runtime offical: no such file (expected auto, "
        "builtin, official, a release such as 0.1.12, or the path of a libtvm_ffi.so)\n"
    )
    r = tvmffi("inspect", kernels(), "--runtime", "offical")
    assert r.returncode == 2 and "expected auto, builtin, official" in r.stderr


@pytest.mark.parametrize("which", ["builtin", "official"])
def test_outputs_name_the_runtime(which):
    if which == "official":
        _official()
    r = tvmffi("call", kernels(), "add_int", "1", "2", "--runtime", which, "--json")
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "call")
    assert doc["runtime"]["kind"] == which and doc["runtime"]["requested"] == which
    assert doc["runtime"]["instrumented"] is (which == "builtin")
    r = tvmffi("inspect", kernels(), "--runtime", which, "--json")
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "inspect")
    assert doc["runtime"]["kind"] == which
    r = tvmffi("inspect", kernels(), "--runtime", which)
    assert f"runtime: {which}" in r.stdout
    r = tvmffi("call", kernels(), "add_int", "1", "2", "--runtime", which)
    assert r.stdout == "3\n"
    assert (r.stderr == "") if which == "builtin" else r.stderr.startswith("runtime: official")


def test_static_inspect_has_no_runtime():
    r = tvmffi("inspect", kernels(), "--static", "--json")
    assert r.returncode == 0
    assert validate(json.loads(r.stdout), "inspect")["runtime"] is None


# ---------------------------------------------------------------------------
# a library that fails while loading


def _load_fixture(kind, headers):
    if kind == "throws":
        return fixturebuild.build("ecosystem/load_throws.cc", headers=headers)
    return fixturebuild.build("ecosystem/load_aborts.c", headers=headers)


@pytest.mark.parametrize("which", ["builtin", "official"])
@pytest.mark.parametrize(
    "kind,said",
    [
        ("throws", "eco-fixture: config file /etc/eco.conf missing"),
        ("aborts", "eco-fixture: no license for this host"),
    ],
)
def test_load_failure_is_reported_as_the_load(which, kind, said):
    if which == "official":
        _official()
    lib = _load_fixture(kind, "ours" if which == "builtin" else "official")
    r = tvmffi("call", lib, "noop", "--runtime", which)
    assert r.returncode == 1, r.stderr
    # The library's own words reach stderr without -v: in our error line, or
    # relayed from the sandboxed worker as "[lib] ..." lines.
    errs = [ln for ln in r.stderr.splitlines() if ln.startswith("tvmffi: error:")]
    assert len(errs) == 1 and errs[0].startswith(f"tvmffi: error: {lib.name}")
    assert "while loading" in errs[0] and said in r.stderr
    assert "noop" not in errs[0]  # the load failed, not the function
    assert "Traceback" not in r.stderr
    r = tvmffi("call", lib, "noop", "--runtime", which, "--json")
    assert r.returncode == 1
    doc = validate(json.loads(r.stdout), "call")
    assert "while loading" in doc["error"]["message"]
    assert doc["runtime"]["kind"] == which
    r = tvmffi("bench", lib, "noop", "--runtime", which)
    assert r.returncode == 1 and "while loading" in r.stderr and said in r.stderr


def test_inspect_load_failure_shows_the_library_message():
    lib = _load_fixture("aborts", "ours")
    r = tvmffi("inspect", lib, "--json")
    assert r.returncode == 1
    doc = validate(json.loads(r.stdout), "inspect")
    msgs = [e["message"] for e in doc["errors"] if e["where"] == "load"]
    assert len(msgs) == 1 and "while loading" in msgs[0]
    assert "eco-fixture: no license for this host" in msgs[0]
