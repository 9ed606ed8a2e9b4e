"""The cgroup v2 memory mechanism (sandbox/cgroup.py, issue 30 item 3). No
machine here delegates a cgroup v2 with the memory controller, so the
kernel's side (memory.max enforced, the OOM kill) is not exercised: these
tests check tvmffi's side with a stand-in directory (which cgroup is used,
that the worker's init joins it before the worker exists and the worker then
has no RLIMIT_DATA, that an OOM kill the cgroup reports is a memory verdict).
On a machine with a delegated cgroup (TVMFFI_CGROUP), test_sandbox_escape.py's
memory cases run through the real one (their JSON says cgroup-v2)."""

import os

import pytest

import fixturebuild
from tvmffi_cli.sandbox import cgroup, failures, process


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A stand-in cgroup directory with memory and pids delegated."""
    base = tmp_path / "delegated"
    base.mkdir()
    (base / "cgroup.subtree_control").write_text("cpu memory pids\n")
    monkeypatch.setenv(cgroup.ENV, str(base))
    monkeypatch.setattr(cgroup, "_found", [])
    return base


def test_find_takes_a_delegated_directory_only(fake, monkeypatch):
    assert cgroup.find() == str(fake)
    (fake / "cgroup.subtree_control").write_text("cpu memory\n")  # no pids
    monkeypatch.setattr(cgroup, "_found", [])
    assert cgroup.find() is None


def test_events_and_peak(fake):
    cg = cgroup.Cgroup(str(fake), -1)
    (fake / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 2\n")
    (fake / "memory.peak").write_text("123456789\n")
    assert (cg.oom_kills(), cg.limit_hits(), cg.peak()) == (2, 7, 123456789)


def test_worker_joins_the_cgroup_and_loses_rlimit_data(fake, tmp_path, monkeypatch):
    lib = str(fixturebuild.build("hostile/escape.c"))
    crash = str(fixturebuild.build("hostile/subreaper.c"))
    made = []

    def make(limit, tasks):
        d = fake / f"tvmffi-{len(made)}"
        d.mkdir()
        (d / "memory.max").write_text(str(limit))
        fd = os.open(d / "cgroup.procs", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        made.append(d)
        return cgroup.Cgroup(str(d), fd)

    monkeypatch.setattr(cgroup, "make", make)
    w = process.Worker(memory_limit=1 << 30, read_paths=[lib, crash])
    try:
        w.start()
        assert w.sandbox.memory_mechanism == "cgroup-v2"
        # The init wrote "0" (itself) before it forked the worker.
        assert (made[0] / "cgroup.procs").read_text() == "0"
        got = w.call("sandbox.selftest", {"op": "call", "path": lib, "func": "limits"}, 30)
        assert int(got["result"]) & 0xFFFFF == 0xFFFFF  # no RLIMIT_DATA: memory.max bounds it
        # A death while the cgroup reports an OOM kill is the memory limit.
        (made[0] / "memory.events").write_text("max 3\noom_kill 1\n")
        (made[0] / "memory.peak").write_text(str(1 << 30))
        with pytest.raises(failures.MemoryLimitExceeded) as e:
            w.call("sandbox.selftest", {"op": "call", "path": crash, "func": "bad"}, 30)
        assert e.value.tree and e.value.peak_kb == 1 << 20
    finally:
        w.kill()
    # At the end tvmffi killed whatever was left in it, then removed it
    # (a stand-in directory holds files, so it stays).
    assert (made[0] / "cgroup.kill").read_text() == "1"
