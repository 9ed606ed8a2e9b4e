"""The kernel-bug suite (issues 20 and 28): bugs C++ kernel authors write,
planted in fixtures/conform/kernel_bugs.cc with the official macros, next to
well-behaved functions (a deliberate cache among them). Built with and without
TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1: every bug is caught by its check in both
builds (without metadata the signature search finds what the kernels take),
every good function passes every check (no finding at all)."""

import xml.etree.ElementTree as ET

import pytest

from test_conform import conform, conform_json

#: function -> the check that must catch it (an error-severity failure).
BUGS = {
    "bug_leak_result": "no-leak",  # new Array(...) never released
    "bug_write_past": "tensor-bounds",  # writes x[n]
    "bug_read_past": "tensor-bounds",  # reads x[n]
    "bug_dtype_abort": "no-crash",  # std::terminate on complex64 (and other codes)
    "bug_keep_arg": "arg-refcount",  # keeps every Array<int64_t> argument
    "bug_no_error": "error-protocol",  # -1 without a raised error
    "bug_arity": "arg-bounds",  # reads args[1] unchecked
    "bug_throw": "no-crash",  # exception escaping extern "C"
    "kb.bug_null_deref": "no-crash",  # NULL deref, a global without a signature
    "kb.bug_keep_arg_global": "arg-refcount",  # a typed global (GlobalDef().def)
    # issue 28
    "bug_strides_2d": "tensor-strides",  # 2-d y = 2x over flat memory
    "bug_strides_sum": "tensor-strides",  # 1-d sum over flat memory
    "bug_no_shape_check": "tensor-shapes",  # y's length never checked
    "bug_int_numel": "element-count",  # int n = x.numel()
    "bug_heap_leak": "heap-growth",  # malloc per call, never freed
    "bug_icheck_dtype": "error-kind",  # ICHECK on the user's dtype
    "bug_byte_offset": "tensor-bounds",  # data_ptr() without byte_offset: an error now
    "bug_scale_past": "tensor-bounds",  # (tensor, float): found by search without metadata
    "bug_2d_read_past": "tensor-bounds",  # 2-d only: found by search without metadata
    "bug_half_as_float": "tensor-bounds",  # float16/bfloat16 read as float32
    "bug_int8_as_int32": "tensor-bounds",  # int8 read as int32
}
#: Bugs whose check is a warning by design (--strict or --threads fail them).
WARNS = {
    "bug_quadratic": "scaling",  # O(n^2) rank
    "bug_static_scratch": "thread-safety",  # a static scratch buffer shared by threads
}
#: A type registered by hand with wrong field offsets: a library-level finding.
BAD_TYPE = "kb.BadPair"
GOOD = """good_add_one good_sum good_total good_cache_first good_cached_table good_doubled
good_greet good_map_size good_make_counter kb.good_total_global good_strided_scale good_axpy
good_reverse good_sorted_sum good_contiguous_only""".split()
#: Reads args[0] with no arguments, registered without a signature: a warning only.
LAX = "kb.lax_first_arg"

BUILDS = {"metadata": ("TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1",), "no-metadata": ()}


@pytest.fixture(scope="module", params=sorted(BUILDS))
def report(request, build_lib, official_include):
    lib = build_lib(
        "conform/kernel_bugs.cc",
        headers="official",
        defines=BUILDS[request.param],
        name=f"kernel_bugs_{request.param}",
    )
    xml = lib.with_suffix(".junit.xml")
    r, doc = conform_json(lib, "-j", "2", "--junit-xml", xml)
    return request.param, lib, r, doc, ET.parse(xml)


def _by_function(doc):
    out = {}
    for x in doc["results"]:
        if x["function"] is not None:
            out.setdefault(x["function"], []).append(x)
    return out


def _errors(rows):
    return {
        x["check"] for x in rows if x["status"] in ("fail", "error") and x["severity"] == "error"
    }


def test_every_planted_bug_is_caught_by_its_check(report):
    build, _lib, r, doc, _ = report
    assert r.returncode == 1
    fns = _by_function(doc)
    missed = {f: c for f, c in BUGS.items() if c not in _errors(fns.get(f, []))}
    assert not missed, f"{build}: not caught: {missed}"


def test_every_warned_bug_is_warned_by_its_check(report):
    build, _lib, _r, doc, _ = report
    fns = _by_function(doc)
    missed = {
        f: c
        for f, c in WARNS.items()
        if not any(
            x["check"] == c and x["status"] == "fail" and x["severity"] == "warning"
            for x in fns.get(f, [])
        )
    }
    assert not missed, f"{build}: not warned: {missed}"


