"""Runtime ranges: which official apache-tvm-ffi releases can host a library.

The expected values are computed here, independently of
src/tvmffi_cli/abi/release_exports.py: `nm -D` of every released
libtvm_ffi.so against `nm -D` of each library (and of the sibling libraries
`readelf -d` says it loads), for every library of the public wheels of the
test set and every release's own test library. Fixture libraries cover the
offline cases: conform --min-runtime/--max-runtime, symbols a sibling defines,
and a library whose dependency is missing (exit 1 everywhere)."""

import functools
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

import releases
from test_conform import bad_results, conform, conform_json
from test_inspect import SCHEMA, inspect_json, tvmffi
from tvmffi_cli.abi import versions

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "ranges"
STRINGIFY_BY_VALUE = "_ZN3tvm3ffi4json9StringifyERKNS0_3AnyENS0_8OptionalIivEE"

#: Public wheels of the test set, every .so of each is checked.
WHEELS = [
    ("jax-tvm-ffi", "0.1.3"),
    ("xgrammar", "0.2.8"),
    ("apache-tvm-ffi-orcjit", "0.1.3"),
    ("tilelang", "0.1.15"),
    ("apache-tvm-tirx", "0.1.0a4"),  # the newest release (pre-releases only so far)
]

needs_binutils = pytest.mark.skipif(
    not (shutil.which("nm") and shutil.which("readelf")), reason="needs binutils (nm, readelf)"
)


# --- the independent oracle: nm -D and readelf -d ----------------------------------
@functools.cache
def _nm(path, which):
    r = subprocess.run(
        ["nm", "-D", which, str(path)], capture_output=True, text=True, check=True, timeout=120
    )
    return {line.split()[-1].split("@")[0] for line in r.stdout.splitlines() if line.strip()}


def _runtime_symbol(name):
    return name.startswith("TVMFFI") or (name.startswith("_Z") and "3tvm3ffi" in name)


def _dynamic(path):
    out = subprocess.run(
        ["readelf", "-d", str(path)], capture_output=True, text=True, check=True
    ).stdout
    needed, runpath = [], []
    for line in out.splitlines():
        if "(NEEDED)" in line:
            needed.append(line.split("[", 1)[1].rstrip("]"))
        elif "(RUNPATH)" in line or "(RPATH)" in line:
            runpath += line.split("[", 1)[1].rstrip("]").split(":")
    return needed, runpath


def _siblings(path):
    """DT_NEEDED closure found in the library's RUNPATH ($ORIGIN) or its own
    directory, the runtime itself left out."""
    seen, todo, found = {Path(path).resolve()}, [Path(path)], []
    while todo:
        p = todo.pop(0)
        needed, runpath = _dynamic(p)
        dirs = [d.replace("$ORIGIN", str(p.parent)) for d in runpath] + [str(p.parent)]
        for n in needed:
            if n.startswith("libtvm_ffi."):
                continue
            hit = next((Path(d) / n for d in dirs if (Path(d) / n).is_file()), None)
            if hit is not None and hit.resolve() not in seen:
                seen.add(hit.resolve())
                found.append(hit)
                todo.append(hit)
    return found


@pytest.fixture(scope="module")
def release_exports():
    """{release: runtime symbols its libtvm_ffi.so exports}, from nm -D."""
    return {
        v: {n for n in _nm(releases.release_runtime(v), "--defined-only") if _runtime_symbol(n)}
        for v in releases.RELEASES
    }


def expected_range(lib, table):
    libs = [Path(lib), *_siblings(lib)]
    defined = set().union(*(_nm(str(p), "--defined-only") for p in libs))
    imports = set().union(*(_nm(str(p), "--undefined-only") for p in libs))
    known = set().union(*table.values())
    need = {n for n in imports if _runtime_symbol(n)} - defined
    ok = [v for v in releases.RELEASES if (need & known) <= table[v]]
    return need, ok


def plain(v):
    return ".".join(v.split(".")[:3])


