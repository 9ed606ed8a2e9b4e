"""inspect/loads.py run_all: range loads side by side in forked helpers, or
one after the other here when this process runs other threads. The jobs
here are plain functions (no library is loaded: test_diff.py and
test_runtime_ranges.py load real ones); ~1 s."""

import json
import os
import subprocess
import sys
import threading

from tvmffi_cli.inspect import loads
from tvmffi_cli.inspect.loads import FAILS, LOADS, NOT_CHECKED, ReleaseLoad


def pid_of(release):
    """A job: says which process ran it."""
    return ReleaseLoad(release, LOADS, str(os.getpid()))


def dies(release):
    os._exit(3)


def raises(release):
    raise RuntimeError("a bug")


def _plan():
    """Jobs a, b, c, d; "a" makes "a2" necessary; "b" waits (None) until a
    job has ended, as diff's first fetch makes the others wait."""
    ended = []
    asked = []

    def launch(job):
        asked.append(job)
        if job == "b" and not ended:
            return None
        if job == "c":
            return ReleaseLoad(job, FAILS, "known")  # no helper
        if job == "d":
            return dies, (job,)
        if job == "e":
            return raises, (job,)
        return pid_of, (job,)

    got = {}

    def done(job, x):
        ended.append(job)
        got[job] = x
        return ["a2"] if job == "a" else []

    return launch, done, got, asked


DRIVER = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import test_range_loads as t
from tvmffi_cli.inspect import loads
launch, done, got, asked = t._plan()
loads.run_all(["a", "b", "c", "d", "e"], launch, done, width=2)
print(json.dumps({"parent": os.getpid(), "asked": asked,
                  "got": {k: v.to_json() for k, v in got.items()}}))
"""


def _check(got, parent, forked):
    assert set(got) == {"a", "a2", "b", "c", "d", "e"}
    for job in ("a", "a2", "b"):
        assert got[job]["status"] == LOADS
        assert (got[job]["message"] != str(parent)) == forked
    assert got["c"] == {"release": "c", "status": FAILS, "message": "known"}
    assert got["e"]["status"] == NOT_CHECKED
    assert got["e"]["message"] == "the load failed in tvmffi (RuntimeError: a bug)"


def test_side_by_side_in_helpers():
    # a process of its own: pytest-xdist's worker runs a second thread
    r = subprocess.run(
        [sys.executable, "-c", DRIVER, os.path.dirname(__file__)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    got = doc["got"]
    _check(got, doc["parent"], forked=True)
    # a helper that dies without answering is a release not checked
    assert got["d"] == {
        "release": "",
        "status": NOT_CHECKED,
        "message": "the helper process that loads it ended without an answer",
    }
    # "b" was asked again once a job had ended
    assert doc["asked"].count("b") == 2


def test_one_after_the_other_when_this_process_runs_threads():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="not-ours")
    t.start()
    try:
        assert loads.may_fork() is False
        launch, done, got, _asked = _plan()

        def no_death(job):  # in this process a job that exits would end pytest
            return ReleaseLoad(job, LOADS, str(os.getpid())) if job == "d" else launch(job)

        loads.run_all(["a", "b", "c", "d", "e"], no_death, done, width=2)
    finally:
        stop.set()
        t.join()
    _check({k: v.to_json() for k, v in got.items()}, os.getpid(), forked=False)
