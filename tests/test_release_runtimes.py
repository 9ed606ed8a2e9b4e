"""Every official runtime hosts (issue 19 item 2) and runtimes by release
(issue 21 item 4).

For each official release, its own libtvm_ffi.so given as --runtime PATH
hosts that release's own test library: loaded `inspect` lists the globals and
types that release's own Python sees from the library, `call` gives that
release's own results, and `conform` passes. Then `--runtime VERSION`: a
cached release resolves without the network, an uncached one offline is exit
2 with the fix, and repeated --runtime gives one report per runtime.
Wheels come from tests/releases.py (skipped with the reason when offline).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from releases import RELEASES, fetch_wheel, release_runtime, release_testing_lib, run_release_python
from test_call_helpers import tvmffi, validate

# What a release's own Python sees of its test library: tvm_ffi loads
# libtvm_ffi_testing.so when imported, and the library registers everything
# under "testing."; then the reference calls.
_ORACLE = """
import json
import tvm_ffi
from tvm_ffi import registry
names = registry.list_global_func_names()
keys = tvm_ffi.get_global_func("ffi.GetRegisteredTypeKeys", allow_missing=True)
out = {
    "globals": sorted(n for n in names if n.startswith("testing.")),
    "types": None if keys is None else sorted(k for k in keys() if k.startswith("testing.")),
    "add_one": tvm_ffi.get_global_func("testing.add_one")(41),
    "echo": tvm_ffi.get_global_func("testing.echo")("abc"),
}
# Last: it writes a line to std::cout, which must come after our JSON line.
check = tvm_ffi.get_global_func("testing.run_check_signal", allow_missing=True)
print(json.dumps(out), flush=True)
if check is not None:
    print(json.dumps({"run_check_signal": check(0)}), flush=True)
"""

_CHECK_LINE = "Function finished without catching signal"


@functools.cache
def _oracle(version: str) -> dict:
    """What release `version`'s own Python sees (run once per release)."""
    ref = run_release_python(version, _ORACLE)
    assert ref.returncode == 0, ref.stderr
    first, *rest = ref.stdout.splitlines()
    out = json.loads(first)
    out["check_signal_output"] = [ln for ln in rest if not ln.startswith("{")]
    out.update(json.loads(rest[-1]) if rest and rest[-1].startswith("{") else {})
    return out


def _missing_for(version: str) -> list[str]:
    from tvmffi_cli.abi.versions import SINCE, newer

    return sorted(n for n, since in SINCE.items() if newer(since, version))


@pytest.mark.parametrize("version", RELEASES)
def test_release_runtime_hosts_its_own_test_library(version: str) -> None:
    rt, lib = str(release_runtime(version)), str(release_testing_lib(version))
    oracle = _oracle(version)

    r = tvmffi("inspect", "--json", "--runtime", rt, lib)
    doc = json.loads(r.stdout)
    validate(doc, "inspect")
    # Every release's metadata formats (0.1.5..0.1.14 type schemas included) parse.
    assert r.returncode == 0 and doc["errors"] == [], r.stderr
    assert sorted(doc["globals"]) == oracle["globals"]
    types = sorted(t["type_key"] for t in doc["types"])
    # 0.1.0 has no ffi.GetRegisteredTypeKeys: neither side can list types.
    assert types == (oracle["types"] if oracle["types"] is not None else [])
    if oracle["types"] is None:  # and says so
        assert any("no ffi.GetRegisteredTypeKeys" in w for w in doc["warnings"]), doc["warnings"]
    info = doc["runtime"]
    assert info["release"] == version and info["kind"] == "path"
    assert info["missing"] == _missing_for(version)

    r = tvmffi("call", "--json", "--runtime", rt, lib, "testing.add_one", "41")
    assert r.returncode == 0, r.stderr
    call = json.loads(r.stdout)
    validate(call, "call")
    assert call["result"] == oracle["add_one"] == 42
    assert call["runtime"]["version"] is not None
    r = tvmffi("call", "--json", "--runtime", rt, lib, "testing.echo", '"abc"')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == oracle["echo"] == "abc"

    r = tvmffi("conform", "--runtime", rt, lib, "--function", "testing.add_one")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("version", RELEASES)
