"""Unit tests of conform's pure parts: signatures, verdicts from observed facts,
result model. No library runs here."""

import pytest

from tvmffi_cli.conform import checks_probe, sigs
from tvmffi_cli.conform.checks_probe import FunctionFacts
from tvmffi_cli.conform.results import Report, Result

SCHEMA = (
    '{"type":"ffi.Function","named_args":{"return":[{"type":"float"}],"params":'
    '[{"type":"float"},{"type":"Optional","args":[{"type":"float"}]}]}}'
)


def T(key, *args):
    return {"type": key, "args": list(args)}


def test_parse_type_schema_named_args():
    s = sigs.parse_type_schema(SCHEMA)
    assert [sigs.type_str(p) for p in s.params] == ["float", "Optional[float]"]
    assert sigs.type_str(s.ret) == "float"


def test_parse_type_schema_positional_form():
    s = sigs.parse_type_schema({"type": "ffi.Function", "args": [T("int"), T("str")]})
    assert sigs.type_str(s.ret) == "int" and [p["type"] for p in s.params] == ["ffi.String"]


@pytest.mark.parametrize("text", ['{"type": 5}', '{"args": []}', "[1]", '{"type":"int"}', "{nope"])
def test_parse_type_schema_rejects(text):
    with pytest.raises(sigs.SchemaError):
        sigs.parse_type_schema(text)


@pytest.mark.parametrize(
    "t, wrong",
    [
        (T("int"), sigs.K_STR),
        (T("float"), sigs.K_STR),
        (T("bool"), sigs.K_STR),
        (T("ffi.String"), sigs.K_INT),
        (T("DataType"), sigs.K_INT),  # a string may name a dtype
        (T("ffi.Array", T("int")), sigs.K_STR),
        (T("Optional", T("int")), sigs.K_STR),
        (T("Any"), None),
        (T("Variant", T("int"), T("ffi.String")), None),
        (T("my.RegisteredType"), sigs.K_INT),
    ],
)
def test_wrong_kind_is_certainly_rejected(t, wrong):
    assert sigs.wrong_kind(t) == wrong


@pytest.mark.parametrize(
    "t, ti, ok",
    [
        (T("int"), 1, True),
        (T("int"), 3, False),
        (T("ffi.String"), 11, True),
        (T("ffi.String"), 65, True),
        (T("Optional", T("int")), 0, True),
        (T("Optional", T("int")), 3, False),
        (T("Any"), 70, True),
        (T("my.Type"), 200, True),
        (T("my.Type"), 1, False),
    ],
)
def test_return_ok(t, ti, ok):
    assert sigs.return_ok(t, ti) is ok


def facts(**obs):
    f = FunctionFacts("f", ())
    f.plan = list(obs)
    f.obs = {k.replace("_", "-"): v for k, v in obs.items()}
    return f


def ok_call(**kw):
    d = {
        "rc": 0,
        "error": None,
        "stale_error": None,
        "result_problems": [],
        "args_changed": False,
        "refcounts": [],
        "live_delta": 0,
        "result_type_index": 1,
    }
    d.update(kw)
    return d


def test_leak_on_first_call_only_is_a_cache():
    f = facts(zero_args=ok_call(live_delta=1, live_delta_repeat=0))
    assert checks_probe.check_no_leak(f).status == "pass"
    f = facts(zero_args=ok_call(live_delta=1, live_delta_repeat=1))
    r = checks_probe.check_no_leak(f)
    assert r.status == "fail" and "+1 live object(s)" in r.message


def test_no_leak_without_instrumentation_is_skipped():
    f = facts(zero_args=ok_call(live_delta=None))
    assert checks_probe.check_no_leak(f).status == "skip"


def test_minus_two_needs_a_frontend_signal():
    f = facts(zero_args=ok_call(rc=-2))
    r = checks_probe.check_error_protocol(f)
    assert r.status == "fail" and "-2" in r.message


def test_error_with_empty_kind():
    f = facts(zero_args=ok_call(rc=-1, error={"kind": "", "message": "x"}))
    assert "kind is empty" in checks_probe.check_error_protocol(f).message


