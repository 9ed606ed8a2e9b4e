"""Structural visit / walk / map / mutate (issue 11): ffi.StructuralWalk,
ffi.StructuralVisit, ffi.StructuralMap, ffi.StructuralMutate, the
ffi.StructuralVisitor* / ffi.StructuralMutator* globals and the
__s_visit__ / __s_mutate__ / __s_maybe_inplace_mutate__ hooks of the
built-in containers.

fixtures/cxx/structural_visit.cc is built with g++ against the OFFICIAL
headers as an executable and run twice, on the official libtvm_ffi.so and on
ours (one child process each, chosen with LD_LIBRARY_PATH). It defines user
types with reflected fields (definition regions, a free variable, a DAG
node, an ignored field, a read-only field, a type with native hooks), calls
the globals with callback tables, and runs the header-inline engines, which
call our container hooks with a visitor made by C++ code. Every printed line
(results, callback logs, identity checks, error kinds, messages and visit
error contexts) must be the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fixturebuild


def _libdirs() -> tuple[Path, Path]:
    official = fixturebuild.official_runtime()  # type: ignore[no-untyped-call]
    if official is None:
        pytest.skip("the official apache-tvm-ffi package (test extra) is not installed")
    ours = Path(fixturebuild.our_runtime())  # type: ignore[no-untyped-call]
    return Path(official).parent, ours.parent


@pytest.fixture(scope="module")
def driver() -> Path:
    _libdirs()
    try:
        path = fixturebuild.build(  # type: ignore[no-untyped-call]
            "cxx/structural_visit.cc", headers="official", shared=False
        )
    except fixturebuild.BuildError as e:
        pytest.skip(f"g++ could not build the fixture: {e}")
    return Path(path)


def _run(driver: Path, libdir: Path, *args: str) -> list[str]:
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    proc = subprocess.run(
        [str(driver), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


@pytest.fixture(scope="module")
def outputs(driver: Path) -> tuple[list[str], list[str]]:
    official_dir, our_dir = _libdirs()
    return _run(driver, official_dir), _run(driver, our_dir)


def _line(lines: list[str], label: str) -> str:
    found = [x for x in lines if x.startswith(label + ": ")]
    assert len(found) == 1, (label, found)
    return found[0][len(label) + 2 :]


def test_same_lines_as_the_official_runtime(outputs: tuple[list[str], list[str]]) -> None:
    official, ours = outputs
    assert len(official) > 250
    for i, (a, b) in enumerate(zip(official, ours)):
        assert a == b, f"line {i} differs"
    assert len(official) == len(ours)


def test_walk_orders_and_control(outputs: tuple[list[str], list[str]]) -> None:
    _, ours = outputs
    pre = [x for x in ours if x.startswith("walk pre#")]
    post = [x for x in ours if x.startswith("walk post#")]
    # the root first in pre-order, last in post-order; None is never visited
    assert pre[0].startswith("walk pre#0: any [1, 2.5,")
    assert post[-1].split(": ", 1)[1] == pre[0].split(": ", 1)[1]
    assert not any(x.endswith(" None") for x in pre)
    # the ignored field (Half.skipped = Leaf(8)) is never visited
    assert not any("any sv.Leaf(value=8)" in x for x in pre)
    assert _line(ours, "walk interrupt") == "VisitInterrupt(sv.Leaf(value=3))"
    assert _line(ours, "walk returns True") == "None"
    assert _line(ours, "walk returns 2.5").startswith(
        "raised TypeError: CallExpected: result type mismatch, expected WalkResult, but got float"
    )
    # definition regions: a simple def for the let's var, a pattern for the lambda's
    # params, the free variable's own fields are uses (clamped to NONE)
    assert "walk regions 0#1: Var(x) kind=2" in ours
    assert "walk regions 0#2: sv.Leaf(value=1) kind=0" in ours
    assert "walk regions 0#6: Var(y) kind=1" in ours


def test_map_copy_on_write_identity_and_remap(outputs: tuple[list[str], list[str]]) -> None:
    _, ours = outputs
    post = _line(ours, "map leaves 1")
    # untouched elements keep their identity, changed ones are new, root is new
    assert post.endswith(" same=sssssssnnnnnn root_same=n")
    assert _line(ours, "map nothing") == "same root"
    assert _line(ours, "map unique root in place").endswith(" same_root=y")
    # a root handed over (rvalue) is changed in place along uniquely owned
    # paths; a container with a second owner and a reflected object are copied
    assert _line(ours, "inplace containers").endswith(
        " root=same same same same new new keep=[sv.Leaf(value=5)]"
    )
    assert _line(ours, "map dag").endswith(" shared=y")
    assert _line(ours, "map vars").endswith(" var_new=y use_is_def=y")
    assert _line(ours, "map frozen") == "sv.Frozen(a=sv.Leaf(value=10))"
    assert _line(ours, "map shape").startswith(
        "raised TypeError: __ffi_shallow_copy__ must be an ffi.Function"
    )


def test_errors_name_the_visit_path(outputs: tuple[list[str], list[str]]) -> None:
    _, ours = outputs
    assert _line(ours, "map error") == (
        "raised IndexError: bad leaf | context=[sv.Leaf(value=1), sv.Pair(a=sv.Leaf(value=1), "
        "b=[sv.Leaf(value=2)]), [sv.Pair(a=sv.Leaf(value=1), b=[sv.Leaf(value=2)])]]"
    )
    assert _line(ours, "mutate remap int key").startswith(
        "raised TypeError: Variable-remap key must be an object-backed value"
    )
    assert _line(ours, "visitor visit not a visitor") == (
        "raised TypeError: Mismatched type on argument #0 when calling: "
        "`ffi.StructuralVisitorVisit(0: ffi.StructuralVisitor, 1: AnyView) -> "
        "Optional<ffi.VisitInterrupt>`. Expected `ffi.StructuralVisitor` but got `int`"
    )


def test_a_cycle_fails_instead_of_overflowing_the_stack(driver: Path) -> None:
    # the official engines recurse without a bound (a list holding itself
    # crashes the process); ours stops with a RecursionError
    _, our_dir = _libdirs()
    lines = _run(driver, our_dir, "cycle")
    for label, what in [
        ("cycle walk", "visit"),
        ("cycle map", "mutate"),
        ("cycle mutate", "mutate"),
    ]:
        assert _line(lines, label).startswith(
            f"raised RecursionError: structural {what}: nesting deeper than 4000 levels"
        )


def test_visitor_and_mutator_shallow_copies(driver: Path) -> None:
    # ours only: the official __ffi_shallow_copy__ copies the base object and
    # slices the C++ engine off, so a copy there is not usable; ours copies
    # the engine, its callback tables, the current region and the var remap
    _, our_dir = _libdirs()
    lines = _run(driver, our_dir, "copy")
    assert lines == [
        "copy visitor: None",
        "copy visitor log: distinct=y kind=2",
        "copy visitor log: leaf sv.Leaf(value=2)",
        "copy mutator: [sv.Leaf(value=1), 42, False]",
    ]


def _py_side(which: str) -> list[object]:
    script = Path(__file__).resolve().parent / "structural_visit_py.py"
    proc = subprocess.run(
        [sys.executable, str(script), which],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: list[object] = json.loads(proc.stdout)
    return result


def test_python_callbacks_give_the_official_results() -> None:
    # Python callables as callback tables, as tvm_ffi/structural.py passes
    # them: the official package in one child, our runtime through
    # tvmffi_cli.ffi in another
    _libdirs()
    official, ours = _py_side("official"), _py_side("ours")
    assert len(official) == 27
    assert ["walk interrupt", ["VisitInterrupt", 4]] in official
    for a, b in zip(official, ours):
        assert a == b
    assert len(ours) == len(official)