def test_builtin_runtime_runs_check_signal_like_the_release(version: str) -> None:
    # testing.run_check_signal (every release) polls TVMFFIEnvCheckSignals and
    # then writes to std::cout. Test libraries built with GCC 13+ headers no
    # longer construct std::ios_base::Init themselves: the runtime must have
    # done it (the official one does at load), or std::cout is used
    # uninitialised and the call crashes. 0 seconds: the crash is at the
    # print, so the polling loop adds nothing but time.
    oracle = _oracle(version)
    assert "run_check_signal" in oracle, "every release has it"
    assert oracle["run_check_signal"] is None
    assert _CHECK_LINE in oracle["check_signal_output"]
    lib = str(release_testing_lib(version))
    r = tvmffi("call", "--json", lib, "testing.run_check_signal", "0")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "call")
    assert doc["result"] is None and doc["runtime"]["kind"] == "builtin"
    assert f"[lib] {_CHECK_LINE}" in r.stderr


def test_a_file_that_is_not_a_runtime_is_refused(tmp_path: Path) -> None:
    # A real shared library without the C API: exit 2, naming what it lacks.
    lib = str(release_testing_lib(RELEASES[-1]))
    r = tvmffi("call", "--runtime", lib, lib, "testing.add_one", "1")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "is not a TVM-FFI runtime" in r.stderr
    text = tmp_path / "libtvm_ffi.so"
    text.write_text("not a library\n")
    r = tvmffi("inspect", "--runtime", str(text), lib)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


def test_old_runtime_says_what_it_lacks_when_a_feature_needs_it() -> None:
    # Integers beyond int64 need TVMFFIBigIntFromByteArray (0.1.14+): on 0.1.12
    # the Python API raises RuntimeLacks naming it, and the process survives.
    code = f"""
import tvmffi_cli
from tvmffi_cli.ffi.runtime import RuntimeLacks
lib = tvmffi_cli.load({str(release_testing_lib("0.1.12"))!r}, runtime={str(release_runtime("0.1.12"))!r})
echo = lib.get_global("testing.echo")
assert echo(5) == 5
try:
    echo(1 << 80)
except RuntimeLacks as e:
    print(e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "the runtime (0.1.12) lacks TVMFFIBigIntFromByteArray, first exported by apache-tvm-ffi 0.1.14"
    )


# --- runtimes by release ----------------------------------------------------------


@pytest.fixture()
def cache(tmp_path: Path) -> Path:
    """A runtime cache holding the cached wheels of 0.1.12 and 0.1.15.post2 only."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for v in ("0.1.12", "0.1.15.post2"):
        w = fetch_wheel("apache-tvm-ffi", v)
        os.symlink(w, wheels / w.name)
    return tmp_path


def test_call_runtime_version_from_the_cache(cache: Path) -> None:
    env = {"TVMFFI_RUNTIME_CACHE": str(cache), "PIP_NO_INDEX": "1"}  # no network
    lib = str(release_testing_lib("0.1.12"))
    t0 = time.monotonic()
    r = tvmffi("call", "--json", "--runtime", "0.1.12", lib, "testing.add_one", "1", env=env)
    first = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "call")
    assert doc["result"] == 2
    rt = doc["runtime"]
    assert (rt["kind"], rt["release"], rt["version"]) == ("release", "0.1.12", "0.1.12")
    assert rt["missing"] == _missing_for("0.1.12")
    so = cache / "0.1.12" / "libtvm_ffi.so"
    assert rt["path"] == str(so.resolve())
    assert so.read_bytes() == release_runtime("0.1.12").read_bytes()
    # The extracted file is used from now on: the wheel is no longer needed.
    shutil.rmtree(cache / "wheels")
    t0 = time.monotonic()
    r = tvmffi("call", "--runtime", "0.1.12", lib, "testing.add_one", "1", env=env)
    cached = time.monotonic() - t0
    assert r.returncode == 0 and r.stdout == "2\n", r.stderr
    print(f"from a cached wheel {first:.2f} s, from the cached runtime {cached:.2f} s")