def test_crash_attribution():
    f = facts(zero_args=ok_call())
    f.crashes = {"zero-args": {"signal": "SIGSEGV", "hang": False, "oob": False}}
    del f.obs["zero-args"]
    # Not explained by an out-of-bounds read: a plain crash.
    assert checks_probe.check_no_crash(f).status == "fail"
    assert checks_probe.check_arg_bounds(f).status == "pass"
    f.crashes["zero-args"]["oob"] = True
    assert checks_probe.check_no_crash(f).status == "pass"
    assert checks_probe.check_arg_bounds(f).status == "fail"


def test_threads_compare_with_the_single_call():
    f = facts(
        valid=ok_call(fingerprint="a"), threads={"calls": [{"rc": 0, "fingerprint": "a"}] * 4}
    )
    assert checks_probe.check_thread_safety(f).status == "pass"
    f.obs["threads"]["calls"] = [{"rc": 0, "fingerprint": "b"}] * 4
    assert checks_probe.check_thread_safety(f).status == "fail"


def test_report_passes_on_warnings_only():
    rs = [Result("thread-safety", "f", "fail", "racy"), Result("no-crash", "f", "pass")]
    assert Report("x.so", rs, ["f"]).exit_code() == 0
    rs.append(Result("no-crash", "g", "error", "worker failed"))
    assert Report("x.so", rs, ["f", "g"]).exit_code() == 1


def test_readable_answers_right_past_the_pipe_capacity():
    """Readable leaves bytes in its pipe between checks; 100k checks (far more
    than a pipe holds) keep answering, and unmapped or guard memory is not readable."""
    import ctypes
    import mmap

    from tvmffi_cli.conform.probe_memory import GuardArena, Readable

    rd = Readable()
    buf = ctypes.create_string_buffer(64)
    addr = ctypes.addressof(buf)
    assert all(rd(addr, 64) for _ in range(100_000))
    arena = GuardArena()
    end = arena.place(b"\0" * 16, True) + 16  # the first byte of the guard page
    assert not rd(end, 1) and rd(end - 16, 16) and not rd(end - 16, 17)
    assert not rd(0, 1) and not rd(16, 8) and not rd(addr, -1)
    assert rd(addr, 64)  # still right after failures
    assert rd(end - mmap.PAGESIZE, 1)


def test_argument_kept_once_is_a_cache_kept_every_call_a_leak():
    # Kept on the first call, not again on a repeat: a cache (a note, no failure).
    f = facts(valid=ok_call(refcounts=[[2, 3]], refcounts_repeat=[[3, 3]]))
    r = checks_probe.check_arg_refcount(f)
    assert r.status == "pass" and "kept once" in r.message
    # One more reference on every call: a leak.
    f = facts(valid=ok_call(refcounts=[[2, 3]], refcounts_repeat=[[3, 4]]))
    r = checks_probe.check_arg_refcount(f)
    assert r.status == "fail" and "(2 -> 3), one more on a repeat call" in r.message
    # A released reference is never a cache.
    f = facts(valid=ok_call(refcounts=[[2, 1]], refcounts_repeat=[[2, 2]]))
    assert checks_probe.check_arg_refcount(f).status == "fail"


def test_result_with_extra_references_from_the_header():
    # Returned with 2 references, the library keeps one more on every call: a leak,
    # measured without the runtime's live-object count.
    f = facts(valid=ok_call(live_delta=None, result_refs=2, result_kept=1, result_leak=True))
    r = checks_probe.check_no_leak(f)
    assert r.status == "fail" and "extra strong reference" in r.message
    # Kept once (a cached result): passes with a note.
    f = facts(valid=ok_call(live_delta=None, result_refs=2, result_kept=1, result_leak=False))
    r = checks_probe.check_no_leak(f)
    assert r.status == "pass" and "cache" in r.message


def test_unsigned_global_crash_outside_the_guard_page_is_an_error():
    f = facts(zero_args=ok_call())
    f.is_global = True
    del f.obs["zero-args"]
    # A NULL dereference (the readable re-run crashed too): an error.
    f.crashes = {"zero-args": {"signal": "SIGSEGV", "hang": False, "oob": False}}
    r = {x.check: x for x in checks_probe.evaluate(f, {"no-crash", "arg-bounds"})}
    assert r["no-crash"].status == "fail" and r["no-crash"].severity == "error"
    # A read of args[0] in the guard page: a warning for a global without a signature.
    f.crashes["zero-args"]["oob"] = True
    r = {x.check: x for x in checks_probe.evaluate(f, {"no-crash", "arg-bounds"})}
    assert r["no-crash"].status == "pass"
    assert r["arg-bounds"].status == "fail" and r["arg-bounds"].severity == "warning"


