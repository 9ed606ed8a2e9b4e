"""Structural equality and hashing (issue 11): ffi.StructuralEqual,
ffi.StructuralHash, ffi.GetFirstStructuralMismatch, ffi.StructuralKey* and
the C++ API (tvm::ffi::StructuralEqual/StructuralHash), compared with the
official runtime on the same inputs.

fixtures/cxx/structural_types.cc (+ structural_run.cc) is built against the
OFFICIAL headers: it defines user types of every structural kind with
reflected fields and field flags, and a table of input pairs;
fixtures/cxx/structural_driver.py runs it
(and a few calls with Python values) on one runtime in a child process.
Everything must match, hash values bit for bit, except the hashes of free
variables outside a def region: the official runtime hashes those by object
address, so only their pattern (which hashes agree) can match.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fixturebuild
from tvmffi_cli.errors import InputError
from tvmffi_cli.ffi import runtime
from tvmffi_cli.sandbox import process as sandbox

DRIVER = fixturebuild.FIXTURES / "cxx" / "structural_driver.py"

# input pairs whose hashes include the address of a free variable
ADDRESS_HASHED = {
    "var_same",
    "var_diff",
    "func_free_in_body",
    "func_same_free_in_body",
    "let_var_type_free",
    "custom_def_none_ne",
    "custom_def_simple_typed",
}
HASH_LABELS = ("hash_lhs", "hash_rhs", "cxx_hash_lhs")
MASK = (1 << 64) - 1


def _ours() -> Path:
    try:
        ours = Path(fixturebuild.our_runtime())  # type: ignore[no-untyped-call]
    except InputError as e:
        pytest.skip(f"our runtime is not built: {e}")
    if not runtime.exports_c_api(ours):
        pytest.skip("our runtime does not export all 50 C API functions yet")
    return ours


def _child(args: list[str]) -> dict[str, Any]:
    env = sandbox._child_env(None, None)
    proc = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _fixture() -> Path:
    """structural_types.cc + structural_run.cc (official headers); the digest
    of their shared header joins the build key so an edit rebuilds them."""
    header = fixturebuild.FIXTURES / "cxx" / "structural_types.h"
    digest = hashlib.sha256(header.read_bytes()).hexdigest()[:12]
    return Path(
        fixturebuild.build(  # type: ignore[no-untyped-call]
            ["cxx/structural_types.cc", "cxx/structural_run.cc"],
            headers="official",
            defines=(f"STEST_HEADER_DIGEST={digest}",),
        )
    )


@pytest.fixture(scope="module")
def results(official_runtime: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    lib = str(_fixture())
    ours = _child([str(DRIVER), str(_ours()), lib, "--ours-only"])
    official = _child([str(DRIVER), str(official_runtime), lib])
    return ours, official


def _pairs(side: dict[str, Any]) -> list[str]:
    return [k for k, v in side.items() if isinstance(v, dict) and "equal" in v]


def _combine(key: int, value: int) -> int:
    return (key ^ ((value + 0x9E3779B9 + (key << 6) + (key >> 2)) & MASK)) & MASK


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def test_same_results_as_official(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, official = results
    pairs = _pairs(official)
    assert len(pairs) >= 40
    assert set(official) <= set(ours)
    diffs = {}
    for label, ref in official.items():
        mine = ours[label]
        if label in ADDRESS_HASHED:
            ref = {k: v for k, v in ref.items() if k not in HASH_LABELS}
            mine = {k: v for k, v in mine.items() if k not in HASH_LABELS}
        if mine != ref:
            diffs[label] = (mine, ref)
    assert diffs == {}


def test_address_hashed_free_variables_keep_the_official_pattern(
    results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, official = results
    for label in ADDRESS_HASHED:
        for side in (ours, official):
            r = side[label]
            assert r["hash_lhs"] == r["cxx_hash_lhs"], label
        same = {side[label]["hash_lhs"] == side[label]["hash_rhs"] for side in (ours, official)}
        assert len(same) == 1, label
    assert ours["var_same"]["hash_lhs"] == ours["var_same"]["hash_rhs"]
    assert ours["var_diff"]["hash_lhs"] != ours["var_diff"]["hash_rhs"]


def test_exact_values(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, _ = results
    # POD hashes: combine(type index, value bits); NaN as the quiet NaN
    assert ours["py hash int"] == {"ok": _combine(1, 42)}
    assert ours["py hash nan"] == {"ok": _signed(_combine(3, 0x7FF8000000000000))}
    assert ours["nan_vs_nan"]["equal"] is True
    assert ours["zero_vs_negzero"]["equal"] is False
    assert ours["int_vs_bool"]["equal"] is False
    # a heap string (or bytes) equals the inline one with the same content
    assert ours["str_heap_vs_inline"]["equal"] is True
    assert ours["str_inline_vs_heap"]["hash_lhs"] == ours["str_inline_vs_heap"]["hash_rhs"]
    assert ours["bytes_inline_vs_heap"]["equal"] is True
    assert ours["str_heap_vs_inline_bytes"]["equal"] is False
    # a small string hashes as the heap string of the same content
    assert ours["py hash str"] == {
        "ok": _combine(65, int.from_bytes(b"hello", "little") % (2**31 - 1))
    }
    # mismatch paths: (kind, key) steps, AccessKind 0 attr, 1 array item,
    # 2 map item, 4 array item missing, 5 map item missing
    assert ours["array_ne"]["mismatch"] == [[[1, "2"]], [[1, "2"]]]
    assert ours["array_longer"]["mismatch"] == [[[1, "2"]], [[4, "2"]]]
    assert ours["map_rhs_more"]["mismatch"] == [[[5, "'b'"]], [[2, "'b'"]]]
    assert ours["map_var_keys"]["mismatch"] == [[[2, "Var(x)"]], [[5, "Var(x)"]]]
    assert ours["func_body_ne"]["mismatch"] == [[[0, "'body'"], [1, "1"]]] * 2
    assert ours["derived_base_field_ne"]["mismatch"] == [[[0, "'a'"]], [[0, "'a'"]]]
    assert ours["custom_key_ne"]["mismatch"] == [[[0, "'key'"]], [[0, "'key'"]]]
    assert ours["int_ne"]["mismatch"] == [[], []]
    assert ours["array_eq"]["mismatch"] is None
    # free variables bind in def regions only
    assert ours["func_alpha_eq"]["equal"] is True
    assert ours["let_var_type_free"]["equal"] is False
    assert ours["let_var_type_free_map"]["equal"] is True
    assert ours["var_diff_map_free_vars"]["equal"] is True
    assert ours["dag_shared_vs_tree"]["equal"] is False
    assert ours["unique_distinct"]["equal"] is False
    assert ours["custom_noise_ignored"]["equal"] is True
    # custom hooks open def regions through the callback's region argument
    assert ours["custom_def_pattern_eq"]["equal"] is True
    assert ours["custom_def_pattern_typed"]["equal"] is True
    assert ours["custom_def_none_ne"]["equal"] is False
    assert ours["custom_def_simple_typed"]["mismatch"] == [[[0, "'var'"], [0, "'ty'"]]] * 2
    # a map's hash leaves out keys without an order-independent hash
    assert ours["map_array_keys"]["equal"] is False
    assert ours["map_array_keys"]["hash_lhs"] == ours["map_array_keys"]["hash_rhs"]
    assert ours["tensor_content_ne"]["equal"] is False
    assert ours["tensor_content_ne_skip"]["equal"] is True
    assert ours["tensor_cuda"]["equal"] == {
        "raised": "InternalError",
        "message": "Check failed: lhs.device().device_type == kDLCPU (2 vs. 1) : "
        "can only compare CPU tensor",
    }
    assert ours["plain_unsupported"]["hash_lhs"]["raised"] == "TypeError"
    # the C++ API gives the globals' answers
    for label in _pairs(ours):
        r = ours[label]
        assert r["cxx_equal"] == r["equal"], label
        assert r["cxx_mismatch"] == r["mismatch"], label
        assert r["cxx_hash_lhs"] == r["hash_lhs"], label


def test_structural_key(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, official = results
    assert ours["structural_key_map"] == official["structural_key_map"]
    # the official header's Map finds the key through our __any_hash__/__any_equal__
    assert ours["structural_key_map"]["lookup"] == [7, False, 2]
    # __ffi_init__ (method and column) builds a key that caches the hash
    assert ours["structural_key_map"]["init"][1:] == [True, True]
    assert ours["py map keyed by StructuralKey"] == {"ok": 5}
    assert ours["py key equal"] == {"ok": True}
    assert ours["py key not equal"] == {"ok": False}
    assert ours["py key not a key"] == {
        "raised": "InternalError",
        "message": "Check not null: lhs_obj ",
    }


def _too_deep(what: str) -> dict[str, str]:
    return {
        "raised": "ValueError",
        "message": f"{what}: the value nests too deeply (over 20000 levels, or more than "
        "the thread's stack holds); a container that holds itself does too",
    }


def test_deep_and_cyclic_values_raise_on_ours(
    results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Known difference: the official walk recurses without a bound (a list
    that holds itself, or a deep value on a small thread stack, overflows its
    stack); ours stops at 20000 levels or when the thread's stack runs low."""
    ours, official = results
    assert official["nested_5000"] == ours["nested_5000"]
    assert ours["nested_5000"]["equal"] is True
    for label in ("deep_equal", "deep_mismatch", "cxx_deep_equal", "cycle_equal"):
        assert ours[label] == _too_deep("StructuralEqual"), label
    for label in ("deep_hash", "cycle_hash"):
        assert ours[label] == _too_deep("StructuralHash"), label
    assert ours["deep_mismatch_path"] == [15000, 15000]
    # a 512 KiB thread stack: 1000 levels fit, 5000 stop with the error
    assert ours["small_stack_1000"] == 1
    assert ours["small_stack_5000"] == _too_deep("StructuralEqual")
    # a hook that keeps its callback past the walk gets an error from it
    # (the official callback points at the finished walk's state)
    for label in ("stale_equal_callback", "stale_hash_callback"):
        assert ours[label] == {
            "raised": "RuntimeError",
            "message": "a structural equal/hash callback was called after its walk ended",
        }, label


