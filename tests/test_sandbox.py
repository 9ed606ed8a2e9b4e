"""Child-process containment: crashes (SIGSEGV, SIGABRT) and hangs become
exceptions in the parent, a persistent worker restarts after them, library
output never corrupts the reply pipe, and the introspect task's reply shape."""

import os
import statistics
import time

import pytest

import fixturebuild
from tvmffi_cli.errors import InputError
from tvmffi_cli.ffi import runtime
from tvmffi_cli.sandbox import process as sandbox

KITCHEN_DEFINES = ["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"]


def child_runtime():
    """Runtime for child processes: ours when complete, else the official one."""
    forced = os.environ.get("TVMFFI_TEST_RUNTIME")
    try:
        ours = fixturebuild.our_runtime()
    except InputError:
        ours = None
    if forced == "ours" or (forced != "official" and ours and runtime.exports_c_api(ours)):
        return ours
    official = fixturebuild.official_runtime()
    if official is None:
        pytest.skip("neither our runtime (incomplete) nor apache-tvm-ffi is available")
    return official


@pytest.fixture(scope="module")
def crashy(build_lib):
    return str(build_lib("c/crashy.c", headers="ours"))


@pytest.fixture(scope="module")
def worker():
    w = sandbox.Worker(runtime=child_runtime(), read_paths=[fixturebuild.BUILD])
    with w:
        yield w


def _call(crashy, func):
    return {"op": "call", "path": crashy, "func": func}


@pytest.mark.parametrize("func,sig", [("segv", "SIGSEGV"), ("abort", "SIGABRT")])
def test_crash_is_contained(crashy, func, sig):
    with pytest.raises(sandbox.ChildCrashed) as ei:
        sandbox.run_task(
            "sandbox.selftest", _call(crashy, func), timeout=30, runtime=child_runtime()
        )
    e = ei.value
    assert e.signal == sig and e.returncode < 0
    assert sig in str(e)


def test_hang_is_killed_at_timeout(crashy):
    t0 = time.monotonic()
    with pytest.raises(sandbox.ChildTimeout) as ei:
        sandbox.run_task(
            "sandbox.selftest", _call(crashy, "hang"), timeout=1.0, runtime=child_runtime()
        )
    assert ei.value.seconds == 1.0
    assert 1.0 <= time.monotonic() - t0 < 10


def test_persistent_worker_restarts_after_crash_and_hang(worker, crashy):
    first = worker.call("sandbox.selftest", {"op": "echo"})["boot"]
    assert worker.call("sandbox.selftest", {"op": "echo"})["boot"] == first  # same process
    with pytest.raises(sandbox.ChildCrashed):
        worker.call("sandbox.selftest", _call(crashy, "segv"), timeout=30)
    second = worker.call("sandbox.selftest", {"op": "echo", "x": 1})
    assert second["x"] == 1 and second["boot"] != first
    with pytest.raises(sandbox.ChildTimeout):
        worker.call("sandbox.selftest", _call(crashy, "hang"), timeout=0.5)
    third = worker.call("sandbox.selftest", {"op": "echo"})["boot"]
    assert third not in (first, second["boot"])


def test_persistent_worker_latency(worker):
    worker.call("sandbox.selftest", {"op": "echo"})  # started and warm
    times = []
    for i in range(30):
        t0 = time.perf_counter()
        assert worker.call("sandbox.selftest", {"op": "echo", "i": i})["i"] == i
        times.append(time.perf_counter() - t0)
    assert statistics.median(times) < 0.020


def test_library_stdout_cannot_corrupt_replies(worker, crashy):
    assert worker.call("sandbox.selftest", _call(crashy, "chatty"), timeout=30) == {"result": "7"}
    assert worker.call("sandbox.selftest", {"op": "print", "text": '{"ok": true}'}) == {
        "printed": True
    }
    # The relay of the library's output runs in its own thread: give it a moment.
    deadline = time.monotonic() + 10
    while '{"noise": true}' not in worker.stderr_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert '{"noise": true}' in worker.stderr_text()


def test_task_errors_come_back_typed(worker):
    with pytest.raises(InputError, match="^nope$"):
        worker.call("sandbox.selftest", {"op": "raise", "kind": "InputError", "message": "nope"})
    with pytest.raises(sandbox.WorkerError) as ei:
        worker.call("sandbox.selftest", {"op": "raise", "message": "bug"})
    assert "RuntimeError: bug" in str(ei.value) and "selftest.py" in ei.value.child_traceback
    with pytest.raises(sandbox.WorkerError, match="bad task name"):
        worker.call("../evil", {})


def test_signal_name():
    assert sandbox.signal_name(-11) == "SIGSEGV"
    assert sandbox.signal_name(-6) == "SIGABRT"
    assert sandbox.signal_name(0) is None and sandbox.signal_name(3) is None


