"""Nothing lost: `tvmffi call` never writes to its input files, and `--out`
writes each file atomically (a temporary file in the same directory, then a
rename or a link), so a killed writer leaves either the old file or no file,
never a partial one."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fixturebuild
from test_call_helpers import kernels, tvmffi


def fingerprint(p):
    st = os.stat(p)
    return (hashlib.sha256(Path(p).read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size, st.st_ino)


@pytest.fixture(scope="module")
def ours():
    return str(fixturebuild.our_runtime())


@pytest.fixture
def inputs(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros_like(x))
    np.savez(tmp_path / "xs.npz", x=x)
    # an older mtime, so that a rewrite within the same clock tick still shows
    for n in ("x.npy", "y.npy", "xs.npz"):
        os.utime(tmp_path / n, ns=(1_000_000_000, 1_000_000_000))
    return tmp_path


CASES = [
    ("add_one", ["--tensor", "x.npy"], ["x.npy"]),
    ("add_one", ["--tensor", "x.npy", "--owned-tensors"], ["x.npy"]),
    ("add_one", ["x.npy"], ["x.npy"]),  # positional path
    ("add_into", ["--tensor", "x.npy", "--tensor", "y.npy"], ["x.npy", "y.npy"]),
    ("add_one", ["--tensor", "xs.npz:x"], ["xs.npz"]),
]


@pytest.mark.parametrize(
    "func,args,files", CASES, ids=["dltensor", "owned", "positional", "two-in-place", "npz"]
)
def test_call_never_writes_inputs(inputs, ours, func, args, files):
    before = {f: fingerprint(inputs / f) for f in files}
    r = tvmffi("call", kernels(), func, *args, "--json", "--runtime", ours, cwd=inputs)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # the kernel did write in place: the argument after the call changed
    last = doc["args"][-1]["value"]["data"]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(np.array(last, dtype=np.float32), x + 1)
    assert {f: fingerprint(inputs / f) for f in files} == before


def test_out_next_to_inputs_leaves_them_alone(inputs, ours):
    before = fingerprint(inputs / "x.npy")
    r = tvmffi(
        "call",
        kernels(),
        "add_into",
        "--tensor",
        "x.npy",
        "--tensor",
        "y.npy",
        "--out",
        ".",
        "--runtime",
        ours,
        cwd=inputs,
    )
    assert r.returncode == 0, r.stderr
    assert fingerprint(inputs / "x.npy") == before
    assert np.array_equal(np.load(inputs / "arg1.npy"), np.load(inputs / "x.npy") + 1)
    assert not [n for n in os.listdir(inputs) if n.startswith(".tvmffi-")]


# ---------------------------------------------------------------- atomic --out

KILLER = r"""
import os, signal, sys
import numpy as np
from tvmffi_cli.call import task as call

def half_then_die(f, arr, allow_pickle=False):
    # write the header and half the data, make sure it reached the file, die
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    b = buf.getvalue()
    f.write(b[: len(b) // 2])
    f.flush()
    os.fsync(f.fileno())
    print("half written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

np.save = half_then_die
call._save_npy(sys.argv[1], np.arange(1 << 20, dtype=np.float32), force=sys.argv[2] == "1")
"""


@pytest.mark.parametrize("existing", [False, True], ids=["new-file", "replacing"])
def test_writer_killed_mid_write_leaves_no_partial_file(tmp_path, existing):
    out = tmp_path / "out"
    out.mkdir()
    target = out / "arg0.npy"
    old = np.full(5, 7, dtype=np.int16)
    if existing:
        np.save(target, old)
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    p = subprocess.run(
        [sys.executable, str(script), str(target), "1" if existing else "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == -signal.SIGKILL and p.stdout == "half written\n", p.stderr
    if existing:
        assert np.array_equal(np.load(target), old)  # the old file, whole
    else:
        assert not target.exists()
    # what the kill leaves is a hidden temporary, never the target name
    leftovers = [n for n in os.listdir(out) if n != "arg0.npy"]
    assert (
        len(leftovers) == 1
        and leftovers[0].startswith(".tvmffi-")
        and leftovers[0].endswith(".npy.tmp")
    ), leftovers


def test_forced_write_replaces_by_rename(tmp_path):
    from tvmffi_cli.call.task import _save_npy

    target = tmp_path / "result.npy"
    np.save(target, np.zeros(4, dtype=np.float64))
    ino = os.stat(target).st_ino
    with open(target, "rb") as reader:  # a reader of the old file
        _save_npy(str(target), np.arange(1000, dtype=np.float32), force=True)
        assert np.array_equal(np.load(reader), np.zeros(4))  # still sees the old file whole
    assert os.stat(target).st_ino != ino  # a new file renamed over the old name
    assert np.array_equal(np.load(target), np.arange(1000, dtype=np.float32))
    assert os.listdir(tmp_path) == ["result.npy"]
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_unforced_write_never_clobbers(tmp_path):
    from tvmffi_cli.call.task import _save_npy
    from tvmffi_cli.errors import InputError

    target = tmp_path / "arg0.npy"
    np.save(target, np.ones(3))
    before = fingerprint(target)
    with pytest.raises(InputError, match="exists; pass --force"):
        _save_npy(str(target), np.arange(3.0), force=False)
    assert fingerprint(target) == before
    assert os.listdir(tmp_path) == ["arg0.npy"]  # temporary removed


def test_cli_killed_during_out_leaves_whole_files_or_none(tmp_path, ours):
    """The real CLI writing a 64 MiB result, killed (with its worker) as soon
    as a temporary output file appears: every arg0.npy/result.npy present
    afterwards is complete."""
    out = tmp_path / "out"
    env = dict(os.environ)
    env.pop("TVMFFI_RUNTIME", None)
    # A SIGKILLed tvmffi cannot remove its private directories: they go here.
    env["TMPDIR"] = str(tmp_path)
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tvmffi_cli",
            "call",
            str(kernels()),
            "scale2",
            "--tensor",
            "float32[4096,4096]:arange",
            "--out",
            str(out),
            "--runtime",
            ours,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    saw_tmp = False
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        if out.is_dir() and any(n.startswith(".tvmffi-") for n in os.listdir(out)):
            saw_tmp = True
            os.killpg(p.pid, signal.SIGKILL)
            break
        time.sleep(0.001)
    p.wait(timeout=30)
    for name in ("arg0.npy", "result.npy"):
        f = out / name
        if f.exists():
            a = np.load(f)
            assert a.shape == (4096, 4096) and a.dtype == np.float32
            want = np.arange(4096 * 4096, dtype=np.float32).reshape(4096, 4096)
            assert np.array_equal(a, want if name == "arg0.npy" else want * 2)
    if not saw_tmp:
        # finished before a temporary was seen: both files must be there
        assert p.returncode == 0 and (out / "result.npy").exists()
