"""Issue 23 item 3: containment that holds without namespaces. Every case runs
in four modes: as the test's user and (when the tests run as root) as
`nobody`, each directly and under fixtures/sandbox/no_namespaces.c
(tests/unprivileged.py), which refuses unshare, setns and clone with
namespace flags like a container without CAP_SYS_ADMIN (so the worker gets
no PID namespace). The library is
fixtures/hostile/contain.c; its probe_* functions return one errno per byte
(0: the forbidden thing worked)."""

import functools
import json
import os
import signal
import subprocess
import time

import pytest

import fixturebuild
import unprivileged
from sandbox_helpers import EPERM, ESRCH, gone, hostile, processes_named, token
from test_call_helpers import validate

ENOSYS = 38
MODES = [
    pytest.param(user, ns, id=f"{user}-{ns}")
    for user in ("self", "nobody")
    for ns in ("namespaces", "no-namespaces")
]


@functools.cache
def contain():
    return fixturebuild.build("hostile/contain.c")


@functools.cache
def _home(user):
    """HOME and TMPDIR for tvmffi run as `user` (the scratch goes there)."""
    d = unprivileged.shared_tempdir(f"tvmffi-contain-{user}-")
    if user == "nobody":
        os.chown(d, unprivileged.NOBODY, unprivileged.NOBODY)
    return d


def _argv(user, ns):
    """tvmffi's argv as the test's own user or as nobody, directly or inside
    the wrapper that refuses namespaces (tests/unprivileged.py). Every
    prefix execs, so the pid Popen reports is tvmffi's."""
    if user == "nobody":
        why = unprivileged.unavailable("nobody")
        if why:
            pytest.skip(why)
    return unprivileged.tvmffi_argv("nobody" if user == "nobody" else "root", ns != "namespaces")


def _env(user):
    env = dict(os.environ)
    env.pop("TVMFFI_RUNTIME", None)
    env["HOME"] = env["TMPDIR"] = _home(user)
    return env


def _tvmffi(user, ns, *argv):
    return subprocess.run(
        [*_argv(user, ns), *map(str, argv)],
        capture_output=True,
        text=True,
        env=_env(user),
        timeout=120,
        check=False,
    )


def _call(user, ns, *argv):
    r = _tvmffi(user, ns, "call", *argv, "--json")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    doc = validate(json.loads(r.stdout), "call")
    v = doc["result"]
    return [(v >> (8 * i)) & 0xFF for i in range(8)], set(doc["sandbox"]["applied"])


def _kill_all(name):
    for _ in range(50):  # a fork chain that escaped keeps making new pids
        pids = processes_named(name)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


class _Sleeper:
    """Another process of the worker's user, to be left alone."""

    def __init__(self, user):
        _argv(user, "namespaces")  # skips when `user` is not available
        prefix = []
        if user == "nobody":
            n = unprivileged.NOBODY
            prefix = ["setpriv", f"--reuid={n}", f"--regid={n}", "--clear-groups", "--"]
        self.p = subprocess.Popen([*prefix, "sleep", "120"])

    def state(self):
        pid = self.p.pid
        with open(f"/proc/{pid}/limits") as f:
            files = next(line for line in f if line.startswith("Max open files")).split()[3:5]
        return {
            "nofile": files,
            "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "cpus": sorted(os.sched_getaffinity(pid)),
        }

    def close(self):
        self.p.kill()
        self.p.wait()


@pytest.mark.parametrize(("user", "ns"), MODES)
def test_nothing_reaches_another_process_of_the_same_user(user, ns):
    sleeper = _Sleeper(user)
    try:
        before = sleeper.state()
        got, applied = _call(user, ns, contain(), "probe_other", "--int", sleeper.p.pid)
        assert "seccomp" in applied, applied
        if ns == "no-namespaces":
            assert "pid-namespace" not in applied
        # In a PID namespace the sleeper's pid names nothing (ESRCH); without
        # one the seccomp filter refuses (EPERM).
        sched = (ESRCH,) if "pid-namespace" in applied else (EPERM,)
        prlimit, nice, affinity, setown, setsig, fiosetown, vm_read, ioprio = got
        assert prlimit == EPERM
        assert nice in sched and affinity in sched
        assert setown == setsig == fiosetown == EPERM
        assert vm_read == EPERM and ioprio == EPERM
        assert sleeper.state() == before
    finally:
        sleeper.close()


