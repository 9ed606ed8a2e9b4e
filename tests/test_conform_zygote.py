"""Issue 22 item 2: conform's worker loads the library once and forks a probe
child per crash (sandbox/zygote.py, conform/workers.py). The fixture
fixtures/conform/zygote.c logs each load and has functions that crash in
every way a probe child can end (signals, exit, memory, a hang, a forged
status line). Verdicts must be exactly those of the worker-per-crash path
(TVMFFI_CONFORM_ZYGOTE=0), with the library loaded once per worker; a library
that starts a thread at load takes that path by itself."""

import functools
import json
import os
import shutil
import tempfile

import pytest

import fixturebuild
import unprivileged

#: Functions that crash on the zero-args probe, and how the report says it.
CRASHES = {
    "crash_abort": "zero-args: killed by SIGABRT",
    "crash_exit_3": "zero-args: killed by exit status 3",
    "crash_forges_status": "zero-args: killed by tampered channel",
    "crash_memory_hog": "zero-args: killed by SIGSEGV",
    "crash_null_write": "zero-args: killed by SIGSEGV",
    "crash_sigkill": "zero-args: killed by SIGKILL",
}


@functools.cache
def library(thread=False):
    if thread:
        return fixturebuild.build(
            "conform/zygote.c", defines=("START_THREAD",), flags=("-pthread",)
        )
    return fixturebuild.build("conform/zygote.c")


def conform(tmp_path, lib, *extra, zygote=True, user="root", wrap=False):
    """(results by (check, function), number of loads, document) of one
    conform run, as `user`, optionally without namespaces (the wrapper)."""
    if user != "root":
        why = unprivileged.unavailable(user)
        if why:
            pytest.skip(why)
    # a directory every user may write: the library logs its loads there
    shared = tempfile.mkdtemp(prefix="zygote-")
    os.chmod(shared, 0o777)
    try:
        log = os.path.join(shared, "loads")
        r = unprivileged.run(
            "conform",
            # (crash_memory_hog fills what the limit leaves in its 2 s)
            *("-j", "1", "--timeout", "2", "--memory-limit", "256M"),
            *("--env", f"ZYGOTE_TEST_LOG={log}", "--allow-write", shared, "--json"),
            unprivileged.shared_copy(lib, os.path.join(shared, "lib")) if user != "root" else lib,
            *extra,
            user=user,
            wrap=wrap,
            env={"TVMFFI_CONFORM_ZYGOTE": "1" if zygote else "0"},
            home=os.path.join(shared, "home") if user != "root" else None,
            timeout=300,
        )
        assert r.returncode == 1, r.stderr  # the crashes fail no-crash
        doc = json.loads(r.stdout)
        loads = len(open(log).read().splitlines()) if os.path.exists(log) else 0
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    results = {(x["check"], x.get("function")): (x["status"], x["message"]) for x in doc["results"]}
    return results, loads, doc


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The worker-per-crash path's verdicts on the fixture."""
    results, loads, _ = conform(tmp_path_factory.mktemp("ref"), library(), zygote=False)
    # a new worker, and so a new load, after every crash and the hang
    assert loads == 1 + len(CRASHES) + 2  # + crash_reads_arg0, crash_hangs
    return results


def test_reference_verdicts(reference):
    for name, msg in CRASHES.items():
        assert reference[("no-crash", name)] == ("fail", msg)
    assert reference[("no-hang", "crash_hangs")] == ("fail", "zero-args: no return within 2 s")
    assert reference[("arg-bounds", "crash_reads_arg0")][0] == "fail"
    assert reference[("no-crash", "fine_add_one")][0] == "pass"


def test_same_verdicts_and_one_load_per_worker(tmp_path, reference):
    results, loads, _ = conform(tmp_path, library())
    assert results == reference
    # One worker for everything but the forged status line: bytes on the
    # channel that are not tvmffi's end the whole worker (the safe path).
    assert loads == 2


def _loads_expected(doc):
    """Landlock's signal scope lets a probe child signal itself without a
    PID namespace; a kernel without it takes the worker-per-crash path."""
    applied = doc["sandbox"]["applied"]
    if "pid-namespace" in applied or "landlock-scope" in applied:
        return 2
    return 1 + len(CRASHES) + 2


