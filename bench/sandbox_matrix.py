#!/usr/bin/env python3
"""Issue 23's table: every case of fixtures/hostile/planter.c as root and as
nobody, with namespaces and inside the wrapper that refuses them (a default
container), expected vs observed. Not timed; prints Markdown.

Usage: python bench/sandbox_matrix.py   (or bench/bench_sandbox.py --matrix)
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import fixturebuild  # noqa: E402
import unprivileged  # noqa: E402

SECRET = "TOPSECRET-b7d1e0"
CONFIGS = [("root", False), ("root", True), ("nobody", False), ("nobody", True)]


def _tail(r):
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("tvmffi: error")]
    return lines[-1][15:80] if lines else ""


class Case:
    def __init__(self, user, wrap, lib, base):
        self.user, self.wrap, self.lib, self.base = user, wrap, lib, base
        self.home = os.path.join(base, "home")

    def run(self, *args, env=None, timeout=120):
        return unprivileged.run(
            *args, user=self.user, wrap=self.wrap, env=env, home=self.home, timeout=timeout
        )

    def left(self):
        return [p for p in os.listdir(self.home) if p.startswith("tvmffi-")]

    def own(self, path):
        if self.user != "root":
            os.chown(path, unprivileged.NOBODY, unprivileged.NOBODY)


def fault_symlink(c):
    d = os.path.join(c.base, "private")
    os.makedirs(d, mode=0o700, exist_ok=True)
    key = os.path.join(d, "key")
    Path(key).write_text(SECRET)
    os.chmod(key, 0o600)
    c.own(d)
    c.own(key)
    r = c.run("call", c.lib, "plant_symlink", key, "-v")
    leaked = SECRET in r.stdout + r.stderr
    return r.returncode == 1 and not leaked, f"exit {r.returncode}, secret shown: {leaked}"


def fault_fifo(c):
    t = time.monotonic()
    r = c.run("call", c.lib, "plant_fifo", "--timeout", "5", timeout=60)
    took = time.monotonic() - t
    return r.returncode == 1 and took < 20, f"exit {r.returncode} after {took:.1f} s"


def env(c):
    e = {"GITHUB_TOKEN": "g", "AWS_SECRET_ACCESS_KEY": "a", "FOO_TOKEN": "f"}
    r = c.run("call", c.lib, "show_env", *e, env=e)
    r2 = c.run("call", c.lib, "show_env", "FOO_TOKEN", "--env", "FOO_TOKEN", env=e)
    seen, passed = r.stdout.strip(), r2.stdout.strip()
    return (seen, passed) == ("0", "1"), f"visible {seen} of 3; with --env FOO_TOKEN: {passed}"


def scratch_total(c):
    r = c.run("call", c.lib, "fill_scratch", "400", "--scratch-limit", "64M")
    ok = r.returncode == 1 and "scratch limit exceeded" in r.stderr and not c.left()
    return ok, f"exit {r.returncode}: {_tail(r)}; left behind: {len(c.left())}"


def scratch_file(c):
    r = c.run("call", c.lib, "big_file", "40", "--scratch-limit", "16M")
    return r.stdout.strip() == "-27", f"write returned {r.stdout.strip()} (-27 = EFBIG)"


def locked_scratch(c):
    r = c.run("call", c.lib, "lock_scratch")
    left = c.left()
    return r.returncode == 0 and not left, f"exit {r.returncode}; left behind: {len(left)}"


def require(c):
    r = c.run("call", c.lib, "show_env", "X", "--require-sandbox")
    want = 2 if c.wrap else 0
    return r.returncode == want, f"exit {r.returncode}" + (f": {_tail(r)}" if r.returncode else "")


def crash_after(c):
    r = c.run("call", c.lib, "crash_later", "50")
    return r.returncode == 1, f"exit {r.returncode}: {_tail(r)}"


def memory(c):
    r = c.run("call", c.lib, "alloc_until_refused", "--memory-limit", "1G", "--json")
    err = json.loads(r.stdout).get("error", {}) if r.stdout else {}
    reached = err.get("memory_limit_reached")
    peak = f"peak {reached['peak'] >> 20} MiB" if reached else "not named"
    return r.returncode == 1 and bool(reached), f"exit {r.returncode}, limit named: {peak}"


def denial(c):
    d = os.path.join(c.base, "cache")
    os.makedirs(d, exist_ok=True)
    c.own(d)
    r = c.run("call", c.lib, "write_in", d)
    r2 = c.run("call", c.lib, "write_in", d, "--allow-write", d)
    hinted = f"--allow-write {d}" in r.stderr
    return hinted and r2.returncode == 0, f"hint: {hinted}; with it: exit {r2.returncode}"


def device(c):
    d = os.path.join(c.base, "dev")
    os.makedirs(d, exist_ok=True)
    node = os.path.join(d, "nvidia-standin")
    if not os.path.exists(node):
        os.mknod(node, 0o666 | 0o020000, os.makedev(1, 3))
        os.chmod(node, 0o666)  # mknod's mode went through the umask
    r = c.run("call", c.lib, "open_device", node)
    r2 = c.run("call", c.lib, "open_device", node, env={"TVMFFI_DEVICE_NODES": node})
    a, b = r.stdout.strip(), r2.stdout.strip()
    return b == "0", f"unlisted: errno {a}; listed: errno {b}"


CASES = [
    (
        "fault log replaced by a symlink to a 0600 file, abort; `call -v`",
        "exit 1, file not shown",
        fault_symlink,
    ),
    ("fault log replaced by a FIFO, abort; `--timeout 5`", "exit 1 in < 20 s", fault_fifo),
    ("GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, FOO_TOKEN set", "0 of 3 visible; --env passes 1", env),
    (
        "400 x 1 MiB files, `--scratch-limit 64M`",
        "exit 1 naming the limit, nothing left",
        scratch_total,
    ),
    ("one 40 MiB file, `--scratch-limit 16M`", "write fails EFBIG", scratch_file),
    ("chmod 0 of its own directories", "exit 0, nothing left", locked_scratch),
    ("`--require-sandbox`", "exit 0 with namespaces, 2 without", require),
    ("crash in a thread 50 ms after returning", "exit 1", crash_after),
    (
        "allocates until refused, raises its own error, `--memory-limit 1G`",
        "exit 1, limit named",
        memory,
    ),
    (
        "create a file in a directory outside the sandbox",
        "hint --allow-write DIR; works with it",
        denial,
    ),
    ("open a stand-in GPU node (TVMFFI_DEVICE_NODES)", "opens (errno 0)", device),
]


def main():
    lib_src = str(fixturebuild.build("hostile/planter.c"))
    cols = []
    for user, wrap in CONFIGS:
        why = unprivileged.unavailable(user)
        cols.append((user, wrap, why))
    head = ["case", "expected"] + [
        f"{u} {'no namespaces' if w else 'namespaces'}" for u, w, _ in cols
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for title, expected, fn in CASES:
        row = [title, expected]
        for user, wrap, why in cols:
            if why:
                row.append(f"n/a ({why})")
                continue
            base = tempfile.mkdtemp(prefix="tvmffi-matrix-")
            os.chmod(base, 0o755)
            lib = unprivileged.shared_copy(lib_src, os.path.join(base, "lib"))
            c = Case(user, wrap, lib, base)
            os.makedirs(c.home, exist_ok=True)
            c.own(c.home)
            try:
                ok, seen = fn(c)
            except Exception as e:  # a case that breaks is a row, not a traceback
                ok, seen = False, f"{type(e).__name__}: {e}"
            finally:
                from tvmffi_cli.sandbox.files import remove_tree

                remove_tree(base)
            row.append(f"{'ok' if ok else 'FAIL'}: {seen}".replace("|", "/"))
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
