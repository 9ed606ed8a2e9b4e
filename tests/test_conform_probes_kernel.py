"""Units of the kernel probes (issue 28 item 3): the signature search's hints,
the layouts the probes build, and the checks as pure functions of observed
facts. The probes themselves run on planted bugs in tests/test_kernel_bugs.py."""

import struct

import pytest

from tvmffi_cli.conform import checks_kernel, checks_probe, checks_types, sigs
from tvmffi_cli.conform.checks_crash import FunctionFacts
from tvmffi_cli.conform.messages import TypeLayout
from tvmffi_cli.conform.probe_layouts import View, contiguous, encode

#: What the official TVM_FFI_DLL_EXPORT_TYPED_FUNC raises for a wrong arity.
OFFICIAL = "Mismatched number of arguments when calling: `{}`. Expected {} but got 0 arguments"


@pytest.mark.parametrize(
    "signature, n, codes",
    [
        ("axpy(0: DLTensor*, 1: DLTensor*, 2: float) -> void", 3, ["ttf", "TTf"]),
        ("scale(0: Tensor, 1: int) -> Tensor", 2, ["ti", "Ti"]),
        ("count(0: int, 1: bool) -> int", 2, ["ii"]),
    ],
)
def test_the_signature_a_typed_function_names_is_tried_first(signature, n, codes):
    hints = sigs.hint_codes(OFFICIAL.format(signature, n))
    assert hints == codes
    # The function said what it takes: nothing else is tried.
    assert sigs.search_order(hints) == codes
    assert sigs.search_order([]) == list(sigs.SEARCH_CODES)


def test_an_unknown_parameter_type_gives_the_stated_arity_only():
    hints = sigs.hint_codes(OFFICIAL.format("f(0: Array<int>, 1: DLTensor*) -> int", 2))
    assert hints and all(len(c) == 2 for c in hints)
    assert sigs.hint_codes("f0001 expects 1 argument") == [
        c for c in sigs.SEARCH_CODES if len(c) == 1
    ]
    assert sigs.hint_codes("no idea") == [] and sigs.hint_codes(None) == []


def test_search_codes_stand_for_signatures():
    s = sigs.code_sig("TTf")
    assert [p["type"] for p in s.params] == ["ffi.Tensor", "ffi.Tensor", "float"]
    assert sigs.code_ndim("TTf") == 2 and sigs.code_ndim("tti") == 1


def test_views_and_values():
    t = View((2, 3), (1, 2), 6)  # transposed
    assert t.positions() == [0, 2, 4, 1, 3, 5] and not t.dense
    assert contiguous((2, 3)).strides == (3, 1) and contiguous((2, 3)).dense
    assert View((4,), (0,), 4).positions() == [0, 0, 0, 0]  # broadcast
    # bfloat16 is the upper half of a float32; small integers are exact
    assert encode((4, 16), [3]) == struct.pack("<f", 3.0)[2:]
    assert encode((2, 16), [1, 2]) == struct.pack("<2e", 1.0, 2.0)


def facts(**obs):
    f = FunctionFacts("k")
    f.plan = list(obs)
    f.params = ["ffi.Tensor", "ffi.Tensor"]
    f.obs = {k.replace("_", ":"): v for k, v in obs.items()}
    return f


def test_strides_mismatch_fails_and_refusals_pass():
    bad = {"call": "argument 0 transposed (...)", "kind": "transposed", "arg": 0}
    f = facts(
        kernel_strides={"rc": 0, "tried": 3, "mismatches": [dict(bad, differs=["the result"])]}
    )
    r = checks_kernel.check_tensor_strides(f)
    assert r.status == "fail" and "transposed" in r.message and "memory order" in r.message
    f = facts(kernel_strides={"rc": 0, "tried": 3, "mismatches": [], "refusals": [{}, {}]})
    r = checks_kernel.check_tensor_strides(f)
    assert r.status == "pass" and "1 gave the contiguous copy's result, 2 refused" in r.message
    assert (
        checks_kernel.check_tensor_strides(facts(kernel_strides={"varies": True})).status == "skip"
    )