@pytest.mark.parametrize(
    "user,wrap",
    [("root", True), ("nobody", False), ("nobody", True)],
    ids=["root-no-namespaces", "nobody-namespaces", "nobody-no-namespaces"],
)
def test_same_verdicts_as_each_user_with_and_without_namespaces(tmp_path, reference, user, wrap):
    # (root with namespaces: test_same_verdicts_and_one_load_per_worker)
    results, loads, doc = conform(tmp_path, library(), user=user, wrap=wrap)
    if wrap:
        assert "pid-namespace" in doc["sandbox"]["missing"]
    assert results == reference
    assert loads == _loads_expected(doc)


def test_same_verdicts_without_sandbox(tmp_path, reference):
    results, loads, doc = conform(tmp_path, library(), "--no-sandbox")
    assert not doc["sandbox"]["enabled"]
    assert results == reference
    assert loads == 2


def test_thread_at_load_takes_the_worker_per_crash_path(tmp_path, reference):
    results, loads, _ = conform(tmp_path, library(thread=True))
    assert results == reference
    assert loads == 1 + len(CRASHES) + 2


def test_zygote_refusal_names_the_thread():
    from tvmffi_cli.conform import workers

    w = workers.Worker(str(library(thread=True)), 5.0)
    try:
        w.start()
        ev = w.load()
        assert ev["ok"] and ev["zygote"] is False and not w.zygote
        assert "1 other thread(s) after load" in ev["zygote_refused"]
    finally:
        w.kill()


def test_probe_child_verdict_comes_from_the_supervisor():
    """The probe child's end is the record the supervisor wrote: its pid,
    wait status and peak RSS, whatever the child or the zygote said."""
    from tvmffi_cli.conform import workers
    from tvmffi_cli.sandbox import zygote

    w = workers.Worker(str(library()), 5.0)
    try:
        w.start()
        assert w.load()["zygote"] is True and w.needs_child()
        w.fork_child()
        sb = w._w
        first = sb.child
        assert first is not None and first.pid > 2  # not the init, not the zygote
        # A record of another pid changes nothing about this child.
        sb.status._parse(b"c 99999 0 0".split())
        w.send({"op": "probe", "name": "crash_sigkill", "getters": [], "timeout": 5.0})
        with pytest.raises(workers.WorkerDied) as died:
            for _ in w.events(10):
                pass
        assert died.value.signal_name == "SIGKILL" and died.value.zygote_lives
        assert sb.child is None and w.alive()
        w.fork_child()
        assert sb.child is not None and sb.child.pid != first.pid
        # The forged record of the other pid is still unclaimed.
        assert sb.status.child(99999) == (0, 0)
        assert zygote.end_child(sb, 0.2) is None  # the new child lives
        status = w.stop(5.0)
        assert status == 0
    finally:
        w.kill()


def test_memory_verdict_of_a_probe_child():
    """A probe child that dies by a signal after using half the memory limit
    is a memory-limit death, from the supervisor's peak RSS."""
    from tvmffi_cli.sandbox import failures, process, zygote

    w = process.Worker(memory_limit=1 << 30)
    child = zygote.Child(pid=5, output_mark=0, fault_mark=0)
    big = zygote.child_death(w, child, (11, 600 << 10))  # SIGSEGV, 600 MiB
    assert isinstance(big, failures.MemoryLimitExceeded) and big.probe_child
    small = zygote.child_death(w, child, (11, 10 << 10))
    assert type(small) is failures.ChildCrashed and small.signal == "SIGSEGV"
    exited = zygote.child_death(w, child, (3 << 8, 10 << 10))
    assert exited.signal is None and exited.returncode == 3


def test_refusals(monkeypatch):
    from tvmffi_cli.sandbox import zygote

    monkeypatch.setattr(zygote, "order_fd", -1)
    assert zygote.refusal() == "no order socket"
    monkeypatch.setattr(zygote, "order_fd", 99)
    monkeypatch.setattr(zygote, "applied", ("die-with-parent",))
    assert "supervisor" in zygote.refusal()
    monkeypatch.setattr(zygote, "applied", ("subreaper", "seccomp", "landlock-fs"))
    assert "signal itself" in zygote.refusal()
    monkeypatch.setattr(zygote, "applied", ("subreaper", "seccomp", "pid-namespace"))
    monkeypatch.setattr(zygote, "_threads", lambda: 3)
    assert zygote.refusal() == "2 other thread(s) after load: a fork would copy their locks mid-use"
    monkeypatch.setattr(zygote, "_threads", lambda: 1)
    assert zygote.refusal() is None
    monkeypatch.setattr(zygote, "applied", ("subreaper", "seccomp", "landlock-scope"))
    assert zygote.refusal() is None
    monkeypatch.setattr(zygote, "applied", ("subreaper",))  # --no-sandbox: no seccomp
    assert zygote.refusal() is None


