#!/usr/bin/env python3
"""Issue 30's table (run by bench/contain_matrix.py, or alone): every case of
fixtures/hostile/escape.c and subreaper.c as root and as nobody, with
namespaces, inside the wrapper that refuses them, and inside the wrapper
that refuses them and Landlock; expected vs observed, then the controls
that show each attack works (--no-sandbox, or a limit the attack fits in).
Not timed; prints Markdown. Cases are those of tests/test_sandbox_escape.py.

Usage: python bench/escape_matrix.py
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import test_sandbox_escape as t  # noqa: E402
import unprivileged  # noqa: E402
from tvmffi_cli.sandbox.files import remove_tree  # noqa: E402

NAMES = {0: "ok", 1: "EPERM", 13: "EACCES", 30: "EROFS", 95: "EOPNOTSUPP", 106: "EISCONN"}
MODES = [
    ("root", False, "namespaces"),
    ("root", True, "no namespaces"),
    ("root", "nons-nolandlock", "no namespaces, no Landlock"),
    ("nobody", False, "namespaces"),
    ("nobody", True, "no namespaces"),
    ("nobody", "nons-nolandlock", "no namespaces, no Landlock"),
]


def _errnos(got):
    return " ".join(NAMES.get(e, str(e)) for e in got)


def _error(r):
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("tvmffi: error")]
    return lines[-1][15:110].replace("|", "/") if lines else ""


def _timed(m, *args):
    t0 = time.monotonic()
    r = m.run(*args)
    return r, time.monotonic() - t0


def rows(m):
    out = []
    target, new_mode = t._target(m)
    before = t._snapshot(target), t._snapshot(m.lib)
    got, sb = m.probe("probe_metadata", "--str", target, "--int", new_mode)
    got2, _ = m.probe("probe_metadata", "--str", m.lib, "--int", 0o777)
    same = (t._snapshot(target), t._snapshot(m.lib)) == before
    what = "setuid on a root copy of /bin/true" if m.user == "root" else "0644 on a 0600 key"
    out.append(
        (
            f"metadata outside: {what}; 0777 + xattr on the library file (chmod, fchmod, "
            "chmod via O_PATH, fchmodat, utimensat, setxattr, chown, FS_IOC_SETFLAGS)",
            "all refused, files unchanged",
            f"{_errnos(got)} / {_errnos(got2)}; unchanged: {same}",
        )
    )
    got, _ = m.probe("probe_scratch_metadata", "--str", "mine.txt")
    out.append(
        (
            "the same in the scratch directory",
            "work with read-only-fs, else EPERM",
            _errnos(got),
        )
    )
    s, path = t._listener(m)
    with s:
        got, _ = m.probe("probe_datagram", "--str", path)
        heard = t._received(s)
    out.append(
        (
            "DGRAM socketpair; sendmsg to a listener outside with SCM_RIGHTS; STREAM pair; "
            "sendto/sendmsg(path); SEQPACKET pair; sendmsg(path); send()",
            "EPERM EPERM ok EPERM EPERM ok EPERM ok; listener gets nothing",
            f"{_errnos(got)}; listener got {len(heard)}",
        )
    )
    got, _ = m.probe("probe_ipc", "--str", m.base)
    out.append(
        (
            "msgget, shmget, inotify_add_watch, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE 0",
            "EPERM x5",
            _errnos(got[:5]),
        )
    )
    r, dt = _timed(m, "call", m.lib, "memfd_hold", "--int", "1024", "--int", "5000",
                   "--memory-limit", "256M", "--json")  # fmt: skip
    doc = json.loads(r.stdout) if r.stdout else {}
    mech = doc.get("sandbox", {}).get("memory_mechanism", "?")
    said = doc.get("error", {}).get("message", "")[:100].replace("|", "/")
    out.append(
        (
            "1 GiB in a memfd by write(), held, --memory-limit 256M",
            "exit 1, memory limit exceeded",
            f"exit {r.returncode} after {dt:.1f} s ({mech}): {said}",
        )
    )
    r, dt = _timed(m, "call", m.lib, "fork_touch", "--int", "4", "--int", "200",
                   "--int", "5000", "--memory-limit", "512M")  # fmt: skip
    out.append(
        (
            "4 children touching 200 MiB each, --memory-limit 512M",
            "exit 1, memory limit exceeded",
            f"exit {r.returncode} after {dt:.1f} s: {_error(r)}",
        )
    )
    r = m.run("call", m.lib, "deep_fill", "--int", "300", "--int", "96", "--int", "1000",
              "--scratch-limit", "64M")  # fmt: skip
    out.append(
        (
            "96 MiB below 300 directories, --scratch-limit 64M",
            "exit 1, scratch limit exceeded, nothing left",
            f"exit {r.returncode}: {_error(r)}; left {len(m.left())}",
        )
    )
    r = m.run("call", m.lib, "unlinked_fill", "--int", "3", "--int", "32", "--int", "1000",
              "--scratch-limit", "64M")  # fmt: skip
    out.append(
        (
            "3 x 32 MiB unlinked while open, held, --scratch-limit 64M",
            "exit 1, scratch limit exceeded",
            f"exit {r.returncode}: {_error(r)}",
        )
    )
    sub = unprivileged.shared_copy(t.subreaper(), os.path.join(m.base, "sub"))
    r, dt = _timed(m, "conform", "--timeout", "1", "--function", "bad", "--json", sub)
    doc = json.loads(r.stdout) if r.stdout else {"results": []}
    crash = [x["message"] for x in doc["results"] if x["check"] == "no-crash"]
    out.append(
        (
            "subreaper at load + NULL dereference: conform --timeout 1 --function bad",
            "exit 1, no-crash fails (SIGSEGV), no probe waits timeout + 30 s",
            f"exit {r.returncode} in {dt:.1f} s: {crash[:1]}",
        )
    )
    doc = m.json("call", m.lib, "proc_self")
    v = doc["result"]
    lim = m.json("call", m.lib, "limits")["result"]
    as_, data = lim >> 20, lim & 0xFFFFF
    out.append(
        (
            "/proc/self vs getpid(); RLIMIT_AS; RLIMIT_DATA (MiB)",
            "equal; unlimited; 4096 (or unlimited in a cgroup)",
            f"{v >> 32} vs {v & 0xFFFFFFFF}; {'unlimited' if as_ == 0xFFFFF else as_}; "
            f"{'unlimited' if data == 0xFFFFF else data}",
        )
    )
    r = m.run("call", m.lib, "forged_type", "--int", "63")
    out.append(("result with a forged type index 63", "exit 1", f"exit {r.returncode}"))
    return sb, out


def controls(m):
    out = []
    target, _ = t._target(m)
    got, _ = m.probe("probe_metadata", "--str", target, "--int", 0o4755, "--no-sandbox")
    st = os.stat(target)
    out.append(
        (
            "metadata outside, --no-sandbox",
            f"{_errnos(got)}; mtime now {st.st_mtime_ns}, xattr {os.listxattr(target)}",
        )
    )
    s, path = t._listener(m)
    with s:
        got, _ = m.probe("probe_datagram", "--str", path, "--no-sandbox")
        heard = t._received(s)
    out.append(("datagram + SCM_RIGHTS, --no-sandbox", f"{_errnos(got)}; listener got {heard}"))
    got, _ = m.probe("probe_ipc", "--str", m.base, "--no-sandbox")
    out.append(("msgget ... PR_SET_DUMPABLE, --no-sandbox", _errnos(got[:5])))
    for args, what in (
        (("memfd_hold", "--int", "300", "--int", "0", "--memory-limit", "2G"), "memfd 300 MiB"),
        (
            ("fork_touch", "--int", "2", "--int", "200", "--int", "0", "--memory-limit", "2G"),
            "2 children x 200 MiB",
        ),
        (
            ("deep_fill", "--int", "300", "--int", "96", "--int", "0", "--scratch-limit", "512M"),
            "96 MiB below 300 directories",
        ),
        (
            ("unlinked_fill", "--int", "3", "--int", "32", "--int", "0", "--scratch-limit", "512M"),
            "3 x 32 MiB unlinked",
        ),
    ):
        r = m.run("call", m.lib, *args)
        out.append((f"{what}, limit it fits in", f"exit {r.returncode}, result {r.stdout.strip()}"))
    sub = unprivileged.shared_copy(t.subreaper(), os.path.join(m.base, "sub"))
    r = m.run("call", sub, "state", "--no-sandbox")
    out.append(("subreaper prctl at load, --no-sandbox (1: it is one)", r.stdout.strip()))
    return out


def main():
    for user, wrap, name in MODES:
        why = unprivileged.unavailable(user)
        print(f"\n### issue 30: {user}, {name}\n")
        if why:
            print(f"n/a ({why})")
            continue
        tmp = Path(tempfile.mkdtemp(prefix="tvmffi-escape-matrix-"))
        try:
            m = t.Mode(user, wrap, tmp)
            try:
                sb, table = rows(m)
            finally:
                m.close(tmp)
        finally:
            remove_tree(str(tmp))
        print(f"applied: {', '.join(sb['applied'])}; memory: {sb['memory_mechanism']}")
        if sb["notes"]:
            print(f"notes: {'; '.join(sb['notes'])}")
        print("\n| case | expected | observed |\n|---|---|---|")
        for r in table:
            print(f"| {r[0]} | {r[1]} | {r[2]} |", flush=True)
    print("\n### issue 30: controls (root, namespaces)\n")
    tmp = Path(tempfile.mkdtemp(prefix="tvmffi-escape-matrix-"))
    try:
        print("| attack | observed |\n|---|---|")
        for r in controls(t.Mode("root", False, tmp)):
            print(f"| {r[0]} | {str(r[1]).replace('|', '/')} |", flush=True)
    finally:
        remove_tree(str(tmp))


if __name__ == "__main__":
    main()
