"""Issue 30 (the third round of hostile libraries) and what issue 27 item 3
needs of the sandbox for CUDA: metadata of files outside, datagrams to the
outside, memory the whole tree holds, disk at any depth or unlinked, a
subreaper that would hide a crash, the worker's own /proc and limits. The
library is fixtures/hostile/escape.c; its probe_* functions return one errno
per byte (0: it worked).

Every case runs as root and as nobody (tests/unprivileged.py), with
namespaces, inside the wrapper that refuses them, and inside the wrapper
that refuses them and Landlock; each has a --no-sandbox (or large limit)
control that shows the attack works."""

import functools
import json
import os
import socket
import stat
import subprocess
import tempfile

import pytest

import fixturebuild
import unprivileged
from test_call_helpers import validate
from tvmffi_cli.sandbox import files

EPERM, EACCES, EROFS = 1, 13, 30
MODES = [
    pytest.param((user, wrap), id=f"{user}-{name}")
    for user in ("root", "nobody")
    for wrap, name in ((False, "ns"), (True, "nons"), ("nons-nolandlock", "nons-nolandlock"))
    if not (user == "nobody" and wrap == "nons-nolandlock")
]
#: For what does not depend on the user (seccomp's rules, the view of /proc):
#: each kind of namespace and Landlock once.
SOME = [p for p in MODES if p.id in ("root-ns", "nobody-nons", "root-nons-nolandlock")]


@functools.cache
def escape():
    return str(fixturebuild.build("hostile/escape.c"))


@functools.cache
def subreaper():
    return str(fixturebuild.build("hostile/subreaper.c"))


class Mode:
    """tvmffi as `user`, directly or inside the wrapper; base: a directory
    of that user's (its files, the library copy, HOME and TMPDIR)."""

    def __init__(self, user, wrap, tmp_path):
        why = unprivileged.unavailable(user)
        if why:
            pytest.skip(why)
        self.user = user
        self.wrap = wrap is True or wrap == "nons-nolandlock"
        self.landlock = wrap != "nons-nolandlock"
        self.base = str(tmp_path)
        if user != "root":
            # pytest's tmp_path is root's alone (0700 above it): nobody needs
            # a way in. Removed by close().
            self.base = tempfile.mkdtemp(prefix="tvmffi-test-nobody-")
            os.chmod(self.base, 0o755)
            os.chown(self.base, unprivileged.NOBODY, unprivileged.NOBODY)
        self.home = os.path.join(self.base, "home")
        self.lib = self.own(unprivileged.shared_copy(escape(), os.path.join(self.base, "lib")))

    def own(self, path):
        if self.user != "root":
            os.chown(path, unprivileged.NOBODY, unprivileged.NOBODY)
        return path

    def run(self, *args):
        return unprivileged.run(
            *args, user=self.user, wrap=self.wrap, home=self.home, landlock=self.landlock
        )

    def json(self, *args, rc=0):
        r = self.run(*args, "--json")
        assert r.returncode == rc, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
        return validate(json.loads(r.stdout), "call")

    def probe(self, func, *args):
        doc = self.json("call", self.lib, func, *args)
        v = doc["result"]
        return [(v >> (8 * i)) & 0xFF for i in range(8)], doc["sandbox"]

    def left(self):
        return [p for p in os.listdir(self.home) if p.startswith("tvmffi-")]

    def close(self, tmp_path):
        if self.base != str(tmp_path):
            files.remove_tree(self.base)


@pytest.fixture
def mode(request, tmp_path):
    user, wrap = request.param
    m = Mode(user, wrap, tmp_path)
    yield m
    m.close(tmp_path)


def _snapshot(path):
    st = os.lstat(path)
    try:
        xattrs = sorted(os.listxattr(path))
    except OSError:
        xattrs = []
    return (stat.S_IMODE(st.st_mode), st.st_uid, st.st_mtime_ns, xattrs)