def check_library(lib, table):
    """inspect --static's range of `lib` equals the nm oracle's; returns a row."""
    from tvmffi_cli.cli import jsonout
    from tvmffi_cli.inspect import engine

    need, ok = expected_range(lib, table)
    rep = engine.run(lib, static=True)
    # the document --json prints: the engine's report with the contract keys
    jsonschema.validate(jsonout.contract(rep, library=str(lib), runtime=None), SCHEMA)
    assert rep["runtime_releases"] == ok, lib
    # every range of the field is one run of consecutive releases
    idx = [releases.RELEASES.index(v) for v in ok]
    assert idx == list(range(idx[0], idx[-1] + 1)), (lib, ok)
    assert rep["min_runtime_version"] == plain(ok[0])
    top = None if ok[-1] == releases.RELEASES[-1] else plain(ok[-1])
    assert rep["max_runtime_version"] == top
    # the deciding symbols: missing from the release just outside the range
    lo, hi = idx[0], idx[-1]
    if lo > 0:
        prev = releases.RELEASES[lo - 1]
        why = {r.split(" needs ")[0] for r in rep["min_runtime_reasons"]}
        assert why and why <= need - table[prev]
    else:
        assert rep["min_runtime_reasons"] == []
    if top is not None:
        nxt = releases.RELEASES[hi + 1]
        why = {r.split(" is gone after ")[0] for r in rep["max_runtime_reasons"]}
        assert why and why <= need - table[nxt]
    assert rep["unsupported_imports"] == sorted(need - versions.builtin_exports())
    return (Path(lib).name, rep["min_runtime_version"], top)


# --- the table itself ---------------------------------------------------------------
def test_known_releases_are_the_test_set():
    assert list(versions.KNOWN_RELEASES) == releases.RELEASES


@needs_binutils
def test_release_table_equals_nm_of_each_released_runtime(release_exports):
    for v, names in release_exports.items():
        assert versions.release_exports(v) == names, v
    # what the field's pins rest on
    assert versions.releases_exporting(STRINGIFY_BY_VALUE)[-1] == "0.1.12"
    assert versions.releases_exporting("TVMFFIHandleInitOnce")[0] == "0.1.5"


@needs_binutils
def test_builtin_table_equals_nm_of_our_runtime():
    from tvmffi_cli.ffi import paths

    ours = {n for n in _nm(paths.runtime_library(), "--defined-only") if _runtime_symbol(n)}
    assert versions.builtin_exports() == ours, (
        "runtime exports changed: run python tools/gen_release_exports.py"
    )


def test_release_exports_module_is_generated_by_the_tool():
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_release_exports.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if "Skipped" in r.stderr and r.returncode != 0:
        pytest.skip(r.stderr.strip().splitlines()[-1][:200])
    assert r.returncode == 0, r.stdout + r.stderr


# --- ranges of the field --------------------------------------------------------------
@needs_binutils
@pytest.mark.parametrize("dist, version", WHEELS, ids=[d for d, _ in WHEELS])
def test_ranges_of_public_wheel_libraries(dist, version, release_exports):
    wheel = releases.fetch_wheel(dist, version)
    members = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so")]
    rows = {}
    for m in members:
        lib = releases.extract(wheel, m)
        rows[lib.name] = check_library(lib, release_exports)[1:]
    if dist == "tilelang":
        # tilelang pins apache-tvm-ffi<0.1.13: its compiler imports the by-value
        # json::Stringify that 0.1.13 dropped, and libtilelang.so loads it.
        assert rows["libtvm_compiler.so"] == ("0.1.10", "0.1.12")
        assert rows["libtilelang.so"] == ("0.1.10", "0.1.12")
        assert rows["libtvm_runtime.so"] == ("0.1.0", "0.1.12")
    if dist == "apache-tvm-tirx":
        assert rows["libtvm_tirx_compiler.so"] == ("0.1.13", None)


@needs_binutils
@pytest.mark.parametrize("version", releases.RELEASES)
def test_ranges_of_official_test_libraries(version, release_exports):
    lib = releases.release_testing_lib(version)
    check_library(lib, release_exports)


# --- fixtures: ranges, conform --min-runtime / --max-runtime -------------------------
@pytest.fixture(scope="module")
def old_stringify(build_lib):
    return build_lib("ranges/old_stringify.c", headers="none")


