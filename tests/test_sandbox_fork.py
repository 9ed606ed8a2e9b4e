"""Workers started as a fork of tvmffi (sandbox/spawn.py) against the exec path
(TVMFFI_WORKER_EXEC=1): the same worker, the same confinement, nothing of the
parent's but what `python -I` would have had."""

import json
import os
import subprocess
import sys

import pytest

from sandbox_helpers import hostile
from test_call_helpers import tvmffi
from tvmffi_cli.sandbox import environ, spawn

MODES = ["fork", "exec"]


@pytest.fixture
def mode(request, monkeypatch):
    # A credential-like name in our environment makes every start an exec.
    for name in list(os.environ):
        if environ.may_hold_secret(name):
            monkeypatch.delenv(name)
    if request.param == "exec":
        monkeypatch.setenv(spawn.EXEC_ENV, "1")
    else:
        monkeypatch.delenv(spawn.EXEC_ENV, raising=False)
    return request.param


# Run in a fresh interpreter: this test process may run threads left by other
# tests, and a parent with threads always execs (test_threads_mean_exec).
STATE = """
import gc, json, os, sys
from tvmffi_cli.sandbox import process
gc.disable()  # as the CLI's plain commands run; the worker must not inherit it
keep = os.open(os.devnull, os.O_RDONLY)  # a parent fd the worker must not get
with process.Worker(stderr="capture") as w:
    st = w.call("sandbox.selftest", {"op": "state"}, timeout=30)
    echo = w.call("sandbox.selftest", {"op": "echo", "x": 1}, timeout=30)
crash = None
with process.Worker(stderr="capture", read_paths=[sys.argv[1]]) as w2:
    try:
        w2.call("sandbox.selftest", {"op": "call", "path": sys.argv[1], "func": "segv"}, timeout=30)
    except process.ChildCrashed as e:
        crash = e.signal
    again = w2.call("sandbox.selftest", {"op": "echo"}, timeout=30)
print(json.dumps({"state": st, "echo": echo, "reason": w.exec_reason, "crash": crash,
                  "again": again["op"], "starts": w2.starts, "reason2": w2.exec_reason,
                  "applied": list(w.sandbox.applied)}))
"""


@pytest.fixture(scope="module")
def crashy(build_lib):
    return str(build_lib("c/crashy.c", headers="ours"))


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_worker_state_and_crash_on_both_paths(mode, crashy, tmp_path):
    env = dict(os.environ, FORKTEST_PARENT_ONLY="1")
    r = subprocess.run(
        [sys.executable, "-c", STATE, crashy],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    st = doc["state"]
    assert (doc["reason"] is None) == (mode == "fork"), doc["reason"]
    assert (doc["reason2"] is None) == (mode == "fork"), doc["reason2"]
    assert doc["echo"]["x"] == 1
    assert "FORKTEST_PARENT_ONLY" not in st["environ"]
    assert "FORKTEST_PARENT_ONLY" not in st["proc_environ"]
    assert {"HOME", "TMPDIR"} <= set(st["environ"])
    assert os.path.basename(st["cwd"]).startswith("tvmffi-scratch-")
    assert str(tmp_path) not in st["path"]
    assert "" not in st["path"]
    # stdin/stdout/stderr, the two channel ends, the fault log, the listing itself
    assert len(st["fds"]) == 7, st["fds"]
    assert st["sid"] == st["pgid"]
    assert st["gc"] is True  # collection on, as in a new interpreter
    assert "seccomp" in doc["applied"] or "no-new-privs" not in doc["applied"]
    assert doc["crash"] == "SIGSEGV"
    assert doc["again"] == "echo" and doc["starts"] == 2


def test_threads_mean_exec(monkeypatch):
    import threading

    monkeypatch.delenv(spawn.EXEC_ENV, raising=False)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="not-ours")
    t.start()
    try:
        assert spawn.fork_refusal({}, sys.executable, []) == "the parent runs other threads"
    finally:
        stop.set()
        t.join()


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_call_cli_on_both_paths(mode):
    r = tvmffi("call", hostile(), "hello", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["sandbox"]["ran"] is True
    assert doc["result"] == 1


def test_refusals(monkeypatch, tmp_path):
    monkeypatch.setattr(spawn, "_single_threaded", lambda: True)
    base = {k: v for k, v in os.environ.items() if environ.allowed(k)}
    for name in list(os.environ):
        if environ.may_hold_secret(name):
            monkeypatch.delenv(name)
    monkeypatch.delenv(spawn.EXEC_ENV, raising=False)
    assert spawn.fork_refusal(base, sys.executable, []) is None
    assert spawn.fork_refusal(base, "/usr/bin/python3-other", []) == "another interpreter"
    other = dict(base, LD_LIBRARY_PATH="/nowhere")
    assert "LD_LIBRARY_PATH" in (spawn.fork_refusal(other, sys.executable, []) or "")
    tun = dict(base, GLIBC_TUNABLES="glibc.rtld.optional_static_tls=65536")
    if "GLIBC_TUNABLES" not in os.environ:
        # our own static TLS reserve is not a difference the fork cannot honour...
        assert spawn.fork_refusal(tun, sys.executable, []) is None
    monkeypatch.setenv("GITHUB_TOKEN", "x")
    assert "GITHUB_TOKEN" in (spawn.fork_refusal(base, sys.executable, []) or "")
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("AWS_REGION", "x")  # kept from the worker, but no secret
    assert spawn.fork_refusal(base, sys.executable, []) is None
    monkeypatch.setenv(spawn.EXEC_ENV, "1")
    assert spawn.fork_refusal(base, sys.executable, []) == f"{spawn.EXEC_ENV}=1"


def _cc(tmp_path, name, src, *flags):
    c = tmp_path / f"{name}.c"
    c.write_text(src)
    out = tmp_path / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", *flags, "-o", out, c], check=True)
    return str(out)


def test_static_tls_libraries_are_exec(tmp_path, monkeypatch):
    monkeypatch.setattr(spawn, "_single_threaded", lambda: True)
    small = "__thread int t; int get(void) { return t; }\n"
    big = "__thread char t[4096]; int get(int i) { return t[i]; }\n"
    ie = _cc(tmp_path, "ie", small, "-ftls-model=initial-exec")
    ie_big = _cc(tmp_path, "iebig", big, "-ftls-model=initial-exec")
    gd = _cc(tmp_path, "gd", big)
    assert spawn.static_tls_bytes(ie) == 4
    assert spawn.static_tls_bytes(ie_big) == 4096
    assert spawn.static_tls_bytes(gd) == 0
    assert spawn.static_tls_bytes(str(tmp_path / "ie.c")) == 0  # not ELF: an input
    for name in list(os.environ):
        if environ.may_hold_secret(name):
            monkeypatch.delenv(name)
    monkeypatch.delenv(spawn.EXEC_ENV, raising=False)
    same = {k: v for k, v in os.environ.items() if spawn._exec_time(k)}
    assert spawn.fork_refusal(same, sys.executable, [gd, ie]) is None
    assert spawn.fork_refusal(same, sys.executable, [ie_big, ie]) == (
        "the libraries need 4100 bytes of static TLS"
    )