def _target(mode):
    """A file outside the sandbox its user owns: as root a root-owned copy
    of /bin/true (setuid would make it a root shell), as nobody a 0600 key."""
    if mode.user == "root":
        path = os.path.join(mode.base, "true")
        subprocess.run(["cp", "/bin/true", path], check=True)
        os.chmod(path, 0o755)
        return path, 0o4755
    path = os.path.join(mode.base, "key")
    with open(path, "w") as f:
        f.write("secret\n")
    os.chmod(path, 0o600)
    return mode.own(path), 0o644


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_metadata_outside_cannot_change(mode):
    target, new_mode = _target(mode)
    before = {p: _snapshot(p) for p in (target, mode.lib)}
    got, sb = mode.probe("probe_metadata", "--str", target, "--int", new_mode)
    ro = "read-only-fs" in sb["applied"]
    assert ro == (not mode.wrap), sb
    # EROFS on a read-only mount; EPERM from seccomp without one; EACCES
    # where Landlock refuses to open the file at all (fchmod, the ioctl).
    assert all(e in (EROFS if ro else EPERM, EACCES) for e in got), got
    got, _ = mode.probe("probe_metadata", "--str", mode.lib, "--int", 0o777)
    assert all(e in (EROFS if ro else EPERM, EACCES) for e in got), got
    assert {p: _snapshot(p) for p in (target, mode.lib)} == before
    # In the scratch directory they work where the mounts are read-only
    # (setxattr: tmpfs takes user.* attributes since Linux 6.6).
    got, _ = mode.probe("probe_scratch_metadata", "--str", "mine.txt")
    if ro:
        assert got[:5] == [0] * 5 and got[6] == 0 and got[5] in (0, 95), got
    else:
        assert got[:7] == [EPERM] * 7, got


def test_metadata_control_unconfined(tmp_path):
    """Control: the same probe under --no-sandbox changes the file."""
    mode = Mode("root", False, tmp_path)
    target, _ = _target(mode)
    got, _ = mode.probe("probe_metadata", "--str", target, "--int", 0o4755, "--no-sandbox")
    assert got[:7] == [0] * 7, got
    st = os.stat(target)
    assert st.st_mtime_ns == 0 and "user.tvmffi" in os.listxattr(target)


def _listener(mode):
    """A pathname datagram socket outside the sandbox the mode's user may
    write to (as /dev/log is)."""
    d = tempfile.mkdtemp(prefix="dg-", dir=mode.base)
    os.chmod(d, 0o777)
    path = os.path.join(d, "s")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    os.chmod(path, 0o777)
    s.setblocking(False)
    return s, path


def _received(s):
    got = []
    while True:
        try:
            msg, anc, _, _ = s.recvmsg(256, socket.CMSG_SPACE(16))
        except BlockingIOError:
            return got
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for fd in memoryview(data).cast("i"):
                    os.close(fd)
        got.append((msg, len(anc)))


@pytest.mark.parametrize("mode", SOME, indirect=True)
def test_no_datagram_or_descriptor_to_the_outside(mode):
    s, path = _listener(mode)
    with s:
        got, _ = mode.probe("probe_datagram", "--str", path)
        assert _received(s) == []
    dgram, dgram_send, stream, sendto, sendmsg, seqpacket, seq_sendmsg, send = got
    assert dgram == dgram_send == EPERM, got
    assert sendto == sendmsg == seq_sendmsg == EPERM, got
    assert stream == seqpacket == send == 0, got  # a stream pair still works
    # Other objects shared with outside processes, watches, the subreaper
    # and non-dumpable bits (issue 30 items 5 and 6).
    got, _ = mode.probe("probe_ipc", "--str", mode.base)
    assert got[:5] == [EPERM] * 5, got


