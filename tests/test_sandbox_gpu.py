"""Issue 27 item 3 where an NVIDIA GPU is at hand: cuInit in the sandboxed
worker returns 0 as root and as nobody, with and without namespaces, under
--no-sandbox, and in a child forked after load (conform's probe children).
Skipped elsewhere (CI has no GPU); tests/test_sandbox_escape.py checks on
every machine what can be seen without one (the worker's own /proc, no
address-space limit). The library is fixtures/sandbox/cuinit.c."""

import ctypes
import functools
import json
import os
import tempfile

import pytest

import fixturebuild
import unprivileged
from tvmffi_cli.sandbox import files


def _no_gpu():
    if not os.path.exists("/dev/nvidiactl"):
        return "needs an NVIDIA GPU (/dev/nvidiactl)"
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "needs the NVIDIA driver (libcuda.so.1)"
    return None


pytestmark = pytest.mark.skipif(_no_gpu() is not None, reason=str(_no_gpu()))


@functools.cache
def cuinit():
    return str(fixturebuild.build("sandbox/cuinit.c", flags=("-ldl",)))


@pytest.mark.parametrize("user", ["root", "nobody"])
@pytest.mark.parametrize("wrap", [False, True], ids=["ns", "nons"])
@pytest.mark.parametrize("flag", [[], ["--no-sandbox"]], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("func", ["cuinit", "cuinit_fork"])
def test_cuinit_in_the_worker(tmp_path, user, wrap, flag, func):
    why = unprivileged.unavailable(user)
    if why:
        pytest.skip(why)
    lib, shared = cuinit(), None
    if user != "root":  # pytest's tmp_path is root's alone: nobody needs a way in
        shared = tempfile.mkdtemp(prefix="tvmffi-gpu-test-")
        os.chmod(shared, 0o755)
        lib = unprivileged.shared_copy(lib, shared)
    try:
        r = unprivileged.run("call", "--json", lib, func, *flag, user=user, wrap=wrap)
    finally:
        if shared:
            files.remove_tree(shared)
    doc = json.loads(r.stdout)
    assert doc["result"] == 0, (doc["result"], doc["sandbox"], r.stderr[-2000:])
