"""The dataclass operations of our runtime (issue 11): ffi.ReprPrint,
ffi.DeepCopy, ffi.RecursiveHash, ffi.RecursiveEq/Lt/Le/Gt/Ge, their C++
exports (tvm::ffi::ReprPrint, ...) and the __ffi_repr__ of the access path
types, against the official runtime.

fixtures/cxx/dataclass_ops.cc is built with g++ against the OFFICIAL headers
into a program that registers user types with reflected fields (field flags
compare/hash/repr off, an inherited field registered twice, __ffi_repr__ /
__ffi_eq__ / __ffi_hash__ / __ffi_compare__ hooks, a type that cannot be
copied, an enum) and prints one line per case. It runs once on each runtime (the
dynamic loader picks libtvm_ffi.so from LD_LIBRARY_PATH) and every line must
be the same, object addresses aside.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import fixturebuild
from tvmffi_cli.errors import InputError


def _runtimes() -> tuple[Path, Path]:
    official = fixturebuild.official_runtime()  # type: ignore[no-untyped-call]
    if official is None:
        pytest.skip("the official apache-tvm-ffi package (test extra) is not installed")
    try:
        ours = Path(fixturebuild.our_runtime())  # type: ignore[no-untyped-call]
    except InputError as e:
        pytest.skip(f"our runtime is not built: {e}")
    return Path(official), ours


def _program() -> Path:
    # the build cache keys on sources and flags: the included header's hash
    # goes in as a define so that editing it rebuilds the program
    header = fixturebuild.FIXTURES / "cxx" / "dataclass_ops_types.h"
    digest = hashlib.sha256(header.read_bytes()).hexdigest()[:16]
    try:
        exe: Path = fixturebuild.build(  # type: ignore[no-untyped-call]
            "cxx/dataclass_ops.cc",
            headers="official",
            shared=False,
            defines=(f"DC_TYPES_HASH={digest}",),
        )
    except fixturebuild.BuildError as e:
        pytest.skip(f"cannot build the fixture program: {e}")
    return exe


def _run(
    exe: Path, runtime: Path, extra_env: dict[str, str] | None = None, stderr_ok: bool = True
) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = str(runtime.parent)
    env.pop("TVM_FFI_REPR_WITH_ADDR", None)
    env.pop("DC_DEEP", None)
    env.update(extra_env or {})
    proc = subprocess.run(
        [str(exe)], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert proc.returncode == 0, f"{runtime}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    if not stderr_ok:  # only the official headers' warning about dc.Derived's "id"
        lines = [ln for ln in proc.stderr.splitlines() if "duplicates an ancestor field" not in ln]
        assert lines == [], proc.stderr[-6000:]
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        name, _, result = line.partition("\t")
        assert name not in out, f"case {name!r} printed twice"
        out[name] = result
    return out


def _no_addresses(text: str) -> str:
    """Object addresses differ between runs: number them by first appearance."""
    seen: dict[str, int] = {}
    return re.sub(r"0x[0-9a-f]+", lambda m: f"#{seen.setdefault(m.group(0), len(seen))}", text)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, str], dict[str, str]]:
    official, ours = _runtimes()
    exe = _program()
    return _run(exe, ours), _run(exe, official)


def test_same_results_as_official(results: tuple[dict[str, str], dict[str, str]]) -> None:
    ours, official = results
    assert list(ours) == list(official)
    assert sum(name.startswith("repr ") for name in official) >= 55  # distinct input values
    assert sum(name.startswith("cmp ") for name in official) >= 55  # pairs of values
    diffs = {
        k: (ours[k], official[k])
        for k in official
        if _no_addresses(ours[k]) != _no_addresses(official[k])
    }
    assert diffs == {}


def test_exact_texts(results: tuple[dict[str, str], dict[str, str]]) -> None:
    ours, _ = results
    expected = {
        "repr f_big": "1.23457e+08",
        "repr f_negzero": "-0",
        "repr f_nan": "nan",
        "repr dev_trn": "trn:3",
        "repr dev_unknown": "unknown:0",
        "repr opaque": "void*",
        "repr str_utf8": r'"\\u00e9\\u4e2d\\U0001f600"',
        "repr str_ansi": r'"\\x1b[31mred\\x1b[0m \\x1b[x"',
        "repr bytes_small": r'b"a\\x00\\x22\\x5cz"',
        "repr bigint_neg": "-55340232221128654843",
        "repr tensor": "float32[2, 3]@cpu:0",
        "repr array1": "(1,)",
        "repr map_small": '{"a": 1, 2: None}',
        "repr list_cycle": "[1, ...]",
        "repr missing": "<MISSING>",
        "repr flags": "dc.Flags(a=1, b=2, c=3)",  # d is repr-off
        "repr derived": 'dc.Derived(id=7, name="seven", payload=(dc.Point(x=0, y=0, label="o"),))',
        "repr custom": '<Custom 13 "in">',
        "repr empty_obj": "dc.Empty",
        "repr access path": (
            '<root>.a[0]["k"][3][<missing:"m">][<missing:4>][<missing:"z">]'
            ' | [<missing:"z">] | <root>'
        ),
        "repr node cycle": "dc.Node(value=1, next=...)",
        "repr enum_red": "dc.Color.RED",
        # built-in reflection objects are copied too (their fields have no setter here)
        "copy access path": "<root>.a[[1]] new parent-new depth=2",
        "copy enum_list": "[dc.Color.GREEN, dc.Color.GREEN] new eq=T",  # singletons shared
        "cmp enums": "FTTFF",
        # a failing hook: its error reaches the caller unchanged
        "repr bad_in_list": "raised ValueError: bad repr",
        "hash bad_in_list": "raised IndexError: bad hash",
        "cmp bad_hooks": "[KeyError: bad eq]FTFT",
        "repr error": "ffi.Error",
        # a hook column holding something else than a Function
        "repr weird_hooks": "raised TypeError: Cannot treat type `int` as type "
        "`(0: ffi.Object, 1: (0: AnyView) -> str) -> str`",
        "copy weird2_hooks": "raised TypeError: Cannot treat type `int` as type "
        "`(0: ffi.Object) -> ffi.Object`",
        # hooks returning the wrong type
        "repr wrong_ret": "raised TypeError: Cannot convert from type `int` to `str`",
        "hash wrong_ret": "raised TypeError: Cannot convert from type `ffi.SmallStr` to `int`",
        "copy shared": 'shared new (dc.Point(x=1, y=2, label="s"), dc.Point(x=1, y=2, label="s"))',
        "copy list cycle": "self [1, ...]",
        "copy dict self": 'self {"me": ..., 1: [...]}',
        "copy array via list": "fixed ([...], 5)",
        "copy map via dict": 'fixed {"d": {"m": ...}}',
        "copy node cycle": 'self new dc.Node(value="v", next=...)',
        "copy independent": '[[1], dc.Point(x=1, y=2, label="x")] vs '
        '[[1, 2], dc.Point(x=99, y=2, label="x")]',
        "copy no_copy": "raised InternalError: Check failed: (copy_fn.has_value()) is false: "
        'Cannot deep copy object of type "dc.NoCopy" because it is not copy-constructible',
        "cmp 1<2": "FTTFF",
        "cmp str_signed": "FTTFF",  # bytes compare as signed chars
        "cmp flags_b_off": "TFTFT",  # b is compare-off
        "cmp custom_eq_mod": "TTTFF",  # __ffi_eq__ for ==, the fields for ordering
        "cmp cmp_only": "FFFTT",  # __ffi_compare__ reverses the order
        "cmp bigint_int": "FFFTT",
        "cmp function": "TFTFT",
        # __ffi_hash__ of dc.Custom: (v % 10) * 1000 + the hash of its inner value
        "hash_pair custom_eq_mod": "2654438835 == 2654438835",
        "cxx compare": "FTTFF",
        "cxx ReprPrint": '(1, "s")',
        "cxx operator<<": "{1: 2}",
        "cxx error": "raised TypeError: Cannot compare values of different types: int vs ffi.SmallStr",
        "args RecursiveEq": "raised TypeError: Mismatched number of arguments when calling: "
        "`ffi.RecursiveEq(0: Any, 1: Any) -> bool`. Expected 2 but got 1 arguments",
        # (the program doubles backslashes)
        "metadata ffi.ReprPrint": r'{"type_schema":"{\\"type\\":\\"ffi.Function\\",'
        r'\\"named_args\\":{\\"return\\":[{\\"type\\":\\"ffi.String\\"}],'
        r'\\"params\\":[{\\"type\\":\\"Any\\"}]}}"}',
    }
    assert {k: ours[k] for k in expected} == expected
    err = "[TypeError: Cannot order Map/Dict values]"
    assert ours["cmp map_val"] == "F" + err * 4
    assert ours["cmp map_in_array"] == "F" + err * 4
    cyc = "[ValueError: RecursiveCompare: cyclic reference detected in ordering]"
    assert ours["cmp list_cycles"] == "T" + cyc * 4
    assert ours["cmp nan_nan"] == "T" + "[TypeError: Cannot order NaN values]" * 4
    # hash-off and compare-off fields are left out of the hash, repr-off ones are not
    for name, same in [
        ("flags_b_off", True),
        ("flags_c_hash_off", True),
        ("flags_d_repr_off", False),
    ]:
        assert (" == " in ours[f"hash_pair {name}"]) is same, name
    assert ours["hash cmp_only"].startswith(
        "raised ValueError: RecursiveHash: type 'dc.CmpOnly' defines __ffi_eq__ or __ffi_compare__"
    )


def test_repr_with_addresses(results: tuple[dict[str, str], dict[str, str]]) -> None:
    ours, _ = results
    assert _no_addresses(ours["repr with addr"]) == (
        '{"l": [1, dc.Point@#0(x=1, y=2, label="a"), float32[1]@cpu:0@#1, ...@#2]@#2}@#3'
        " | <Custom 1 {1: 2}@#4> | (dc.Color.RED@#5, dc.Empty@#6)@#7"
    )
    assert ours["repr addr not 1"] == '(dc.Point(x=1, y=2, label="a"),)'


def test_deep_nesting_without_recursion() -> None:
    """300000 nested Lists: hashed, copied and compared on an explicit stack
    (the official runtime crashes on such depths, so only ours runs it)."""
    _, ours = _runtimes()
    out = _run(_program(), ours, {"DC_DEEP": "300000"})
    h1, cmp, h2 = out["deep ours"].split(" ")
    assert cmp == "TFTFT"
    assert h1 == h2


def test_under_asan_ubsan(results: tuple[dict[str, str], dict[str, str]]) -> None:
    """Every case again on our runtime built with AddressSanitizer + UBSan
    (libasan preloaded into the uninstrumented program; the program breaks
    the reference cycles it made before exiting, so leak checking is on):
    no report, and the same output as the normal build."""
    for tool in ("cmake", "gcc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is needed for the sanitizer build")
    # the sanitized build of test_hardening_sanitize.py (shared, cached)
    san = importlib.import_module("test_hardening_sanitize")
    libdir = san.sanitized_runtime_dir()
    if libdir is None:
        pytest.skip("the sanitized runtime did not build")
    preload = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run(
            ["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if not os.path.isabs(path):
            pytest.skip(f"{name} not found through gcc -print-file-name")
        preload.append(path)
    env = {
        "LD_PRELOAD": " ".join(preload),
        "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "DC_DEEP": "20000",
    }
    out = _run(_program(), Path(libdir) / "libtvm_ffi.so", env, stderr_ok=False)
    ours, _ = results
    h1, cmp, h2 = out.pop("deep ours").split(" ")
    assert (cmp, h1) == ("TFTFT", h2)
    assert {k: _no_addresses(v) for k, v in out.items()} == {
        k: _no_addresses(v) for k, v in ours.items()
    }