def test_datagram_control_unconfined(tmp_path):
    """Control: unconfined, the message and the pair's other end arrive."""
    mode = Mode("root", False, tmp_path)
    s, path = _listener(mode)
    with s:
        got, _ = mode.probe("probe_datagram", "--str", path, "--no-sandbox")
        assert got[:2] == [0, 0], got
        assert _received(s) == [(b"tvmffi-escape", 1)]


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_memory_of_the_whole_tree_is_bounded(mode):
    # 1 GiB in a memfd written with write() (no RSS), held: killed past 256M.
    r = mode.run("call", mode.lib, "memfd_hold", "--int", "1024", "--int", "5000",
                 "--memory-limit", "256M", "--json")  # fmt: skip
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert "memory limit exceeded (--memory-limit 256M" in doc["error"]["message"]
    mech = doc["sandbox"]["memory_mechanism"]
    assert mech in ("cgroup-v2", "rlimit-data+watch"), doc["sandbox"]
    if mech == "rlimit-data+watch":
        assert "the worker's processes held" in doc["error"]["message"]
    assert not mode.left()
    if mode.wrap and not mode.landlock:
        return  # the forks below: once per user and kind of namespace is enough
    # Four children touching 200 MiB each, each under its own RLIMIT_DATA.
    r = mode.run("call", mode.lib, "fork_touch", "--int", "4", "--int", "200", "--int", "5000",
                 "--memory-limit", "512M")  # fmt: skip
    assert r.returncode == 1 and "memory limit exceeded (--memory-limit 512M" in r.stderr, r.stderr


def test_memory_control_large_limit(tmp_path):
    """Control: under a limit they fit in, the same calls hold the memory."""
    mode = Mode("root", True, tmp_path)
    doc = mode.json("call", mode.lib, "memfd_hold", "--int", "300", "--int", "0",
                    "--memory-limit", "2G")  # fmt: skip
    assert doc["result"] == 300
    doc = mode.json("call", mode.lib, "fork_touch", "--int", "2", "--int", "200", "--int", "0",
                    "--memory-limit", "2G")  # fmt: skip
    assert doc["result"] == 2


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_scratch_bounded_at_any_depth_and_unlinked(mode):
    ns = not mode.wrap
    for args in (
        ("deep_fill", "--int", "300", "--int", "96", "--int", "1000"),
        ("unlinked_fill", "--int", "3", "--int", "32", "--int", "1000"),
    ):
        r = mode.run("call", mode.lib, *args, "--scratch-limit", "64M", "--json")
        assert r.returncode == 1, (args, r.stdout[-300:], r.stderr[-1000:])
        doc = json.loads(r.stdout)
        assert "scratch limit exceeded (--scratch-limit 64M)" in doc["error"]["message"]
        assert ("scratch-tmpfs" in doc["sandbox"]["applied"]) == ns
        assert not mode.left()


def test_scratch_control_large_limit(tmp_path):
    mode = Mode("root", True, tmp_path)
    doc = mode.json("call", mode.lib, "deep_fill", "--int", "300", "--int", "96", "--int", "0",
                    "--scratch-limit", "512M")  # fmt: skip
    assert doc["result"] == 96
    doc = mode.json("call", mode.lib, "unlinked_fill", "--int", "3", "--int", "32", "--int", "0",
                    "--scratch-limit", "512M")  # fmt: skip
    assert doc["result"] == 96


@pytest.mark.parametrize("sandbox", ["sandbox", "no-sandbox"])
@pytest.mark.parametrize("wrap", [False, True], ids=["ns", "nons"])
def test_subreaper_does_not_hide_a_crash(tmp_path, sandbox, wrap):
    """A library that makes the zygote a child subreaper at load: the NULL
    dereference of a probe child is still a crash (SIGSEGV), not a hang.
    Under --no-sandbox the prctl works (the control) and the zygote clears
    it before each fork; sandboxed, seccomp refuses it."""
    flag = ["--no-sandbox"] if sandbox == "no-sandbox" else []
    r = unprivileged.run("call", subreaper(), "state", "--json", *flag, wrap=wrap)
    state = json.loads(r.stdout)["result"]
    assert state == (1 if flag else EPERM << 8), state
    r = unprivileged.run(
        "conform", "--json", "--timeout", "1", "--function", "bad", *flag, subreaper(), wrap=wrap
    )
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    crash = [x for x in doc["results"] if x["check"] == "no-crash" and x["status"] == "fail"]
    assert crash and "SIGSEGV" in crash[0]["message"], doc["results"]
    assert doc["elapsed_s"] < 20  # was 375 s: every probe waited timeout + 30 s