def test_element_count():
    trunc = {"rc": 0, "count": {"depends": True, "truncated": True, "shape": [4294967360]}}
    assert checks_kernel.check_element_count(facts(kernel_count=trunc)).status == "fail"
    f = facts()
    f.crashes = {"kernel:count": {"signal": "SIGSEGV", "hang": False}}
    r = checks_kernel.check_element_count(f)
    assert r.status == "pass" and "not truncated" in r.message
    assert checks_probe.check_no_crash(f).status == "pass"  # the expected end of the probe
    same = {"rc": 0, "count": {"depends": False}}
    assert checks_kernel.check_element_count(facts(kernel_count=same)).status == "skip"


def test_shapes_fail_only_on_a_fault_past_the_data():
    f = facts(**{"tensor_shrink_0": {"rc": -1, "error": {"kind": "ValueError", "message": "x"}}})
    f.crashes = {"tensor:shrink:1": {"signal": "SIGSEGV", "hang": False, "tensor_oob": True}}
    r = checks_kernel.check_tensor_shapes(f)
    assert r.status == "fail" and "tensor argument 1 half as long" in r.message
    assert checks_probe.check_tensor_bounds(f).status != "fail"  # one finding, one check
    f.crashes = {}
    assert checks_kernel.check_tensor_shapes(f).status == "pass"


def test_heap_growth():
    grows = {"heap": {"calls": 32, "grew": [4096, 4096], "live": 0, "refs": 0}}
    r = checks_kernel.check_heap_growth(facts(kernel_heap=grows))
    assert r.status == "fail" and "128 bytes per call" in r.message
    cache = {"heap": {"calls": 32, "grew": [4096, 0], "live": 0, "refs": 0}}
    assert checks_kernel.check_heap_growth(facts(kernel_heap=cache)).status == "pass"
    kept = {"heap": {"calls": 32, "grew": [4096, 4096], "live": 0, "refs": 64}}
    r = checks_kernel.check_heap_growth(facts(kernel_heap=kept))
    assert r.status == "pass" and "arg-refcount" in r.message


def test_error_kind():
    err = {"kind": "InternalError", "message": "Check failed: x.dtype == float32"}
    f = facts(**{"tensor_int8": {"rc": -1, "error": err}})
    r = checks_kernel.check_error_kind(f)
    assert r.status == "fail" and "tensor variant int8" in r.message
    f = facts(**{"tensor_int8": {"rc": -1, "error": dict(err, kind="TypeError")}})
    assert checks_kernel.check_error_kind(f).status == "pass"
    # Without a declared or found signature a refused tensor proves nothing.
    f.params = None
    f.obs["tensor:int8"]["error"] = err
    assert checks_kernel.check_error_kind(f).status == "skip"


def test_scaling():
    quad = {"scale": {"n": [256, 1024], "ns": [50_000.0, 800_000.0], "calls": 4}}
    r = checks_kernel.check_scaling(facts(kernel_scale=quad))
    assert r.status == "fail" and r.severity == "warning" and "16x" in r.message
    lin = {"scale": {"n": [256, 1024], "ns": [50_000.0, 210_000.0], "calls": 4}}
    r = checks_kernel.check_scaling(facts(kernel_scale=lin))
    assert r.status == "pass" and "us" not in r.message  # no timing in a pass: stable text
    tiny = {"scale": {"n": [256, 1024], "ns": [100.0, 1900.0], "calls": 4096}}
    assert checks_kernel.check_scaling(facts(kernel_scale=tiny)).status == "pass"


class _FakeLoop:
    """CPU ns per round from a list (one value per round, in order)."""

    def __init__(self, times):
        self.times = list(times)

    def cpu_ns(self, calls):
        return self.times.pop(0)


