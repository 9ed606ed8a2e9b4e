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


# ---------------------------------------------------------------------------
# releases by name, runtimes at hand, auto's next runtime (issue 29, item 4)


def test_a_plain_version_names_its_newest_post_release():
    from tvmffi_cli.abi.versions import release_named

    assert release_named("0.1.15") == "0.1.15.post2"
    assert release_named("0.1.13") == "0.1.13.post3"
    assert release_named("0.1.8") == "0.1.8.post2"
    assert release_named("0.1.12") == "0.1.12"
    assert release_named("0.1.15.post2") == "0.1.15.post2"
    for text in ("0.1.15.post1", "0.1.1", "0.2", "latest"):
        assert release_named(text) is None, text


@pytest.fixture
def runtimes_at_hand(tmp_path, monkeypatch):
    """An empty runtime cache beside the suite's wheel cache: the releases whose
    wheels the suite fetched are at hand, nothing is downloaded."""
    import releases

    monkeypatch.setenv("TVMFFI_RUNTIME_CACHE", str(tmp_path / "runtimes"))
    monkeypatch.setenv("TVMFFI_WHEEL_CACHE", str(releases.cache_dir()))
    return {
        "TVMFFI_RUNTIME_CACHE": str(tmp_path / "runtimes"),
        "TVMFFI_WHEEL_CACHE": str(releases.cache_dir()),
    }


def _wheels(*versions):
    import releases

    for v in versions:
        releases.fetch_wheel("apache-tvm-ffi", v)  # skips when not cached nor fetchable


def test_runtime_by_plain_version_is_the_post_release(runtimes_at_hand):
    from tvmffi_cli.ffi import fetch

    _wheels("0.1.15.post2")
    c = hosts.choose_runtime("0.1.15", kernels())
    assert (c.kind, c.release, c.version) == ("release", "0.1.15.post2", "0.1.16")
    assert c.path == str(fetch.cache_dir() / "0.1.15.post2" / "libtvm_ffi.so")
    r = tvmffi(
        "call",
        kernels(),
        "add_int",
        "1",
        "2",
        "--runtime",
        "0.1.15",
        "--json",
        env=runtimes_at_hand,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runtime"]["release"] == "0.1.15.post2"
    r = tvmffi("call", kernels(), "add_int", "1", "2", "--runtime", "0.1.15.post1")
    assert r.returncode == 2 and "not a known official release" in r.stderr


def test_runtimes_at_hand_need_no_network(tmp_path, monkeypatch):
    from tvmffi_cli.ffi import fetch

    monkeypatch.setenv("TVMFFI_RUNTIME_CACHE", str(tmp_path / "r"))
    monkeypatch.setenv("TVMFFI_WHEEL_CACHE", str(tmp_path / "w"))
    assert fetch.cached_releases() == [] and fetch.cached_runtime("0.1.12") is None
    # a file that does not verify is not at hand
    bad = tmp_path / "r" / "0.1.12" / "libtvm_ffi.so"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not the release")
    assert fetch.cached_runtime("0.1.12") is None


def picky():
    return fixturebuild.build("ranges/picky_host.c", headers="ours")


def test_auto_loads_on_the_next_release_when_a_runtime_aborts(runtimes_at_hand):
    # picky_host's symbols allow 0.1.14.post1..0.1.15.post2 and the builtin
    # runtime; it aborts on the builtin runtime and on 0.1.15.post2.
    _wheels("0.1.14.post1", "0.1.15.post2")
    r = tvmffi("inspect", picky(), "--json", env=runtimes_at_hand)
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "inspect")
    rt = doc["runtime"]
    assert (rt["kind"], rt["release"], rt["requested"]) == ("release", "0.1.14.post1", "auto")
    assert [t["runtime"] for t in rt["tried"]] == ["builtin", "apache-tvm-ffi 0.1.15.post2"]
    assert "picky-host: refusing tvmffi's builtin runtime" in rt["tried"][0]["error"]
    assert "picky-host: refusing runtime version 0.1.16" in rt["tried"][1]["error"]
    assert rt["reason"].startswith("auto: the builtin runtime could not load the library")
    assert "nor apache-tvm-ffi 0.1.15.post2; using apache-tvm-ffi 0.1.14.post1" in rt["reason"]
    assert doc["errors"] == [] and doc["mode"] == "loaded"
    # a runtime the user named is not second-guessed; the error names the fix
    r = tvmffi("inspect", picky(), "--runtime", "builtin", env=runtimes_at_hand)
    assert r.returncode == 1
    assert "it did not load on the builtin runtime: try --runtime 0.1.15.post2" in r.stderr
    assert "of its range 0.1.14.post1..0.1.15.post2" in r.stderr


def test_call_and_conform_name_the_runtime_to_pass(runtimes_at_hand):
    r = tvmffi("call", picky(), "big", env=runtimes_at_hand)
    assert r.returncode == 1 and r.stderr.count("tvmffi: error:") == 1
    assert "picky-host: refusing tvmffi's builtin runtime" in r.stderr
    assert "it did not load on the builtin runtime: try --runtime 0.1.15.post2" in r.stderr
    _wheels("0.1.15.post2")
    r = tvmffi("call", picky(), "big", "--runtime", "0.1.15", env=runtimes_at_hand)
    assert r.returncode == 1
    assert (
        "it did not load on the apache-tvm-ffi 0.1.15.post2 runtime: try --runtime 0.1.14.post1"
        in r.stderr
    )
    r = tvmffi("conform", picky(), "--select", "library-load", "--json", env=runtimes_at_hand)
    assert r.returncode == 1
    (res,) = json.loads(r.stdout)["results"]
    assert res["check"] == "library-load" and "try --runtime 0.1.15.post2" in res["message"]


def test_auto_with_a_missing_symbol_takes_a_release_at_hand(runtimes_at_hand, monkeypatch):
    # As if the builtin runtime lacked the by-value json::Stringify (0.1.5..0.1.12
    # export it) and no official package were installed.
    from tvmffi_cli.abi import versions

    monkeypatch.setattr(hosts, "official_runtime_path", lambda: None)
    stringify = "_ZN3tvm3ffi4json9StringifyERKNS0_3AnyENS0_8OptionalIivEE"
    monkeypatch.setattr(hosts, "builtin_missing", lambda imports: (stringify,))
    lib = fixturebuild.build("ranges/old_stringify.c", headers="none")
    newest = versions.runtime_range(hosts.runtime_imports(lib)).ok_releases[-1]
    _wheels(newest)
    c = hosts.choose_runtime("auto", lib)
    assert (c.kind, c.release) == ("release", newest)
    assert "using apache-tvm-ffi 0.1.12, the newest release of the library's range" in c.reason
    # nothing at hand: the error names the --runtime to pass
    monkeypatch.setenv(
        "TVMFFI_WHEEL_CACHE", str(Path(runtimes_at_hand["TVMFFI_RUNTIME_CACHE"]) / "none")
    )
    monkeypatch.setenv(
        "TVMFFI_RUNTIME_CACHE", str(Path(runtimes_at_hand["TVMFFI_RUNTIME_CACHE"]) / "none2")
    )
    with pytest.raises(InputError) as e:
        hosts.choose_runtime("auto", lib)
    assert "pass --runtime 0.1.12 (the newest release of the library's range 0.1.5..0.1.12" in str(
        e.value
    )