def test_no_object_of_ours_outlives_the_walks(
    results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Everything the walks make (paths, keys, callbacks, binding tables'
    references) is released: a second full run leaves the live count as is."""
    ours, _ = results
    assert ours["live objects after a second run"] == 0


TYPE_KEY_HASHES = r"""
import ctypes, json, sys
sys.path.insert(0, sys.argv[2])
from registry_dump import TypeInfo
lib = ctypes.CDLL(sys.argv[1], ctypes.RTLD_GLOBAL)
lib.TVMFFIGetTypeInfo.restype = ctypes.POINTER(TypeInfo)
lib.TVMFFIGetTypeInfo.argtypes = [ctypes.c_int32]
out = {}
for i in [*range(14), *range(64, 79), *range(128, 138)]:
    t = lib.TVMFFIGetTypeInfo(i).contents
    kind = ctypes.c_int32.from_address(t.metadata + 28).value if t.metadata else None
    out[t.type_key.text()] = [t.type_key_hash, kind]
print(json.dumps(out))
"""


def test_type_key_hash_and_structural_kinds_match_official(official_runtime: Path) -> None:
    """TypeInfo.type_key_hash seeds every container and object hash, and the
    structural kind of the runtime's own types decides how they compare."""
    here = str(Path(__file__).resolve().parent)
    ours = _child(["-c", TYPE_KEY_HASHES, str(_ours()), here])
    official = _child(["-c", TYPE_KEY_HASHES, str(official_runtime), here])
    assert len(official) >= 35
    assert ours == official
    assert official["ffi.reflection.AccessPath"][1] == 4  # ConstTreeNode
    assert official["ffi.IntEnum"][1] == 5  # UniqueInstance


def test_structural_under_asan_ubsan(
    results: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    """The same driver on the sanitized runtime (TVMFFI_RT_SANITIZE=ON): no
    sanitizer report and the results of the plain build."""
    import test_hardening_sanitize as san

    san._need_tools()  # type: ignore[no-untyped-call]
    libdir = san.sanitized_runtime_dir()  # type: ignore[no-untyped-call]
    if libdir is None:
        pytest.skip("the sanitized runtime did not build")
    env = san.python_sanitize_env(libdir)  # type: ignore[no-untyped-call]
    lib = _fixture()
    proc = subprocess.run(
        [sys.executable, str(DRIVER), str(libdir / "libtvm_ffi.so"), str(lib), "--ours-only"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    assert san.SAN_REPORT.search(proc.stderr) is None, proc.stderr[-6000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    sanitized = json.loads(proc.stdout)
    plain = results[0]
    assert set(sanitized) == set(plain)
    # sanitized frames are larger: these may stop at the stack check instead
    stack_bound = {"deep_mismatch_path", "small_stack_1000"}
    for label, value in plain.items():
        if label in stack_bound and sanitized[label] != value:
            assert sanitized[label] == _too_deep("StructuralEqual"), label
        elif label not in ADDRESS_HASHED:
            assert sanitized[label] == value, label
