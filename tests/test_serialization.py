"""The JSON object graph (ffi.ToJSONGraph / FromJSONGraph and the string
forms), the reflection builders (ffi.MakeObjectFromPackedArgs,
MakeFieldGetter/Setter, _RegisterFFIInit, _PyClassRegisterTypeAttrColumns),
the ffi.reflection.AccessPath methods, ffi.VisitErrorContext.FindAccessPaths
(and its C++ export) and ffi.SystemLib, compared with the official runtime
on the same inputs (issue 11).

fixtures/runtime/serial_fixture.cc (+ serial_fixture_cases.cc and
serial_fixture.h) is built with g++ against the OFFICIAL headers: it defines user types with reflected fields (a base and a final
derived type with fields of every inline kind, one without a creator),
registers system-library symbols, and runs about 140 cases through the
runtime's globals. tests/serial_driver.py runs it in a child process on one
runtime; both runtimes must give exactly the same texts, error kinds and
messages, and a sample of the texts is pinned here as well.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fixturebuild

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "serial_driver.py"
FUZZ = HERE / "serial_graph_fuzz.py"

# label -> (official result, why ours differs); ours is checked separately
KNOWN_DIFFERENCES = {
    "float_denormal": (
        "err:ValueError:Expecting value: line 1 column 49 (char 48)",
        "the official JSON parser refuses the denormal double its writer prints "
        "(strtod reports ERANGE); ours reads it back",
    ),
}


def _fixture() -> Path:
    if fixturebuild.official_include() is None:  # type: ignore[no-untyped-call]
        pytest.skip("the official apache-tvm-ffi package (test extra) is not installed")
    header = fixturebuild.FIXTURES / "runtime" / "serial_fixture.h"
    digest = hashlib.sha256(header.read_bytes()).hexdigest()[:16]
    path: Path = fixturebuild.build(  # type: ignore[no-untyped-call]
        ["runtime/serial_fixture.cc", "runtime/serial_fixture_cases.cc"],
        headers="official",
        flags=("-Wno-unused-parameter",),
        # the cache key covers the sources and flags, not the header they share
        defines=(f"SERIAL_FIXTURE_H_DIGEST={digest}",),
    )
    return path


def _run(
    runtime: Path | str,
    fixture: Path,
    *extra: str,
    env: dict[str, str] | None = None,
) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, str(DRIVER), str(runtime), str(fixture), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, str] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, str], dict[str, str]]:
    fixture = _fixture()
    official = fixturebuild.official_runtime()  # type: ignore[no-untyped-call]
    ours = fixturebuild.our_runtime()  # type: ignore[no-untyped-call]
    return _run(official, fixture), _run(ours, fixture)


def test_same_results_as_the_official_runtime(
    results: tuple[dict[str, str], dict[str, str]],
) -> None:
    ref, ours = results
    assert len(ref) >= 130
    assert set(ours) == set(ref)
    for label, want in ref.items():
        if label in KNOWN_DIFFERENCES:
            continue
        assert ours[label] == want, label


def test_known_differences(results: tuple[dict[str, str], dict[str, str]]) -> None:
    ref, ours = results
    for label, (official, _why) in KNOWN_DIFFERENCES.items():
        assert ref[label] == official
    assert ours["float_denormal"] == (
        'ok:{"root_index":0,"nodes":[{"type":"float","data":4.9406564584124654e-324}]}'
    )


def test_error_cases_fail_and_the_rest_succeed(
    results: tuple[dict[str, str], dict[str, str]],
) -> None:
    _, ours = results
    for label, got in ours.items():
        if label.startswith("err_"):
            assert got.startswith("err:"), (label, got)
        elif not label.startswith("read_"):
            assert got.startswith("ok:"), (label, got)


# exact texts, so that a change both runtimes would share still shows
PINNED: dict[str, str] = {
    "int": 'ok:{"root_index":0,"nodes":[{"type":"int","data":5}]}',
    "bytes": (
        'ok:{"root_index":6,"nodes":[{"type":"ffi.Bytes","data":""},'
        '{"type":"ffi.Bytes","data":"YQ=="},{"type":"ffi.Bytes","data":"YWI="},'
        '{"type":"ffi.Bytes","data":"YWJj"},{"type":"ffi.Bytes","data":"AP8QIGJpbmFyeX8="},'
        '{"type":"ffi.String","data":"abc"},{"type":"ffi.Array","data":[0,1,2,3,4,5]}]}'
    ),
    "point": (
        'ok:{"root_index":7,"nodes":[{"type":"ffi.String","data":"tag"},'
        '{"type":"ffi.String","data":"point-1"},{"type":"None"},{"type":"int","data":1},'
        '{"type":"ffi.String","data":"two"},{"type":"float","data":3.0},'
        '{"type":"ffi.Array","data":[3,4,5]},{"type":"serial.Point","data":{"base_id":101,'
        '"tag":0,"x":1,"y":0.5,"flag":true,"dt":"float16x4","name":1,"next":2,"items":6,'
        '"with_default":71}}]}'
    ),
    "metadata": (
        'ok:{"root_index":1,"nodes":[{"type":"int","data":1},{"type":"ffi.Array","data":[0]}],'
        '"metadata":{"version":"1.2"}}'
    ),
    "point_shared_identity": "ok:shared,fresh",
    "point_fields_back": "ok:5,2.500000,1,point-5,16x4,75,3,105",
    "err_list_cycle": "err:ValueError:Cycle detected during serialization: a List contains itself",
    "err_tensor": (
        "err:TypeError:Type `ffi.Tensor` does not support ToJSONGraph (no native creator or "
        "__ffi_new__ type attr)"
    ),
    "read_badidx": "err:ValueError:Invalid JSON Object Graph: invalid node index 3",
    "make_point": (
        'ok:{"root_index":3,"nodes":[{"type":"None"},{"type":"ffi.String","data":"n"},'
        '{"type":"ffi.Array","data":[]},{"type":"serial.Point","data":{"base_id":1,"tag":0,'
        '"x":2,"y":2.5,"flag":true,"dt":"int64","name":1,"next":0,"items":2,"with_default":7}}]}'
    ),
    "err_make_unknown_field": "err:TypeError:Type `serial.Point` does not have field `zzz`",
    "err_init_missing": "err:TypeError:serial.Base.__ffi_init__() missing required argument: 'tag'",
    "path_compare": (
        'ok:EP ep eP ep eP EP EP EP depth 2: 0={"root_index":0,"nodes":[{"type":"ffi.String",'
        '"data":"f"}]} 1={"root_index":0,"nodes":[{"type":"int","data":1}]}'
    ),
    "syslib_default": ("ok:serial_add_one=42 add_two=none shadowed=1 missing_fn=none kind=library"),
    "syslib_prefix": "ok:add_two=3 serial_add_one=2 shadowed=2 sfx_add_two=7",
    "syslib_same_module": "ok:same different same",
    "find_root_only": "ok:1: [depth 0:]",
    "find_prefix_off": "ok:0:",
}


@pytest.mark.parametrize("label", sorted(PINNED))
def test_pinned_results(results: tuple[dict[str, str], dict[str, str]], label: str) -> None:
    ref, ours = results
    assert ours[label] == PINNED[label]
    assert ref[label] == PINNED[label]


def test_pyclass_layout_round_trips(results: tuple[dict[str, str], dict[str, str]]) -> None:
    """A type described field by field (as Python dataclasses do): init with
    positional and keyword arguments and defaults, a shallow copy, and a
    JSON round trip of the objects."""
    _, ours = results
    got = ours["pyclass"]
    assert got.startswith("ok:") and " | second:" not in got
    assert '"serial.PyLike","data":{"a":1,"b":0,"c":2,"d":2.5,"e":true}' in got
    assert '"serial.PyLike","data":{"a":3,"b":4,"c":4,"d":4.5,"e":false}' in got
    assert got.endswith(" copy-is-new")


def test_find_access_paths(results: tuple[dict[str, str], dict[str, str]]) -> None:
    """Both matches of the pattern [C, B, A] (A.tag["key"].next and
    A.items[1].next), the same through the global and the C++ export."""
    _, ours = results
    got = ours["find_full"]
    assert got.startswith("ok:2: [depth 3: ") and " | c++:" not in got
    assert '"data":"tag"' in got and '"data":"key"' in got and '"data":"items"' in got
    assert ours["find_dups_and_none"] == got


def _fuzz(runtime: Path | str, seed: int, count: int, *mode: str) -> list[Any]:
    proc = subprocess.run(
        [sys.executable, str(FUZZ), str(runtime), str(seed), str(count), *mode],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: list[Any] = json.loads(proc.stdout)
    return result


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_graphs_read_as_the_official_runtime_reads_them(seed: int) -> None:
    """2000 random (acyclic, often malformed) graphs per seed: the value read
    and written again, or the error kind and message, must be the same."""
    _fixture()  # skips without the official package
    official = fixturebuild.official_runtime()  # type: ignore[no-untyped-call]
    ref = _fuzz(official, seed, 2000)
    ours = _fuzz(fixturebuild.our_runtime(), seed, 2000)  # type: ignore[no-untyped-call]
    assert len(ours) == len(ref) == 2000
    ok = sum(1 for _, r in ref if isinstance(r, str))
    assert 400 < ok < 1600, "both outcomes are exercised"
    for (text, want), (_, got) in zip(ref, ours):
        assert got == want, text


@pytest.mark.parametrize("seed", [1, 2])
def test_random_values_written_as_the_official_runtime_writes_them(seed: int) -> None:
    """400 random values per seed (containers made by the runtime's globals,
    sharing sub-values, maps up to 40 entries, random metadata): the same
    ToJSONGraphString text or the same error."""
    _fixture()
    official = fixturebuild.official_runtime()  # type: ignore[no-untyped-call]
    ref = _fuzz(official, seed, 400, "values")
    ours = _fuzz(fixturebuild.our_runtime(), seed, 400, "values")  # type: ignore[no-untyped-call]
    assert len(ours) == len(ref) == 400
    assert sum(1 for r in ref if isinstance(r, str)) > 250
    for i, (want, got) in enumerate(zip(ref, ours)):
        assert got == want, i


def test_cyclic_data_is_refused_not_a_crash() -> None:
    """Where the official runtime recurses until the stack overflows (a
    reference cycle through object fields, a graph whose node refers to
    itself, a 100000-deep chain) ours stops with a ValueError."""
    ours = _run(fixturebuild.our_runtime(), _fixture(), "ours-only")  # type: ignore[no-untyped-call]
    assert ours["err_object_cycle"].startswith(
        "err:ValueError:ToJSONGraph: the value nests too deeply"
    )
    assert ours["err_graph_self_reference"] == (
        "err:ValueError:Invalid JSON Object Graph: node 0 refers to itself"
    )
    assert ours["err_graph_cycle_through_object"] == (
        "err:ValueError:Invalid JSON Object Graph: node 0 refers to itself"
    )
    assert ours["deep_chain_100k"].startswith(
        "err:ValueError:ToJSONGraph: the value nests too deeply"
    )


def test_under_asan_ubsan(results: tuple[dict[str, str], dict[str, str]]) -> None:
    """The same cases on the sanitized runtime: no report, the same results."""
    import test_hardening_sanitize as san

    san._need_tools()  # type: ignore[no-untyped-call]
    libdir = san.sanitized_runtime_dir()  # type: ignore[no-untyped-call]
    if libdir is None:
        pytest.skip("the sanitized runtime did not build")
    env = san.python_sanitize_env(libdir)  # type: ignore[no-untyped-call]
    fixture = _fixture()
    for extra in ([], ["ours-only"]):
        proc = subprocess.run(
            [sys.executable, str(DRIVER), str(libdir / "libtvm_ffi.so"), str(fixture), *extra],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            check=False,
        )
        assert san.SAN_REPORT.search(proc.stderr) is None, proc.stderr[-6000:]
        assert proc.returncode == 0, proc.stderr[-3000:]
        got: dict[str, Any] = json.loads(proc.stdout)
        if not extra:
            assert got == results[1]