def test_the_probe_can_fail_unconfined():
    """Control: the same probe under --no-sandbox without namespaces does
    change the other process (so the test above can fail)."""
    sleeper = _Sleeper("self")
    try:
        before = sleeper.state()
        got, _ = _call("self", "no-namespaces", "--no-sandbox", contain(), "probe_other",
                       "--int", sleeper.p.pid)  # fmt: skip
        assert got[0] == 0 and got[1] == 0 and got[3] == 0
        after = sleeper.state()
        assert after["nofile"] == ["3", "3"] and after["nice"] == 19
        assert before["nofile"] != after["nofile"]
    finally:
        sleeper.close()


@pytest.mark.parametrize(("user", "ns"), MODES)
def test_no_namespaces_from_inside_and_threads_still_work(user, ns):
    got, applied = _call(user, ns, contain(), "probe_self")
    assert "seccomp" in applied, applied
    clone_newuser, clone3, unshare, thread, prlimit, nice, affinity, fork = got
    assert clone_newuser == EPERM and unshare == EPERM
    assert clone3 == ENOSYS  # libc falls back to clone, where the flags are checked
    assert thread == prlimit == nice == affinity == fork == 0


@pytest.mark.parametrize(("user", "ns"), MODES)
def test_setsid_grandchild_is_gone_when_the_step_ends(user, ns):
    name = token()
    try:
        r = _tvmffi(user, ns, "call", hostile(), "spawn_sleeper", "--str", name, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["result"] == 0, r.stderr
        assert gone(name, 10.0), f"{name} survived tvmffi call"
    finally:
        _kill_all(name)


@pytest.mark.parametrize(("user", "ns"), MODES)
def test_setsid_grandchild_is_gone_after_timeout(user, ns):
    name = token()
    try:
        r = _tvmffi(user, ns, "call", hostile(), "spawn_and_hang", "--str", name, "--timeout", "1")
        assert r.returncode == 1 and "did not return within 1 s" in r.stderr, r.stderr
        assert gone(name, 10.0), f"{name} survived the timeout"
    finally:
        _kill_all(name)


@pytest.mark.parametrize(("user", "ns"), MODES)
def test_fork_chain_is_gone_after_tvmffi_is_sigkilled(user, ns):
    name = token()
    depth = 80  # more than the 64 rounds the old supervisor gave up after
    argv = [*_argv(user, ns), "call", str(contain())]
    argv += ["chain_and_hang", "--str", name, "--int", str(depth), "--timeout", "120"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(user))
    try:
        deadline = time.monotonic() + 30
        while len(processes_named(name)) < depth:
            assert time.monotonic() < deadline and p.poll() is None, "the chain never grew"
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert gone(name, 10.0), (
            f"{len(processes_named(name))} of {name} survived SIGKILL of tvmffi"
        )
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        _kill_all(name)


@pytest.mark.parametrize(
    ("user", "ns"), [p for p in MODES if p.values[0] == "nobody"] + [pytest.param("self", "x")]
)
def test_fork_bomb_stops_at_the_process_limit(user, ns):
    if user == "self":
        if os.geteuid() == 0:
            pytest.skip("the kernel exempts root from RLIMIT_NPROC (documented)")
        ns = "namespaces"
    r = _tvmffi(user, ns, "call", contain(), "fork_bomb", "--int", "3000", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert "process-limit" in doc["sandbox"]["applied"]
    count, err = doc["result"] & 0xFFFFFFFF, doc["result"] >> 32
    # EAGAIN within the budget of 1024 tasks (counted from the user's tasks at
    # start, which in a user namespace are fewer: a little slack)
    assert err == 11 and 900 < count < 1100, (count, err)