def test_a_zygote_that_cannot_fork_is_replaced_by_a_worker_serving_itself(monkeypatch):
    from tvmffi_cli.conform.prober import Prober
    from tvmffi_cli.sandbox import zygote

    def refuse(w):
        raise zygote.ZygoteLost("no fork here")

    monkeypatch.setattr(zygote, "spawn", refuse)
    p = Prober(str(library()), 5.0)
    try:
        f = p.probe("crash_abort", ("metadata",), False)
        assert f.crashes["zero-args"]["signal"] == "SIGABRT"
        assert f.obs["valid"]["rc"] == 0
        assert p.worker is not None and not p.worker.zygote  # the fallback served
        assert p.probe("fine_add_one", ("metadata",), False).obs["valid"]["rc"] == 0
    finally:
        p.close()


ORDER_LOOP = r"""
import ctypes, os, socket, sys, time, types
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: the probe children are ours to reap
from tvmffi_cli.sandbox import kernel, zygote
if sys.argv[1] == "python":
    kernel.has_order_loop = lambda: False
theirs, ours = socket.socketpair()
z = os.fork()
if z == 0:  # the zygote
    ours.close()
    zygote.order_fd = theirs.fileno()
    chan = types.SimpleNamespace(recv_seq=-1, send_seq=-1)
    if zygote.serve_orders(chan):  # a probe child: its exit status says its counts
        os._exit(10 + chan.recv_seq + 2 * chan.send_seq)
    os._exit(0)
theirs.close()

def faults():
    return int(open(f"/proc/{z}/stat").read().rsplit(")", 1)[1].split()[7])

def spares():
    kids = []
    for d in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if d.isdigit() and int(stat[1]) == os.getpid() and int(d) != z and stat[0] != "Z":
            kids.append(int(d))
    return kids

for k in range(41):
    if k == 1:
        before = faults()  # after the first order: the loop's own start-up is done
    if k == 20 and sys.argv[1] == "c":
        # The child forked ahead dies waiting: the order goes to a new one.
        for _ in range(500):  # it is forked right after the last answer
            found = spares()
            if found:
                break
            time.sleep(0.01)
        (spare,) = found
        os.kill(spare, 9)
        os.waitpid(spare, 0)
    ours.sendall(zygote.ORDER.pack(k, k + 1))
    (child,) = zygote.ANSWER.unpack(ours.recv(4))
    _, status = os.waitpid(child, 0)  # reparented to this subreaper
    assert os.waitstatus_to_exitcode(status) == 10 + k + 2 * (k + 1), (k, status)
print("faults per order", (faults() - before) / 40)
ours.close()
_, status = os.waitpid(z, 0)
assert os.waitstatus_to_exitcode(status) == 0
while True:  # the last child forked ahead ends without an order, quietly
    try:
        _, status = os.wait()
    except ChildProcessError:
        break
    assert os.waitstatus_to_exitcode(status) == 0
"""


@pytest.mark.parametrize("loop", ["c", "python"])
def test_order_loop_forks_a_child_per_order_with_its_counts(loop):
    """Each order gets one probe child, answered by its pid, that resumes the
    main lane from the order's counts; the zygote exits when the orders end.
    The C loop forks each child ahead of its order (a child that died
    waiting is replaced) and runs no Python in the zygote between forks: it
    writes (and so copies, the child sharing them) a handful of pages per
    order where the Python loop wrote ~200."""
    import subprocess
    import sys

    from tvmffi_cli.sandbox import kernel

    if loop == "c" and not kernel.has_order_loop():
        pytest.fail("the sandbox helper lacks tvmffi_sandbox_zygote_serve")
    r = subprocess.run(
        [sys.executable, "-c", ORDER_LOOP, loop], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    per_order = float(r.stdout.split()[-1])
    if loop == "c":
        assert per_order < 20, r.stdout
    else:
        assert per_order > 20, r.stdout  # the measure sees the Python loop's pages