def test_scaling_measures_a_superlinear_set_again_and_keeps_the_least_ratio(monkeypatch):
    from tvmffi_cli.conform import probe_loops

    monkeypatch.setattr(probe_loops, "SCALE_PAUSE_S", 0.0)
    rounds = probe_loops.SCALE_ROUNDS
    # Linear (4x) but every 4n round of the first set slowed 3x by other load:
    # seen once in 40 runs on TVM's vm.builtin.apply_softmax_with_temperature.
    n, big = _FakeLoop([1000] * 3 * rounds), _FakeLoop([12000] * rounds + [4000] * 2 * rounds)
    assert probe_loops.least_ratio([n, big], 1, lambda took: True) == [1000, 4000]
    assert len(big.times) == rounds  # confirmed once (ratio 4 < 6): the third set never ran
    # Quadratic (16x) in every set: still 16x, after SCALE_SETS sets.
    n, big = _FakeLoop([1000] * 3 * rounds), _FakeLoop([16000] * 3 * rounds)
    assert probe_loops.least_ratio([n, big], 1, lambda took: True) == [1000, 16000]
    assert big.times == []
    # No time left for a second set: the first one stands.
    n, big = _FakeLoop([1000] * rounds), _FakeLoop([12000] * rounds)
    assert probe_loops.least_ratio([n, big], 1, lambda took: False) == [1000, 12000]
    # A failed timed call.
    assert probe_loops.least_ratio([_FakeLoop([None]), big], 1, lambda took: True) is None
    # Confirmation starts below the verdict's ratio.
    assert probe_loops.SCALE_CONFIRM < checks_kernel.SCALE_RATIO


def test_threads_with_arguments_of_their_own():
    f = facts(valid={"rc": 0, "fingerprint": "a"})
    f.plan = ["valid", "threads"]
    calls = [{"rc": 0, "rounds": 2}] * 3 + [
        {"rc": 0, "rounds": 1, "mismatch": {"round": 1, "got": "other values in tensor argument 1"}}
    ]
    f.obs["threads"] = {"distinct": True, "calls": calls, "layout": "1-d float32", "shape": [8]}
    r = checks_probe.check_thread_safety(f)
    assert r.status == "fail" and "thread 3 got other values in tensor argument 1" in r.message
    f.obs["threads"]["calls"] = [{"rc": 0, "rounds": 2}] * 4
    assert checks_probe.check_thread_safety(f).status == "pass"


def test_type_layouts():
    good = {
        "key": "t.Good",
        "total_size": 48,
        "fields": [["a", 24, 4, 4], ["b", 32, 8, 8], ["c", 40, 1, 1]],
        "inherited": [],
    }
    assert checks_types.problems(TypeLayout.from_json(good)) == []
    bad = {
        "key": "t.Bad",
        "total_size": 40,
        "fields": [["a", 24, 8, 8], ["b", 28, 8, 8], ["c", 4096, 8, 8], ["h", 8, 8, 8]],
        "inherited": [],
    }
    got = checks_types.problems(TypeLayout.from_json(bad))
    assert any("field b" in p and "alignment 8" in p for p in got)
    assert any("field b" in p and "overlaps field a" in p for p in got)
    assert any("field c" in p and "past the object's 40 bytes" in p for p in got)
    assert any("field h" in p and "object header" in p for p in got)
    # A child registering an inherited field again is not an overlap.
    child = {
        "key": "t.Child",
        "total_size": 48,
        "fields": [["a", 24, 8, 8], ["d", 32, 8, 8]],
        "inherited": [["a", 24, 8, 8]],
    }
    assert checks_types.problems(TypeLayout.from_json(child)) == []
    r = checks_types.check_type_layout([good, bad, child], loaded=True)
    assert r.status == "fail" and r.function is None and list(r.details["types"]) == ["t.Bad"]
    assert checks_types.check_type_layout(None, loaded=True).status == "skip"
    # What the probe's stream carries is decoded, and refused when it is not a layout.
    r = checks_types.check_type_layout([dict(good, fields=[["a", "24", 4, 4]])], loaded=True)
    assert r.status == "error" and "offset, size and alignment must be integers" in r.message