def test_wrong_field_offsets_are_caught(report):
    build, _lib, _r, doc, _ = report
    (row,) = [x for x in doc["results"] if x["check"] == "type-layout"]
    assert row["status"] == "fail" and row["severity"] == "error", row
    assert set(row["details"]["types"]) == {BAD_TYPE}, build  # kb.GoodPair and kb.Counter pass
    assert (
        "field b (offset 28, size 8): offset is not a multiple of its alignment 8" in row["message"]
    )
    assert (
        "field c (offset 4096, size 8): ends at 4104, past the object's 40 bytes" in row["message"]
    )


def test_every_good_function_passes(report):
    build, _lib, _r, doc, _ = report
    fns = _by_function(doc)
    assert set(GOOD) <= set(fns)
    bad = {
        f: {x["check"] for x in fns[f] if x["status"] in ("fail", "error")}
        for f in GOOD
        if any(x["status"] in ("fail", "error") for x in fns[f])
    }
    assert not bad, f"{build}: {bad}"
    # The kernel probes ran on the good kernels (they pass, not skip).
    for f, check in [
        ("good_strided_scale", "tensor-strides"),
        ("good_axpy", "tensor-shapes"),
        ("good_add_one", "element-count"),
        ("good_reverse", "thread-safety"),
        ("good_sorted_sum", "scaling"),
        ("good_sum", "heap-growth"),
    ]:
        row = {x["check"]: x for x in fns[f]}[check]
        assert row["status"] == "pass", (build, f, row)
    # The cache passes with a note, not silently.
    refs = {x["check"]: x for x in fns["good_cache_first"]}["arg-refcount"]
    assert refs["status"] == "pass" and "kept once" in refs["message"]


def test_an_argument_read_by_an_unsigned_global_is_a_warning(report):
    _build, _lib, _r, doc, _ = report
    rows = {x["check"]: x for x in _by_function(doc)[LAX]}
    assert rows["arg-bounds"]["status"] == "fail" and rows["arg-bounds"]["severity"] == "warning"
    assert rows["no-crash"]["status"] == "pass"
    # A NULL dereference is told apart by the fault address: an error.
    null = {x["check"]: x for x in _by_function(doc)["kb.bug_null_deref"]}
    assert null["no-crash"]["severity"] == "error"
    assert null["arg-bounds"]["status"] == "pass"


def test_findings_carry_the_library_output_and_a_fix(report):
    build, _lib, _r, doc, junit = report
    rows = {x["check"]: x for x in _by_function(doc)["bug_throw"]}
    crash = rows["no-crash"]
    assert "terminate called after throwing" in crash["output"]
    assert 'bug_throw: escaped extern "C"' in crash["output"]
    assert crash["fix"].startswith("Validate arguments")
    dtype = {x["check"]: x for x in _by_function(doc)["bug_dtype_abort"]}["no-crash"]
    assert "complex64" in dtype["message"], build
    assert "unsupported dtype code" in dtype["output"]
    # JUnit: the failure text has the output and the fix too.
    fails = [
        c.find("failure").text
        for c in junit.iter("testcase")
        if c.get("name") == "no-crash" and c.get("classname").endswith(".bug_throw")
    ]
    assert len(fails) == 1 and "what():" in fails[0] and "fix: Validate" in fails[0]


def test_typed_globals_get_the_typed_checks(report):
    build, _lib, _r, doc, _ = report
    rows = {x["check"]: x for x in _by_function(doc)["kb.good_total_global"]}
    assert rows["valid-call"]["status"] == "pass", rows["valid-call"]
    assert rows["valid-call"]["message"] == "returned int"


def test_people_report_shows_output_and_fix(build_lib, official_include):
    lib = build_lib("conform/kernel_bugs.cc", headers="official", name="kernel_bugs_no-metadata")
    r = conform(lib, "--function", "bug_throw", "--select", "no-crash", env={"COLUMNS": "200"})
    assert r.returncode == 1
    assert "library output:" in r.stdout
    assert "what():  bug_throw" in r.stdout
    assert "fix: Validate arguments" in r.stdout


def test_call_guard_turns_a_read_past_the_end_into_a_failure(build_lib, official_include):
    import subprocess
    import sys

    lib = build_lib("conform/kernel_bugs.cc", headers="official", name="kernel_bugs_no-metadata")

    def call(*args):
        return subprocess.run(
            [sys.executable, "-m", "tvmffi_cli", "call", str(lib), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    # Without --guard the read of x[n] lands in readable memory: exit 0.
    plain = call("bug_read_past", "float32[1024]:arange")
    assert plain.returncode == 0, plain.stderr
    guarded = call("bug_read_past", "float32[1024]:arange", "--guard")
    assert guarded.returncode == 1
    assert "SIGSEGV" in guarded.stderr
    # A correct kernel is unaffected: same result, exit 0.
    good = call("good_sum", "float32[3]:arange", "--guard")
    assert good.returncode == 0, good.stderr
    assert good.stdout.splitlines()[0] == "3.0"
