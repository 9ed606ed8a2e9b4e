"""Type attribute registration follows the official runtime: a second value
for the same (type, attribute) is refused with a RuntimeError and the first
value stays; a None slot counts as empty. The same C program runs on both
runtimes."""

import os
import subprocess
from pathlib import Path

import pytest

import fixturebuild

EXPECTED = "none rc=0\nfirst rc=0\nsecond rc=-1 kind=RuntimeError already=1\nkept 1\n"


def _run(libdir: Path) -> str:
    exe = fixturebuild.build("runtime/attr_twice.c", headers="ours", shared=False)
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    proc = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_ours_refuses_a_second_value():
    assert _run(Path(fixturebuild.our_runtime()).parent) == EXPECTED


def test_official_answers_the_same():
    official = fixturebuild.official_runtime()
    if official is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    assert _run(Path(official).parent) == EXPECTED