def test_introspect_task_shape(build_lib, official_include):
    kitchen = build_lib(
        "cpp/kitchen.cc",
        headers="official",
        defines=KITCHEN_DEFINES,
        flags=["-Wno-unused-parameter"],
    )
    rep = sandbox.run_task(
        "inspect.task", {"path": str(kitchen)}, timeout=60, runtime=child_runtime()
    )
    assert set(rep) == {
        "functions",
        "globals",
        "global_info",
        "types",
        "module",
        "errors",
        "warnings",
        "cuda_devices",
    }
    assert rep["cuda_devices"] is None  # asked only for a library with CUDA code
    assert rep["errors"] == []
    # inspect/messages.Introspected: a list of FunctionInfo objects
    fns = {f["name"]: f for f in rep["functions"]}
    assert len(fns) == len(rep["functions"])
    assert "add" in fns and "point_norm" in fns
    assert not any(n.startswith("_") for n in fns)
    add = fns["add"]
    assert set(add) == {"name", "metadata_raw", "metadata", "doc"}
    assert add["doc"] == "Add two integers.\n\nReturns a + b."
    assert add["metadata"]["type_schema"].startswith('{"type":"ffi.Function"')
    assert add["metadata_raw"].startswith('{"type_schema"')
    assert fns["greet"]["doc"] is None
    assert rep["globals"] == ["kitchen.add", "kitchen.greet", "kitchen.make_point"]
    (point,) = rep["types"]
    assert point["type_key"] == "kitchen.Point" and point["type_index"] >= 128
    assert point["parent_type_key"] == "ffi.Object"
    assert [f["name"] for f in point["fields"]] == ["x", "y", "label"]
    assert point["fields"][0]["doc"] == "horizontal position"
    assert point["fields"][0]["static_type_index"] == 1  # int
    # The C++ headers register String fields as Any (-1): they may hold a small string.
    assert point["fields"][2]["static_type_index"] == -1
    if rep["module"] is not None:  # only our runtime describes modules
        assert rep["module"]["kind"] == "library"


def test_introspect_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        sandbox.run_task(
            "inspect.task", {"path": str(tmp_path / "nope.so")}, timeout=30, runtime=child_runtime()
        )


def test_relative_library_path_is_found(crashy, monkeypatch):
    """The worker runs in its own scratch directory: a path relative to the
    caller's working directory (`tvmffi inspect build/lib.so`) must still name
    the library (README commands use such paths)."""
    monkeypatch.chdir(os.path.dirname(crashy))
    rep = sandbox.run_task(
        "inspect.task", {"path": os.path.basename(crashy)}, timeout=30, runtime=child_runtime()
    )
    assert rep["errors"] == [] and "segv" in {f["name"] for f in rep["functions"]}


def _blocked(native_id):
    import re

    with open(f"/proc/self/task/{native_id}/status") as f:
        return int(re.search(r"SigBlk:\s*([0-9a-f]+)", f.read()).group(1), 16)


def test_helper_threads_leave_ctrl_c_to_the_main_thread(worker):
    """A SIGINT the kernel hands to a helper thread (output relay, scratch
    watch) would not wake a main thread asleep in a select(): Ctrl-C would
    wait for the call's timeout (sandbox/threads.py). Each helper blocks it."""
    import signal
    import threading

    worker.call("sandbox.selftest", {"op": "echo"})
    helpers = [t for t in threading.enumerate() if t.name.startswith("tvmffi-")]
    assert {t.name for t in helpers} >= {"tvmffi-lib-output", "tvmffi-scratch-watch"}
    bit = 1 << (signal.SIGINT - 1)
    for t in helpers:
        assert _blocked(t.native_id) & bit, t.name
    assert not _blocked(threading.main_thread().native_id) & bit


@pytest.mark.parametrize("start", ["fork", "exec"])
def test_a_worker_started_from_a_helper_thread_blocks_no_signal(start, monkeypatch):
    """conform starts workers from helper threads, whose SIGINT is blocked; a
    worker (and the library in it) starts with no signal blocked either way."""
    import threading

    from tvmffi_cli.sandbox import spawn
    from tvmffi_cli.sandbox.threads import leave_interrupts_to_main

    if start == "exec":
        monkeypatch.setenv(spawn.EXEC_ENV, "1")
    box = {}

    def go():
        leave_interrupts_to_main()
        w = sandbox.Worker(runtime=child_runtime(), read_paths=[fixturebuild.BUILD])
        with w:
            box["state"] = w.call("sandbox.selftest", {"op": "state"})

    t = threading.Thread(target=go)
    t.start()
    t.join(60)
    assert box["state"]["blocked"] == []
