"""An interrupted `conform` (Ctrl-C, or SIGTERM from a cancelled CI job)
ends every worker its probers hold and leaves none of their scratch dirs."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest


def _mapping(path):
    """Pids of the processes that have `path` mapped (the library loaded)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/maps") as f:
                    if path in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return pids


# As a terminal starts it: SIGINT at its default (a test run started in the
# background inherits it ignored, and tvmffi keeps it so).
_SHIM = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'tvmffi_cli', *sys.argv[1:]])"
)


def _conform(build_lib, tmp_path, *extra):
    """(process, library, TMPDIR): `conform` of zoo.c started as a terminal
    would start it, on a copy of the library at a path of this test's own
    (no other test's process maps it) and with a TMPDIR of its own."""
    lib = str(tmp_path / "libzoo.so")
    shutil.copy(build_lib("conform/zoo.c"), lib)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TVMFFI_RUNTIME"}
    env["TMPDIR"] = str(tmp)
    argv = [sys.executable, "-c", _SHIM, "conform", lib, "-j", "2", "--timeout", "60", *extra]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return p, lib, tmp


def _assert_nothing_left(lib, tmp):
    """No temp dir of tvmffi's, and (within 5 s) no process with `lib` loaded."""
    assert os.listdir(tmp) == []
    deadline = time.monotonic() + 5
    while _mapping(lib) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _mapping(lib) == []


@pytest.mark.parametrize(
    "sig, rc, line",
    [
        (signal.SIGTERM, -signal.SIGTERM, "tvmffi: terminated\n"),
        (signal.SIGINT, 2, "tvmffi: aborted\n"),
    ],
    ids=["sigterm", "ctrl-c"],
)
def test_interrupted_conform_leaves_no_worker_and_no_scratch_dir(
    build_lib, tmp_path, sig, rc, line
):
    # zoo's no_hang__spins never returns: its prober sits in a probe call
    # (with --timeout 60) when the signal comes, holding a worker and its
    # scratch dir, while the other prober may be anywhere in its functions.
    p, lib, tmp = _conform(build_lib, tmp_path, "--json")
    try:
        # Probing: the scratch dirs are there, and the spinning call has
        # had time to start (the zoo's other functions take about a second).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            if any(n.startswith("tvmffi-scratch-") for n in os.listdir(tmp)):
                break
            time.sleep(0.05)
        time.sleep(3.0)
        assert p.poll() is None, p.communicate()
        held = sorted(n for n in os.listdir(tmp) if n.startswith("tvmffi-scratch-"))
        assert held, "no prober held a worker when the signal came"
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        # (click's path puts a newline first, after the terminal's "^C")
        assert (p.returncode, err.lstrip("\n")) == (rc, line), err
        _assert_nothing_left(lib, tmp)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


@pytest.mark.parametrize("delay", [0.25, 0.3, 0.45, 0.7, 1.0])
def test_sigterm_while_the_workers_start_leaves_nothing(build_lib, tmp_path, delay):
    # Early: tvmffi may be importing, starting its workers in the
    # background or waiting for them to load. Wherever the signal lands,
    # no worker and no scratch dir outlives the run.
    p, lib, tmp = _conform(build_lib, tmp_path)
    try:
        time.sleep(delay)
        p.terminate()
        out, err = p.communicate(timeout=30)
        # (before Python installed its handler, SIGTERM ends it silently)
        assert p.returncode == -signal.SIGTERM and err in ("", "tvmffi: terminated\n"), err
        _assert_nothing_left(lib, tmp)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