def test_inspect_reports_both_bounds_and_why(old_stringify):
    rep, _ = inspect_json(old_stringify, "--static")
    assert (rep["min_runtime_version"], rep["max_runtime_version"]) == ("0.1.5", "0.1.12")
    assert rep["min_runtime_reasons"] == ["TVMFFIHandleInitOnce needs 0.1.5"]
    assert rep["max_runtime_reasons"] == [f"{STRINGIFY_BY_VALUE} is gone after 0.1.12"]
    assert rep["runtime_releases"] == releases.RELEASES[2:10]
    # the builtin runtime exports both Stringify overloads: it can host this
    assert rep["unsupported_imports"] == []
    r = tvmffi("inspect", "--static", old_stringify, env={"NO_COLOR": "1", "COLUMNS": "300"})
    assert "apache-tvm-ffi runtime >= 0.1.5, <= 0.1.12" in r.stdout
    assert "only the official runtime" not in r.stdout


@pytest.mark.parametrize(
    "flags, code, check, needle",
    [
        (("--max-runtime", "0.1.13"), 1, "max-runtime", "runs on apache-tvm-ffi <= 0.1.12"),
        (("--max-runtime", "0.1.12"), 0, None, None),
        (("--min-runtime", "0.1.3"), 1, "min-runtime", "needs apache-tvm-ffi >= 0.1.5"),
        (("--min-runtime", "0.1.5", "--max-runtime", "0.1.11"), 0, None, None),
        (("--max-runtime", "0.2.0"), 1, "max-runtime", "0.2.0 lacks " + STRINGIFY_BY_VALUE),
    ],
)
def test_conform_fails_a_library_outside_the_promised_range(
    old_stringify, flags, code, check, needle
):
    r, doc = conform_json(old_stringify, "--select", "min-runtime,max-runtime", *flags)
    assert r.returncode == code
    assert (doc["min_runtime_version"], doc["max_runtime_version"]) == ("0.1.5", "0.1.12")
    if check is None:
        assert not bad_results(doc)
        return
    assert bad_results(doc) == {(check, None)}
    res = next(x for x in doc["results"] if x["check"] == check)
    assert needle in res["message"]
    if flags[0] != "--max-runtime" or flags[1] != "0.1.13":
        return
    # the reproducer fails the same way (once: each run is a process)
    again = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *res["reproduce"].split()[1:], "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 1
    (res2,) = [x for x in json.loads(again.stdout)["results"] if x["check"] == check]
    assert needle in res2["message"]


def test_conform_max_runtime_flag_and_config_are_checked(old_stringify, tmp_path):
    r = conform(old_stringify, "--max-runtime", "later")
    assert r.returncode == 2 and "not a version" in r.stderr and r.stderr.count("\n") == 1
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[tool.tvmffi.conform]\nmax-runtime = "0.1.14"\n')
    r, doc = conform_json(old_stringify, "--select", "max-runtime", "--config", cfg)
    assert r.returncode == 1 and bad_results(doc) == {("max-runtime", None)}


# --- siblings and missing dependencies -------------------------------------------------
def _gcc(out, *args):
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(out), *map(str, args)], check=True)


