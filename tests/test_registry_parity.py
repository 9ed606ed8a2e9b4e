"""Registry parity with the official runtime (issue 11).

The official runtime's registry is dumped in a subprocess twice: through the
`tvm_ffi` package's Python API (what a user of the package sees: the runtime
plus the package's own test library, whose names start with `testing.`) and
through the bare libtvm_ffi.so by itself (what the runtime registers at
start-up). Ours is dumped in a subprocess with ctypes. Ours must cover the
official start-up registry: every global function, every object type with
the same key, parent and index, its fields and methods, and every type
attribute column with the types that have a value in it; anything it does
not cover is listed below with the reason, and an exception that is no
longer missing fails the test (so the list stays honest).

Behaviour: the same global calls run on both runtimes (tests/registry_calls.py,
one subprocess each) and must give exactly the same results, error kinds and
messages; with the official test library libtvm_ffi_testing.so loaded, on
both runtimes, its registrations and a few of its functions too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fixturebuild

HERE = Path(__file__).resolve().parent

# global function -> why ours does not have it (none today)
MISSING_GLOBALS: dict[str, str] = {}

# (type key, "field:name" or "method:name") -> why
MISSING_MEMBERS: dict[tuple[str, str], str] = {}

# (column, type key) -> why the type has no value in our column (none today)
MISSING_COLUMN_VALUES: dict[tuple[str, str], str] = {}


def _official_dir() -> Path:
    d = fixturebuild.official_package_dir()  # type: ignore[no-untyped-call]
    if d is None or not (Path(d) / "lib" / "libtvm_ffi_testing.so").is_file():
        pytest.skip("the official apache-tvm-ffi package (test extra) is not installed")
    return Path(d)


def _column_names(official: Path) -> list[str]:
    """Attribute names written in the official headers and sources: each is
    probed on both runtimes."""
    names: set[str] = set()
    for f in [*official.joinpath("include").rglob("*.h"), *official.joinpath("src").rglob("*.cc")]:
        names.update(re.findall(r'"(__[a-z_]+__)"', f.read_text(errors="replace")))
    return sorted(names)


def _dump(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "registry_dump.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _calls(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "registry_calls.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def dumps() -> dict[str, dict[str, Any]]:
    official = _official_dir()
    cols = ",".join(_column_names(official))
    ours = str(fixturebuild.our_runtime())  # type: ignore[no-untyped-call]
    testing = str(official / "lib" / "libtvm_ffi_testing.so")
    return {
        "package": _dump("official", "--columns", cols),
        "bare": _dump("bare", str(official / "lib" / "libtvm_ffi.so"), "--columns", cols),
        "ours": _dump("ours", ours, "--columns", cols),
        "ours+testing": _dump("ours", ours, testing, "--columns", cols),
    }


def _gaps(ref: dict[str, Any], ours: dict[str, Any]) -> dict[str, set[Any]]:
    gaps: dict[str, set[Any]] = {
        "globals": set(),
        "types": set(),
        "members": set(),
        "columns": set(),
        "column_values": set(),
    }
    gaps["globals"] = set(ref["globals"]) - set(ours["globals"])
    for key, t in ref["types"].items():
        o = ours["types"].get(key)
        if o is None or (o["parent"], o["index"]) != (t["parent"], t["index"]):
            gaps["types"].add(key)
            continue
        gaps["members"] |= {(key, f"field:{f}") for f in set(t["fields"]) - set(o["fields"])}
        gaps["members"] |= {(key, f"method:{m}") for m in set(t["methods"]) - set(o["methods"])}
    for col, keys in ref["columns"].items():
        if keys is None:
            continue
        if ours["columns"][col] is None:
            gaps["columns"].add(col)
            continue
        gaps["column_values"] |= {(col, k) for k in set(keys) - set(ours["columns"][col])}
    return gaps


def test_ours_covers_the_official_startup_registry(dumps: dict[str, dict[str, Any]]) -> None:
    bare, ours = dumps["bare"], dumps["ours"]
    gaps = _gaps(bare, ours)
    assert gaps["types"] == set(), "types missing or with another parent/index"
    assert gaps["columns"] == set(), "type attribute columns missing"
    extra_columns = {
        c for c, keys in ours["columns"].items() if keys is not None and bare["columns"][c] is None
    }
    assert extra_columns == set(), "columns the official runtime does not create at start-up"
    assert gaps["globals"] - set(MISSING_GLOBALS) == set()
    assert gaps["members"] - set(MISSING_MEMBERS) == set()
    assert gaps["column_values"] - set(MISSING_COLUMN_VALUES) == set()
    # the exception lists name only what is really missing
    assert set(MISSING_GLOBALS) - gaps["globals"] == set(), "stale global exceptions"
    assert set(MISSING_MEMBERS) - gaps["members"] == set(), "stale member exceptions"
    assert set(MISSING_COLUMN_VALUES) - gaps["column_values"] == set(), "stale column exceptions"
    n_cols = sum(1 for v in bare["columns"].values() if v is not None)
    n_vals = sum(len(v) for v in bare["columns"].values() if v)
    print(
        f"\nglobals {len(bare['globals']) - len(gaps['globals'])}/{len(bare['globals'])}, "
        f"types {len(bare['types']) - len(gaps['types'])}/{len(bare['types'])}, "
        f"columns {n_cols - len(gaps['columns'])}/{n_cols}, "
        f"column values {n_vals - len(gaps['column_values'])}/{n_vals}"
    )


def test_the_package_adds_only_its_test_library(dumps: dict[str, dict[str, Any]]) -> None:
    package, bare = dumps["package"], dumps["bare"]
    extra_globals = set(package["globals"]) - set(bare["globals"])
    extra_types = set(package["types"]) - set(bare["types"])
    assert extra_globals and all(n.startswith("testing.") for n in extra_globals)
    assert extra_types and all(n.startswith("testing.") for n in extra_types)
    assert set(bare["globals"]) <= set(package["globals"])


def test_official_test_library_loads_and_registers_on_ours(
    dumps: dict[str, dict[str, Any]],
) -> None:
    package, ours = dumps["package"], dumps["ours+testing"]
    assert ours["loaded"] == {"libtvm_ffi_testing.so": "ok"}
    testing_globals = {n for n in package["globals"] if n.startswith("testing.")}
    assert testing_globals <= set(ours["globals"])
    for key, t in package["types"].items():
        if not key.startswith("testing."):
            continue
        o = ours["types"].get(key)
        assert o is not None, key
        assert (o["parent"], o["fields"], o["methods"]) == (
            t["parent"],
            t["fields"],
            t["methods"],
        ), key
    # columns the library fills (enum state, init/new hooks, ...) hold its
    # values, the initializers ffi._RegisterFFIInit generates included
    for col, keys in package["columns"].items():
        mine = {k for k in keys or [] if k.startswith("testing.")}
        missing = mine - set(ours["columns"][col] or [])
        assert missing == set(), col


def test_same_results_for_the_same_calls() -> None:
    official = _official_dir()
    ours = _calls(str(fixturebuild.our_runtime()))  # type: ignore[no-untyped-call]
    ref = _calls(str(official / "lib" / "libtvm_ffi.so"))
    assert len(ref) >= 40
    for label in ref:
        assert ours[label] == ref[label], label


def test_same_results_from_the_official_test_library() -> None:
    official = _official_dir()
    testing = str(official / "lib" / "libtvm_ffi_testing.so")
    ours = _calls(
        str(fixturebuild.our_runtime()),  # type: ignore[no-untyped-call]
        "--testing",
        testing,
    )
    ref = _calls(str(official / "lib" / "libtvm_ffi.so"), "--testing", testing)
    labels = [k for k in ref if k.startswith("testing.")]
    assert len(labels) >= 8
    for label in labels:
        assert ours[label] == ref[label], label
