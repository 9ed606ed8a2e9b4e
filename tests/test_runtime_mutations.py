"""Checks that fail when the C runtime is mutated as issue 10 lists
(tests/c/rt_mutations.c): a weak release that never frees, and an instance
check that accepts deeper types which do not derive from the expected one.
Each mutation was planted in the sources and made these tests fail."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import fixturebuild

C_DIR = Path(__file__).resolve().parent / "c"

KINDS = ["string", "bytes", "array", "map", "shape", "function", "error", "opaque"]


def _run() -> list[str]:
    exe = fixturebuild.build(  # type: ignore[no-untyped-call]
        C_DIR / "rt_mutations.c", name="rt_mutations", headers="ours", shared=False, flags=["-O1"]
    )
    libdir = Path(fixturebuild.our_runtime()).parent  # type: ignore[no-untyped-call]
    proc = subprocess.run(
        [str(exe)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, LD_LIBRARY_PATH=str(libdir)),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def test_weak_release_frees_storage() -> None:
    lines = _run()
    for kind in KINDS:
        # the strong release runs the contents' cleanup but keeps the block
        # for the weak holder; the weak release gives it back
        assert f"{kind}: after strong release +1, after weak release +0" in lines, lines
        assert f"{kind}: after last release +0" in lines, lines
    # a resource is released once per object, at the strong step
    assert "function: resource freed 2 times" in lines
    assert "opaque: resource freed 2 times" in lines
    # the weak holder lets go during the strong release: the runtime's own
    # weak step is then the last and frees the block
    assert "weak dropped during strong release: +0 (cleanup ran 1 times)" in lines
    assert "live objects delta: 0" in lines


def test_instance_check_refuses_deeper_unrelated_types() -> None:
    lines = _run()
    start = lines.index("ffi.Array itself: accepted, ffi.ArraySize -> 2")
    assert lines[start:] == [
        "ffi.Array itself: accepted, ffi.ArraySize -> 2",
        "derived from Array (depth 2): accepted, ffi.ArraySize -> 2",
        "derived from Array (depth 3): accepted, ffi.ArraySize -> 2",
        "unrelated, same depth: refused",
        "  raised TypeError",
        "unrelated, deeper (depth 2): refused",
        "  raised TypeError",
        "unrelated, deeper (depth 3): refused",
        "  raised TypeError",
        "Map (same depth): refused",
        "  raised TypeError",
    ]