@pytest.fixture(scope="module")
def sibling_pair(tmp_path_factory):
    """libuses.so needs libtvmffisib.so (next to it, RUNPATH $ORIGIN) and
    libbroken.so needs libfoo_missing.so, which is not there."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc on PATH")
    d = tmp_path_factory.mktemp("siblings")
    _gcc(d / "libtvmffisib.so", FIX / "sibling.c")
    _gcc(d / "libfoo_missing.so", FIX / "sibling.c")
    for name, dep in (("libuses.so", "tvmffisib"), ("libbroken.so", "foo_missing")):
        _gcc(d / name, FIX / "uses_sibling.c", f"-L{d}", f"-l{dep}", "-Wl,-rpath,$ORIGIN")
    (d / "libfoo_missing.so").unlink()
    return d / "libuses.so", d / "libbroken.so"


def test_symbols_a_sibling_defines_are_not_runtime_imports(sibling_pair):
    uses, _ = sibling_pair
    rep, _ = inspect_json(uses, "--static")
    assert rep["runtime_imports"] == ["TVMFFIErrorSetRaisedFromCStr"]
    assert rep["siblings"] == ["libtvmffisib.so"] and rep["unsupported_imports"] == []
    r, doc = conform_json(uses, "--select", "c-api-imports")
    assert r.returncode == 0 and not bad_results(doc)
    # loaded: hosted by the builtin runtime, and its function runs
    r = tvmffi("call", "--json", uses, "helper")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runtime"]["kind"] == "builtin"


def test_a_library_whose_dependency_is_missing_exits_1(sibling_pair):
    _, broken = sibling_pair
    rep, r = inspect_json(broken, code=1)
    assert r.stderr.count("\n") == 1 and "libfoo_missing.so" in r.stderr
    assert any(e["where"] == "load" for e in rep["errors"])
    rep, _ = inspect_json(broken, "--static")  # the file itself is fine
    assert "siblings" not in rep and "TVMFFISiblingHelper" in rep["runtime_imports"]
    r = tvmffi("call", broken, "helper")
    assert r.returncode == 1 and "libfoo_missing.so" in r.stderr and "Traceback" not in r.stderr
    r, doc = conform_json(broken, "--select", "library-load")
    assert r.returncode == 1 and bad_results(doc) == {("library-load", None)}
    # --help and the README say the same
    assert "missing dependency" in tvmffi("inspect", "--help").stdout
    readme = (ROOT / "README.md").read_text()
    row1 = next(line for line in readme.splitlines() if line.startswith("| 1 |"))
    assert "could not be loaded" in row1 and "libcuda.so.1" in row1


def test_render_without_any_release(tmp_path):
    # imports from two releases that no single release has: no range at all
    src = tmp_path / "both.c"
    src.write_text(
        "extern void %s(void);\nextern void TVMFFIBigIntFromByteArray(void);\n"
        '__attribute__((visibility("default"))) void f(void) { %s(); '
        "TVMFFIBigIntFromByteArray(); }\n" % (STRINGIFY_BY_VALUE, STRINGIFY_BY_VALUE)
    )
    if shutil.which("gcc") is None:
        pytest.skip("no gcc on PATH")
    _gcc(tmp_path / "libboth.so", src)
    rep, _ = inspect_json(tmp_path / "libboth.so", "--static")
    assert rep["runtime_releases"] == []
    assert (rep["min_runtime_version"], rep["max_runtime_version"]) == ("0.1.14", "0.1.12")
    r = tvmffi("inspect", "--static", tmp_path / "libboth.so", env={"NO_COLOR": "1"})
    assert "no known apache-tvm-ffi release provides every runtime import" in r.stdout
    assert os.path.exists(tmp_path / "libboth.so")
    doc = json.loads(conform(tmp_path / "libboth.so", "--json", "--select", "max-runtime").stdout)
    assert "no known apache-tvm-ffi release" in doc["results"][0]["message"]


# --- ranges checked by loading (issue 29, item 3) ----------------------------------------
@pytest.fixture
def at_hand(tmp_path, monkeypatch):
    """Runtimes from the suite's wheel cache only (no download), in a fresh cache."""
    env = {
        "TVMFFI_RUNTIME_CACHE": str(tmp_path / "runtimes"),
        "TVMFFI_WHEEL_CACHE": str(releases.cache_dir()),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for v in ("0.1.14.post1", "0.1.15.post2"):
        releases.fetch_wheel("apache-tvm-ffi", v)  # skips when neither cached nor fetchable
    return env


@pytest.fixture(scope="module")
def picky(build_lib):
    # symbols: 0.1.14.post1..0.1.15.post2; aborts on 0.1.15.post2 (and on builtin)
    return build_lib("ranges/picky_host.c", headers="ours")


def test_verify_range_names_the_release_where_loading_fails(picky, at_hand):
    rep, r = inspect_json(picky, "--verify-range")
    assert rep["runtime_releases"] == ["0.1.14.post1", "0.1.15.post2"]
    assert rep["runtime_range_basis"] == "loading"
    check = rep["runtime_range_check"]
    assert check["by_symbols"] == rep["runtime_releases"] and check["runs_on"] == ["0.1.14.post1"]
    assert [(x["release"], x["status"]) for x in check["loads"]] == [
        ("0.1.14.post1", "loads"),
        ("0.1.15.post2", "fails"),
    ]
    msg = check["loads"][1]["message"]
    assert msg == (
        "crashed the worker process (SIGABRT) while loading: "
        "picky-host: refusing runtime version 0.1.16"
    )
    r = tvmffi("inspect", "--verify-range", picky, env={"NO_COLOR": "1", "COLUMNS": "300"})
    assert "apache-tvm-ffi runtime >= 0.1.14, by symbols" in r.stdout
    assert "by loading: runs on 0.1.14.post1" in r.stdout
    assert "fails on 0.1.15.post2: " + msg in r.stdout
    # without it the range says what it rests on
    rep, _ = inspect_json(picky, "--static")
    assert rep["runtime_range_basis"] == "symbols" and "runtime_range_check" not in rep
    r = tvmffi("inspect", "--static", "--verify-range", picky)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "give one of them" in r.stderr


def test_declared_runtime_fails_where_a_library_aborts(picky, at_hand, tmp_path):
    whl = tmp_path / "picky-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.write(picky, "picky/lib/libpicky.so")
        z.writestr(
            "picky-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: picky\nVersion: 1.0\n"
            "Requires-Dist: apache-tvm-ffi>=0.1.14\n\n",
        )
        z.writestr("picky-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-linux_x86_64\n")
        z.writestr("picky-1.0.dist-info/RECORD", "")
    r = tvmffi("conform", whl, "--select", "declared-runtime", "--json")
    assert r.returncode == 1, r.stderr
    (c,) = json.loads(r.stdout)["checks"]
    assert c["status"] == "fail"
    assert c["message"].startswith(
        "declares apache-tvm-ffi>=0.1.14, which admits 0.1.15.post2, but "
        f"{whl.name}/picky/lib/libpicky.so does not load on 0.1.15.post2 (it has every symbol): "
        "crashed the worker process (SIGABRT) while loading: picky-host: refusing runtime "
        "version 0.1.16"
    )
    assert c["details"]["runs_on"][-1] == "0.1.14.post1"
    assert c["details"]["loaded_on"] == ["0.1.14.post1"]
    # the range the library runs on passes
    narrow = tmp_path / "narrow" / whl.name
    narrow.parent.mkdir()
    with zipfile.ZipFile(whl) as src, zipfile.ZipFile(narrow, "w") as dst:
        for n in src.namelist():
            data = src.read(n)
            if n.endswith("METADATA"):
                data = data.replace(b">=0.1.14", b">=0.1.14,<0.1.15")
            dst.writestr(n, data)
    r = tvmffi("conform", narrow, "--select", "declared-runtime", "--json")
    assert r.returncode == 0, r.stdout
    (c,) = json.loads(r.stdout)["checks"]
    assert c["status"] == "pass" and "loaded on 0.1.14.post1" in c["message"]


@pytest.mark.slow
def test_official_test_library_range_by_loading_equals_the_releases():
    """0.1.15.post2's test library imports nothing newer than 0.1.0 (symbols:
    every release) but aborts on 0.1.12 and older ("Cannot find type attribute
    __ffi_enum__"): --verify-range finds what a plain dlopen on each released
    runtime finds (tests/diff_oracle.py). ~13 loads each way."""
    import diff_oracle

    lib = releases.release_testing_lib("0.1.15.post2")
    for v in releases.RELEASES:
        releases.release_root(v)
    official = diff_oracle.official_range(str(lib))
    env = {"TVMFFI_WHEEL_CACHE": str(releases.cache_dir())}
    rep, _ = inspect_json(lib, "--verify-range", env=env)
    check = rep["runtime_range_check"]
    assert check["by_symbols"] == releases.RELEASES
    assert check["runs_on"] == [v for v, said in official.items() if not said]
    assert check["runs_on"] == ["0.1.13.post3", "0.1.14.post1", "0.1.15.post2"]
    for x in check["loads"]:
        if x["status"] == "fails":
            assert "Cannot find type attribute __ffi_enum__" in x["message"]
            assert "Cannot find type attribute __ffi_enum__" in official[x["release"]]