def test_a_tampered_cached_runtime_is_not_used(cache: Path) -> None:
    env = {"TVMFFI_RUNTIME_CACHE": str(cache), "PIP_NO_INDEX": "1"}
    so = cache / "0.1.12" / "libtvm_ffi.so"
    so.parent.mkdir()
    shutil.copy(release_runtime("0.1.11"), so)  # a real runtime, but not 0.1.12's
    lib = str(release_testing_lib("0.1.12"))
    r = tvmffi("call", "--json", "--runtime", "0.1.12", lib, "testing.add_one", "1", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runtime"]["release"] == "0.1.12"  # re-extracted, verified
    assert so.read_bytes() == release_runtime("0.1.12").read_bytes()


def test_offline_uncached_release_is_exit_2_with_the_fix(tmp_path: Path) -> None:
    env = {
        "TVMFFI_RUNTIME_CACHE": str(tmp_path),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
    }
    lib = str(release_testing_lib("0.1.12"))
    r = tvmffi("call", "--runtime", "0.1.11", lib, "testing.add_one", "1", env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1, r.stderr
    assert (
        f"run `pip download --no-deps --only-binary=:all: apache-tvm-ffi==0.1.11 -d "
        f"{tmp_path / 'wheels'}`, or pass --runtime PATH" in r.stderr
    )
    r = tvmffi("call", "--runtime", "0.1.2", lib, "testing.add_one", "1", env=env)
    assert r.returncode == 2 and "not a known official release" in r.stderr


def test_two_release_conform_matrix(cache: Path) -> None:
    env = {"TVMFFI_RUNTIME_CACHE": str(cache), "PIP_NO_INDEX": "1"}
    lib = str(release_testing_lib("0.1.12"))
    args = ["conform", lib, "--function", "testing.add_one"]
    r = tvmffi(*args, "--runtime", "0.1.12", "--runtime", "0.1.15.post2", "--json", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "conform-matrix")
    assert [x["runtime"]["release"] for x in doc["runtimes"]] == ["0.1.12", "0.1.15.post2"]
    for x in doc["runtimes"]:
        validate(x["report"], "conform")
        assert x["passed"] and x["report"]["passed"]
    r = tvmffi(*args, "--runtime", "0.1.12", "--runtime", "0.1.15.post2", env=env)
    assert r.returncode == 0
    assert "apache-tvm-ffi 0.1.12" in r.stdout and "apache-tvm-ffi 0.1.15.post2" in r.stdout


def test_call_matrix_has_a_run_per_runtime_and_fails_with_them(cache: Path) -> None:
    env = {"TVMFFI_RUNTIME_CACHE": str(cache), "PIP_NO_INDEX": "1"}
    lib = str(release_testing_lib("0.1.12"))
    args = ["call", lib, "testing.test_raise_error", '"ValueError"', '"boom"', "--json"]
    r = tvmffi(*args, "--runtime", "0.1.12", "--runtime", "builtin", env=env)
    doc = json.loads(r.stdout)
    validate(doc, "call-matrix")
    assert [x["status"] for x in doc["runs"]] == ["raised", "raised"]
    assert r.returncode == 1 and doc["passed"] is False
    for x in doc["runs"]:
        validate(x["document"], "call")


def _wheel_with(path: Path, runtime: bytes, record_of: bytes) -> None:
    import base64
    import hashlib
    import zipfile

    digest = base64.urlsafe_b64encode(hashlib.sha256(record_of).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tvm_ffi/lib/libtvm_ffi.so", runtime)
        z.writestr(
            "apache_tvm_ffi-0.1.12.dist-info/RECORD",
            f"tvm_ffi/lib/libtvm_ffi.so,sha256={digest},{len(record_of)}\n",
        )


def test_a_wheel_is_trusted_only_through_both_hashes(tmp_path: Path, monkeypatch) -> None:
    from tvmffi_cli.errors import InputError
    from tvmffi_cli.ffi import fetch

    monkeypatch.setenv("TVMFFI_RUNTIME_CACHE", str(tmp_path))
    (tmp_path / "wheels").mkdir()
    wheel = tmp_path / "wheels" / "apache_tvm_ffi-0.1.12-cp311-cp311-manylinux_2_28_x86_64.whl"
    other = release_runtime("0.1.11").read_bytes()
    right = release_runtime("0.1.12").read_bytes()
    _wheel_with(wheel, other, other)  # intact archive, but another release's runtime
    with pytest.raises(InputError, match="is not the file apache-tvm-ffi 0.1.12 shipped"):
        fetch.release_runtime("0.1.12")
    _wheel_with(wheel, right, other)  # the right file, but the archive's RECORD disagrees
    with pytest.raises(InputError, match="does not match the wheel's RECORD"):
        fetch.release_runtime("0.1.12")
    _wheel_with(wheel, right, right)
    assert fetch.release_runtime("0.1.12").read_bytes() == right
    assert not (tmp_path / "0.1.11").exists()
