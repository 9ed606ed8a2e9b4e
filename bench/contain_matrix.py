#!/usr/bin/env python3
"""Containment tables, expected vs observed, in Markdown (not timed):

- issue 23 item 3: every case of fixtures/hostile/contain.c (and hostile.c's
  setsid grandchild) as the current user and as nobody, with namespaces and
  inside the wrapper that refuses them (a default container); the cases of
  tests/test_sandbox_contain.py.
- issue 30: every case of fixtures/hostile/escape.c and subreaper.c
  (metadata outside, datagrams and descriptors to a listener outside,
  memory of the whole tree, disk at depth and unlinked, a subreaper that
  would hide a crash, what CUDA needs of /proc and limits) as root and as
  nobody, with namespaces, without, and without namespaces or Landlock;
  then the controls (--no-sandbox, or a limit the attack fits in) that show
  each attack works. The cases of tests/test_sandbox_escape.py.

Usage: python bench/contain_matrix.py [--issue 23|30]
"""

import json
import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import test_sandbox_contain as t  # noqa: E402
import unprivileged  # noqa: E402
from sandbox_helpers import hostile, processes_named, token  # noqa: E402

ERRNO = {0: "0 (worked)", 1: "EPERM", 3: "ESRCH", 11: "EAGAIN", 14: "EFAULT", 38: "ENOSYS"}
OTHER = [
    "prlimit64(other, NOFILE=3)",
    "setpriority(other, 19)",
    "sched_setaffinity(other)",
    "fcntl F_SETOWN(other)",
    "fcntl F_SETSIG",
    "ioctl FIOSETOWN(other)",
    "process_vm_readv(other)",
    "ioprio_set(other)",
]
SELF = [
    "clone(CLONE_NEWUSER)",
    "clone3(CLONE_NEWUSER)",
    "unshare(CLONE_NEWUSER)",
    "pthread_create",
    "prlimit64(0)",
    "setpriority(0)",
    "sched_setaffinity(0)",
    "fork",
]


def _errno(e):
    return ERRNO.get(e, str(e))


def _cases(user, ns):
    rows = []
    sleeper = t._Sleeper(user)
    before = sleeper.state()
    got, applied = t._call(user, ns, t.contain(), "probe_other", "--int", sleeper.p.pid)
    after = sleeper.state()
    sleeper.close()
    pidns = "pid-namespace" in applied
    for i, (name, e) in enumerate(zip(OTHER, got)):
        want = "ESRCH" if pidns and i in (1, 2) else "EPERM"
        rows.append((name, want, _errno(e)))
    rows.append(("other process's limits, nice, CPUs", "unchanged", str(before == after)))
    got, _ = t._call(user, ns, t.contain(), "probe_self")
    wants = ["EPERM", "ENOSYS", "EPERM"] + ["0 (worked)"] * 5
    rows += [(n, w, _errno(e)) for n, w, e in zip(SELF, wants, got)]
    name = token()
    r = t._tvmffi(user, ns, "call", hostile(), "spawn_and_hang", "--str", name, "--timeout", "1")
    time.sleep(0.5)
    left = len(processes_named(name))
    rows.append(
        ("setsid grandchild, --timeout 1", "exit 1, 0 left", f"exit {r.returncode}, {left} left")
    )
    t._kill_all(name)
    name = token()
    argv = [*t._argv(user, ns), "call", str(t.contain()), "chain_and_hang", "--str", name]
    argv += ["--int", "300", "--timeout", "120"]
    p = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=t._env(user)
    )
    deadline = time.monotonic() + 60
    while len(processes_named(name)) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    before = len(processes_named(name))
    p.kill()
    p.wait()
    t0 = time.monotonic()
    while processes_named(name) and time.monotonic() - t0 < 10:
        time.sleep(0.02)
    left = len(processes_named(name))
    rows.append(
        (
            "chain of 300 + fork-and-exit runner, tvmffi SIGKILLed",
            "0 left",
            f"{before} running, {left} left after {time.monotonic() - t0:.1f} s",
        )
    )
    t._kill_all(name)
    if user == "nobody":
        r = t._tvmffi(user, ns, "call", t.contain(), "fork_bomb", "--int", "3000", "--json")
        v = json.loads(r.stdout)["result"]
        rows.append(
            ("fork bomb (3000 asked)", "EAGAIN near 1024", f"{_errno(v >> 32)} at {v & 0xFFFFFFFF}")
        )
    return sorted(applied), rows


def issue23():
    users = ["self"] + ([] if unprivileged.unavailable("nobody") else ["nobody"])
    for user in users:
        for ns in ("namespaces", "no-namespaces"):
            applied, rows = _cases(user, ns)
            who = pwd.getpwuid(os.getuid()).pw_name if user == "self" else user
            print(f"\n### {who}, {ns}\n")
            print(f"applied: {', '.join(applied)}\n")
            print("| case | expected | observed |\n|---|---|---|")
            for r in rows:
                print(f"| {r[0]} | {r[1]} | {r[2]} |")


def main():
    which = sys.argv[sys.argv.index("--issue") + 1] if "--issue" in sys.argv else "all"
    if which in ("23", "all"):
        issue23()
    if which in ("30", "all"):
        import escape_matrix

        escape_matrix.main()


if __name__ == "__main__":
    main()