def test_tensor_crashes_are_attributed():
    f = facts(valid=ok_call())
    f.plan = ["valid", "tensor:complex64", "tensor:offset"]
    # A fault that the padded re-run does not repeat: tensor-bounds, not no-crash.
    f.crashes = {"valid": {"signal": "SIGSEGV", "hang": False, "tensor_oob": True}}
    del f.obs["valid"]
    assert checks_probe.check_tensor_bounds(f).status == "fail"
    assert checks_probe.check_no_crash(f).status == "pass"
    # An abort on a dtype: no-crash, naming the dtype.
    f.crashes = {"tensor:complex64": {"signal": "SIGABRT", "hang": False, "output": "what(): x"}}
    r = checks_probe.check_no_crash(f)
    assert r.status == "fail" and "complex64 tensor" in r.message and r.output == "what(): x"
    # byte_offset ignored, and nothing else: an error, said in words.
    f.crashes = {"tensor:offset": {"signal": "SIGSEGV", "hang": False, "tensor_oob": True}}
    r = checks_probe.check_tensor_bounds(f)
    assert r.status == "fail" and r.severity == "error" and "ignores byte_offset" in r.message
    # Untyped: a crash in the signature search says nothing (guessed arguments),
    # on a variant of the signature it found it is a finding.
    f.crashes = {"objects:search": {"signal": "SIGABRT", "hang": False}}
    assert checks_probe.check_no_crash(f).status == "pass"
    f.crashes = {"tensor:complex64": {"signal": "SIGABRT", "hang": False}}
    assert checks_probe.check_no_crash(f).status == "fail"
    # Past a shorter tensor of mismatched shapes: tensor-shapes, not tensor-bounds.
    f.crashes = {"tensor:shrink:1": {"signal": "SIGSEGV", "hang": False, "tensor_oob": True}}
    assert checks_probe.check_tensor_bounds(f).status == "pass"
    assert checks_probe.check_no_crash(f).status == "pass"


def test_library_output_is_bounded_and_drops_the_worker_stack():
    from tvmffi_cli.conform.checks_crash import library_output

    tail = (
        "noise\n" * 50 + "terminate called\n  what():  boom\nFatal Python error: Aborted\n  File x"
    )
    out = library_output(tail)
    assert out.endswith("terminate called\n  what():  boom")
    assert "Fatal Python" not in out and len(out.splitlines()) == 12


def test_fault_line_of_the_worker():
    from tvmffi_cli.conform.checks_crash import fault_of, library_output

    tail = "lib says hi\n\ntvmffi-probe-fault: 0x7f0000001000 args-guard\nFatal Python error: x"
    assert fault_of(tail) == "args-guard"
    assert fault_of("tvmffi-probe-fault: 0x0 elsewhere\n") == "elsewhere"
    assert fault_of("no marker") is None
    assert library_output(tail) == "lib says hi"


class _Kept:
    """A probe stand-in whose callee keeps (leaks) its object argument, or
    releases it only when the calling thread's TLS destructors run."""

    def __init__(self, released_at_exit):
        self.count = 1
        self.released_at_exit = released_at_exit

    def _objects(self, raws):
        return [1]

    def strong(self, o):
        return self.count

    def call(self, fn, raws, guarded):
        before = self.count
        self.count += 1
        return {"rc": 0, "refcounts": [[before, self.count]]}


@pytest.mark.parametrize("released", [False, True])
def test_thread_release_waits_for_the_thread_not_a_deadline(monkeypatch, released):
    # A leak was judged after 0.5 s of polling per probe step (~250 sleeps;
    # 70 s for conform/untyped.c's keeps_ref); the thread's end is enough.
    import threading

    from tvmffi_cli.conform import probe_extra

    p = _Kept(released)
    sleeps = []
    real_sleep = probe_extra.time.sleep
    monkeypatch.setattr(probe_extra.time, "sleep", lambda s: (sleeps.append(s), real_sleep(s)))
    if released:
        # a context stack: the reference goes when the thread's TLS ends
        real = threading.Thread.join

        def join(t, *a):
            real(t, *a)
            p.count -= 1

        monkeypatch.setattr(threading.Thread, "join", join)
    got = probe_extra.thread_released(p, None, [b""], False)
    assert got == [released]
    assert len(sleeps) < 100, len(sleeps)  # the old deadline took 250
