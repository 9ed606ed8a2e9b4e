"""Libraries of other projects' public wheels that ship TVM-FFI libraries
(issue 11, item 6): each loads on the builtin runtime (`auto` needs no
fallback), loaded `inspect` lists the same globals and types as under the
official runtime, and `conform` passes.

Wheels are fetched once with `pip download --no-deps` into a cache,
$TVMFFI_WHEEL_CACHE or ~/.cache/tvmffi/wheels; a wheel that is neither cached
nor downloadable (registry unreachable) skips its test with the reason."""

import json
from pathlib import Path

import pytest

import fixturebuild
from releases import extract, fetch_wheel
from test_call_helpers import tvmffi, validate
from tvmffi_cli.ffi import hosts

# (distribution, version, library inside the wheel). Siblings of the library
# (.so files in its directory) are extracted with it: they are its DT_NEEDED.
WHEELS = [
    ("jax-tvm-ffi", "0.1.3", "jax_tvm_ffi/jax_tvm_ffi.so"),
    ("xgrammar", "0.2.8", "xgrammar/libxgrammar_bindings.so"),
    ("apache-tvm-ffi-orcjit", "0.1.3", "tvm_ffi_orcjit/lib/libtvm_ffi_orcjit.so"),
    ("tilelang", "0.1.15", "tilelang/lib/libtvm_runtime.so"),
]


def _inspect(lib, runtime_sel):
    r = tvmffi("inspect", lib, "--json", "--runtime", runtime_sel, timeout=180)
    assert r.returncode in (0, 1), r.stderr
    doc = validate(json.loads(r.stdout), "inspect")
    loads = [e["message"] for e in doc["errors"] if e["where"] == "load"]
    assert not loads, f"{runtime_sel}: {loads}"
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("dist,version,member", WHEELS, ids=[w[0] for w in WHEELS])
def test_wheel_library_on_the_builtin_runtime(dist, version, member):
    if fixturebuild.official_runtime() is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    lib = extract(fetch_wheel(dist, version), member)
    choice = hosts.choose_runtime("auto", lib)
    assert choice.kind == "builtin", f"auto falls back: {choice.reason}"
    ours = _inspect(lib, "auto")
    assert ours["runtime"]["kind"] == "builtin"
    theirs = _inspect(lib, "official")
    assert ours["globals"] == theirs["globals"]
    assert [t["type_key"] for t in ours["types"]] == [t["type_key"] for t in theirs["types"]]
    assert [f["name"] for f in ours["functions"]] == [f["name"] for f in theirs["functions"]]
    check_conform(lib)


_XG = "xgrammar.tvm_ffi_binding.testing."
#: Errors conform reports on these libraries that are the libraries' own
#: defects, each checked against the official runtime (`--runtime official`)
#: and the library's own Python where it has one. Keyed by file name.
KNOWN_ERRORS: dict[str, set[tuple[str, str]]] = {
    # Parameters declared `ffi.Object` are cast to a Grammar without a type
    # check: any other object (a String, a Shape) crashes them, also on the
    # official runtime and through xgrammar's own tvm_ffi.
    "libxgrammar_bindings.so": {
        ("no-crash", _XG + n)
        for n in (
            "_get_allow_empty_rule_ids",
            "_is_rule_fsm_accept_string",
            "_print_grammar_fsms",
            *(
                "grammar_functor." + f
                for f in (
                    "byte_string_fuser",
                    "dead_code_eliminator",
                    "fsm_builder",
                    "grammar_optimizer",
                    "lookahead_assertion_analyzer",
                    "repetition_normalizer",
                    "rule_inliner",
                    "structure_normalizer",
                )
            ),
        )
    },
    "libtvm_runtime.so": {
        # reads a CUDA tensor's data as host memory (official: the same)
        ("device-mismatch", "cache_flush_cpu_non_first_arg"),
        # assumes 2-D tensors without checking ndim (official: the same)
        ("no-crash", "vm.builtin.multinomial_from_uniform"),
        # TVM sizes a sub-byte element as a whole byte: a packed float4
        # tensor is written past its end (official: the same)
        ("tensor-bounds", "tvm.contrib.random.random_fill"),
        ("tensor-bounds", "tvm.contrib.random.random_fill_for_measure"),
        # byte_offset ignored: `data` read as the first element (official:
        # the same), an error since issue 28
        *(
            ("tensor-bounds", f)
            for f in (
                "cache_flush_cpu_non_first_arg",
                "vm.builtin.apply_softmax_with_temperature",
                "vm.builtin.sample_top_p_from_logits",
                "vm.builtin.sample_top_p_from_prob",
            )
        ),
        # reads the shape of a 1-d tensor past its end (the probe's shape
        # arrays end at a guard page; official: the same)
        ("no-crash", "vm.builtin.attention_kv_cache_create"),
        # the vocabulary size read into an int: 2^32 + 64 logits are 64
        # (official: the same)
        ("element-count", "vm.builtin.apply_softmax_with_temperature"),
        # a strided int64 tensor read in memory order (official: the same)
        ("tensor-strides", "vm.builtin.tensor_to_shape"),
        # typed builtins refusing a wrong dtype, layout or shape with ICHECK:
        # InternalError instead of TypeError/ValueError (official: the same)
        *(
            ("error-kind", f)
            for f in (
                "runtime.TVMTensorCopyFromTo",
                "runtime.TVMTensorCreateView",
                "vm.builtin.apply_presence_and_frequency_penalty",
                "vm.builtin.apply_repetition_penalty",
                "vm.builtin.apply_softmax_with_temperature",
                "vm.builtin.attention_kv_cache_create",
                "vm.builtin.make_prim_value",
                "vm.builtin.multinomial_from_uniform",
                "vm.builtin.sample_top_p_from_logits",
                "vm.builtin.sample_top_p_from_prob",
                "vm.builtin.tensor_to_shape",
            )
        ),
    },
}


