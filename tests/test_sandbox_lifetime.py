"""Issue 15 item 2: the worker and every process it starts die when the step
ends, on timeout, and when tvmffi itself is killed (SIGKILL included). The
hostile library forks a grandchild that leaves the process group (setsid)
and sleeps, named by a token we then look for in /proc."""

import os
import signal
import subprocess
import sys
import time

from sandbox_helpers import call_json, gone, hostile, processes_named, token
from test_call_helpers import tvmffi


def _kill_all(name):
    for pid in processes_named(name):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_grandchild_dies_when_the_step_ends():
    name = token()
    try:
        doc, _ = call_json(hostile(), "spawn_sleeper", "--str", name)
        assert doc["result"] == 0
        assert gone(name), f"{name} survived tvmffi call"
    finally:
        _kill_all(name)


def test_grandchild_dies_on_timeout():
    name = token()
    try:
        r = tvmffi("call", hostile(), "spawn_and_hang", "--str", name, "--timeout", "1")
        assert r.returncode == 1 and "did not return within 1 s" in r.stderr
        assert gone(name), f"{name} survived the timeout"
    finally:
        _kill_all(name)


def test_everything_dies_when_tvmffi_is_sigkilled(tmp_path):
    name = token()
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
            str(hostile()),
            "spawn_and_hang",
            "--str",
            name,
            "--timeout",
            "120",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while not processes_named(name):
            assert time.monotonic() < deadline and p.poll() is None, "the sleeper never started"
            time.sleep(0.05)
        # The worker's supervisor is tvmffi's child; its own children are the rest.
        workers = [
            int(x)
            for x in subprocess.run(
                ["pgrep", "-P", str(p.pid)], capture_output=True, text=True, check=False
            ).stdout.split()
        ]
        assert workers
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert gone(name), f"{name} survived SIGKILL of tvmffi"
        for w in workers:
            assert _pidgone(w), f"worker {w} survived SIGKILL of tvmffi"
    finally:
        if p.poll() is None:
            p.kill()
        _kill_all(name)


def _pidgone(pid, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True  # a zombie waiting for init: dead
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False