@pytest.mark.parametrize("mode", [*SOME, MODES[3]], indirect=True)
def test_what_cuda_needs_of_the_worker(mode):
    """Issue 27 item 3, what CI can see: /proc/self is the worker (getpid
    agrees: cuInit reads its own /proc), no address-space limit (cuInit
    fails with out-of-memory under 4 GiB of it), RLIMIT_DATA or a cgroup."""
    doc = mode.json("call", mode.lib, "proc_self")
    assert doc["result"] >> 32 == doc["result"] & 0xFFFFFFFF
    sb = doc["sandbox"]
    if not mode.wrap:
        assert {"pid-namespace", "mount-namespace"} <= set(sb["applied"]), sb
    doc = mode.json("call", mode.lib, "limits")
    address_space, data = doc["result"] >> 20, doc["result"] & 0xFFFFF
    assert address_space == 0xFFFFF  # unlimited
    assert data == (0xFFFFF if sb["memory_mechanism"] == "cgroup-v2" else 4096)
    if not mode.wrap:
        # the namespace's own procfs: its init's files are there to read
        assert mode.json("call", mode.lib, "read_path", "--str", "/proc/1/stat")["result"] == 0


def test_no_sandbox_keeps_cuda_view(tmp_path):
    """--no-sandbox keeps the PID namespace: with it, the fresh /proc."""
    mode = Mode("root", False, tmp_path)
    doc = mode.json("call", mode.lib, "proc_self", "--no-sandbox")
    assert doc["result"] >> 32 == doc["result"] & 0xFFFFFFFF
    assert "mount-namespace" in doc["sandbox"]["applied"]


def test_no_fresh_proc_means_no_pid_namespace(tmp_path):
    """Where the kernel refuses to mount a procfs (here: every mount), the
    worker gets no PID namespace rather than one under the host's /proc."""
    lib = escape()
    argv = [unprivileged.no_namespaces(), "--keep-namespaces", "--no-mount"]
    argv += [*unprivileged.tvmffi_argv(), "call", "--json", lib, "proc_self"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert doc["result"] >> 32 == doc["result"] & 0xFFFFFFFF
    sb = doc["sandbox"]
    assert {"pid-namespace", "mount-namespace"} <= set(sb["missing"]), sb
    assert "net-namespace" in sb["applied"]
    assert any("so no PID namespace either" in n for n in sb["notes"]), sb["notes"]


def test_zygote_refused_when_the_library_opens_a_gpu_at_load(tmp_path, monkeypatch):
    """CUDA does not survive fork: a library that opened a GPU device node
    while loading is probed without a zygote (each probe child of a zygote
    would inherit a context it cannot use)."""
    from tvmffi_cli.conform import workers

    node = tmp_path / "nvidia-standin"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    monkeypatch.setenv("TVMFFI_DEVICE_NODES", str(node))
    for opened in (False, True):
        w = workers.Worker(escape(), 5.0)
        w._w.env = {"ESCAPE_OPEN_ON_LOAD": str(node)} if opened else None
        try:
            w.start()
            ev = w.load()
            assert ev["ok"] and ev["zygote"] is (not opened), ev
            if opened:
                assert f"opened {node} while loading" in ev["zygote_refused"]
        finally:
            w.kill()


def test_pth_directories_are_not_readable(tmp_path, monkeypatch):
    """A directory a .pth file puts on sys.path (an editable install's
    project root, its .env beside) is not among the worker's read paths,
    forked or exec'd alike; what lies beneath the interpreter's prefixes is."""
    import sys

    from tvmffi_cli.sandbox import worker

    project = str(tmp_path / "project")
    inside = os.path.join(sys.prefix, "lib", "extra")
    monkeypatch.setattr(sys, "path", [*sys.path, project, inside])
    paths = worker.python_paths()
    assert project not in paths and inside in paths


def test_forged_type_index_is_a_failure_of_the_library(tmp_path):
    """A result no type describes is exit 1 (the library), not 2 (the user)."""
    mode = Mode("root", False, tmp_path)
    for index in ("63", "-5"):
        r = mode.run("call", mode.lib, "forged_type", "--int", index)
        assert r.returncode == 1, r.stderr
        assert "returned a value tvmffi cannot read" in r.stderr
        r = mode.run("bench", mode.lib, "forged_type", "--int", index)
        assert r.returncode == 1, r.stderr