def check_conform(lib):
    """conform runs the library's exports and globals on the builtin runtime.
    Its errors are exactly the libraries' own defects listed in KNOWN_ERRORS:
    every function is probed from the state the load left (a fresh probe
    child each), so what one global starts (tilelang's disco and rpc
    threads, sockets, forks) cannot fail another.
    What some of their packed functions do when called with no arguments at
    all (read args[0] without checking the count, a fact of the library under
    any runtime) is a warning, because those globals declare no signature."""
    r = tvmffi("conform", lib, "--json", timeout=600)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["summary"]["error"] == 0, [x for x in doc["results"] if x["status"] == "error"]
    assert doc["isolation"]["per_function"], doc["isolation"]
    bad = [x for x in doc["results"] if x["status"] == "fail"]
    name = Path(lib).name
    errors = {(x["check"], x["function"]) for x in bad if x["severity"] == "error"}
    known = KNOWN_ERRORS.get(name, set())
    assert errors == known, {"missing": sorted(known - errors), "more": sorted(errors - known)}
    unexpected = [
        x
        for x in bad
        if x["severity"] == "warning"
        and not (
            (x["check"] == "arg-bounds" and "called with 0 arguments" in x["message"])
            or (x["check"] == "no-crash" and x["message"].startswith("zero-args:"))
            or x["check"] in ("thread-safety", "tensor-bounds")
        )
    ]
    assert not unexpected, unexpected
    assert (r.returncode == 0) == (not errors) and doc["passed"] is (not errors)
    return errors


def test_tilelang_logging_global_raises_like_official():
    """tilelang's runtime.disco.socket_session_init_workers logs a line to
    std::cerr through TVM's LogMessage, then raises (the caller is no disco
    worker thread). The library is built with GCC 13+ headers: its streams are
    ready only if the hosting runtime constructed std::ios_base::Init. The
    builtin runtime once did not, and this valid call died of SIGSEGV inside
    ostream::sentry, where the official runtime raised the ValueError."""
    if fixturebuild.official_runtime() is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    lib = extract(fetch_wheel("tilelang", "0.1.15"), "tilelang/lib/libtvm_runtime.so")
    name = "runtime.disco.socket_session_init_workers"
    errors = {}
    for runtime_sel in ("builtin", "official"):
        r = tvmffi("call", lib, name, "1", "1", "1", "1", "--json", "--runtime", runtime_sel)
        assert r.returncode == 1, (runtime_sel, r.stderr[-2000:])
        doc = validate(json.loads(r.stdout), "call")
        assert doc["runtime"]["kind"] == runtime_sel
        errors[runtime_sel] = (doc["error"]["kind"], doc["error"]["message"])
        assert errors[runtime_sel][0] != "Crash", (runtime_sel, errors[runtime_sel])
        assert "Initializing worker group with 1 nodes, 1 workers per node" in r.stderr
    assert (
        errors["builtin"]
        == errors["official"]
        == (
            "ValueError",
            "Check failed: (ret) is false: The current thread is not a DiscoWorker thread",
        )
    )
