"""Issue 28 items 1 and 2: a function's verdict does not depend on what was
probed before it. fixtures/conform/isolation.c plants state that used to
travel between functions (a flag one function sets and another trips on, an
object freed by a function that hands back a borrowed argument, a counter,
a fork that comes back into the probe), and functions that hang."""

import functools

import pytest

import fixturebuild
from test_conform import conform_json


@functools.cache
def library():
    return fixturebuild.build("conform/isolation.c")


def verdicts(doc, functions=None):
    """(check, function) -> (status, severity, message) of the functions' results."""
    return {
        (x["check"], x["function"]): (x["status"], x["severity"], x["message"])
        for x in doc["results"]
        if x["function"] is not None and (functions is None or x["function"] in functions)
    }


@pytest.fixture(scope="module")
def run_j1():
    return conform_json(library(), "-j", "1", "--timeout", "2")[1]


def test_state_a_function_leaves_does_not_reach_the_next(run_j1):
    # trips_on_poison crashes in a process where poisons ran; at -j 1 one
    # worker probes both, poisons first (exports in name order)
    rows = verdicts(run_j1, {"trips_on_poison", "poisons"})
    assert rows[("no-crash", "trips_on_poison")][0] == "pass"
    assert rows[("no-crash", "poisons")][0] == "pass"
    assert run_j1["isolation"] == {"per_function": True, "reason": None}


def test_a_borrowed_result_is_caught_on_its_function_and_harms_no_other(run_j1):
    rows = verdicts(run_j1)
    status, severity, msg = rows[("result-invariants", "returns_borrowed")]
    assert (status, severity) == ("fail", "error")
    assert "the result is object argument 0 itself, returned without a reference" in msg
    # one sentence, however many calls showed it
    assert msg.count("returned without a reference") == 1 and "more)" in msg
    # the probe's shared objects survived: the next function sees live objects
    bad = {k for k, v in rows.items() if k[1] == "zz_good" and v[0] in ("fail", "error")}
    assert not bad, bad


def test_borrowed_result_then_a_good_function_in_one_worker():
    # the reproducer: two --function flags, -j 1
    _r, doc = conform_json(
        library(), "-j", "1", "--function", "returns_borrowed", "--function", "zz_good"
    )
    rows = verdicts(doc)
    status, _sev, msg = rows[("result-invariants", "returns_borrowed")]
    # named for what it is, not for the freed object's garbage it leaves
    assert status == "fail" and "object argument 0 itself" in msg, msg
    assert "type index" not in msg
    assert all(v[0] != "fail" for k, v in rows.items() if k[1] == "zz_good")


def test_a_crash_that_needs_earlier_calls_says_so(run_j1):
    rows = verdicts(run_j1, {"second_call_crashes"})
    status, _sev, msg = rows[("no-crash", "second_call_crashes")]
    assert status == "fail"
    assert "only after earlier calls of the function in the same process" in msg
    assert "called alone it returns" in msg
    # one clause per cause: the steps after the first are named, not described again
    assert msg.count("called alone it returns") == 1
    # and no tensor-bounds blame: the crash is not the tensor's
    assert rows[("tensor-bounds", "second_call_crashes")][0] != "fail"
    res = next(
        x
        for x in run_j1["results"]
        if x["check"] == "no-crash" and x["function"] == "second_call_crashes"
    )
    assert res["fix"].startswith("The crash needs earlier calls")
    assert "reproduce" in res and res["reproduce"].split()[1] == "conform"


def test_a_forked_process_back_in_the_probe_changes_nothing(run_j1):
    rows = verdicts(run_j1, {"forks"})
    assert rows[("no-crash", "forks")][0] == "pass"
    assert rows[("thread-safety", "forks")][0] == "pass"  # every step ran, none tampered


def test_one_hang_costs_one_timeout(run_j1):
    rows = verdicts(run_j1, {"hangs", "hangs_always"})
    # the call that hangs is the one finding; the function's other calls ran
    assert rows[("no-hang", "hangs")][:2] == ("fail", "error")
    assert rows[("no-hang", "hangs")][2] == "zero-args: no return within 2 s"
    assert rows[("valid-call", "hangs")][0] == "pass"
    # a function whose every call hangs: one timeout, then the others share
    # the budget and are skipped with the reason
    assert rows[("no-hang", "hangs_always")][2] == "zero-args: no return within 2 s"
    valid = rows[("valid-call", "hangs_always")]
    assert valid[0] == "skip" and "share 1 s after a hang" in valid[2], valid


def test_verdicts_are_the_same_whatever_the_order_and_jobs(run_j1):
    _r, j2 = conform_json(library(), "-j", "2", "--timeout", "2")
    assert verdicts(j2) == verdicts(run_j1)
    # a function checked alone gets the verdicts it gets among the others
    for fn in ("trips_on_poison", "second_call_crashes", "returns_borrowed"):
        _r, alone = conform_json(library(), "--function", fn, "--timeout", "2")
        assert verdicts(alone) == verdicts(run_j1, {fn}), fn


def test_a_registry_keeping_its_arguments_is_a_warning_naming_the_pattern(run_j1):
    rows = verdicts(run_j1, {"register_item", "keeps_item"})
    status, severity, msg = rows[("arg-refcount", "register_item")]
    assert (status, severity) == ("fail", "warning")
    assert "The pattern of a registry" in msg and "RegisterReducer" in msg
    # the same behaviour under another name stays an error
    assert rows[("arg-refcount", "keeps_item")][:2] == ("fail", "error")


def test_without_a_zygote_the_report_says_functions_shared_a_process(monkeypatch):
    monkeypatch.setenv("TVMFFI_CONFORM_ZYGOTE", "0")
    _r, doc = conform_json(library(), "--function", "poisons", "--function", "zz_good")
    assert doc["isolation"] == {"per_function": False, "reason": "TVMFFI_CONFORM_ZYGOTE=0"}


def test_the_probe_child_is_new_for_every_function():
    """One probe child per request: the zygote forks one per function."""
    from tvmffi_cli.conform.prober import Prober

    p = Prober(str(library()), 5.0)
    try:
        p.probe("poisons", ())
        first = p.worker
        assert first is not None and first.zygote and first.children == 1
        assert first._w.child is None  # it exited after its request, and was reaped
        f = p.probe("trips_on_poison", ())
        assert p.worker is first and first.children == 2
        assert not f.crashes
    finally:
        p.close()


def test_library_forks_does_not_leave_a_prober_behind():
    # (the same library, probed twice in one worker: nothing of the first
    # function's forked process answers for the second)
    from tvmffi_cli.conform.prober import Prober

    p = Prober(str(library()), 5.0)
    try:
        a = p.probe("forks", ())
        b = p.probe("zz_good", ())
        assert not a.crashes and not b.crashes
        assert b.plan == a.plan  # both untyped: the same plan, each its own
    finally:
        p.close()


def test_a_typed_global_s_signature_is_read_the_same_in_every_worker():
    """iso.sum60's metadata (over 1 KiB) was read after its string was
    released: in some workers its first bytes were the allocator's, the
    metadata no JSON, and the global probed as untyped."""
    from tvmffi_cli.conform.prober import Prober

    for _ in range(4):  # each Prober starts a worker of its own
        p = Prober(str(library()), 5.0)
        try:
            f = p.probe("iso.sum60", (), True)
        finally:
            p.close()
        assert f.params == ["int"] * 60, f.note
        assert f.obs["valid"]["rc"] == 0 and f.obs["valid"]["int_value"] == 120
