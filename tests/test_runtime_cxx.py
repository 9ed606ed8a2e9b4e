"""The C++ surface of our libtvm_ffi.so (runtime/src/cxx) and lazy binding.

Libraries built with the official C++ headers import C++ symbols from
libtvm_ffi.so (vtable/typeinfo of ModuleObj and Error, ModuleObj and Module
methods, json::Parse/Stringify, ...). A fixture built against the official
headers runs on our runtime and on the official one (one child process
each) and must give the same results. Real libraries from public wheels must
dlopen on our runtime.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fixturebuild
import releases
from tvmffi_cli.errors import InputError
from tvmffi_cli.ffi import runtime
from tvmffi_cli.sandbox import process as sandbox

DRIVER = fixturebuild.FIXTURES / "cxx" / "module_sub_driver.py"


def _ours() -> Path:
    try:
        ours = Path(fixturebuild.our_runtime())
    except InputError as e:
        pytest.skip(f"our runtime is not built: {e}")
    if not runtime.exports_c_api(ours):
        pytest.skip("our runtime does not export all 50 C API functions yet")
    return ours


def _child(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # the same child environment as sandbox workers (static TLS reserve, PYTHONPATH)
    env = sandbox._child_env(None, None)
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def _dynamic_symbols(lib: Path) -> set[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is needed to list dynamic symbols")
    proc = subprocess.run(
        [nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True
    )
    return {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}


# ---- exports ----------------------------------------------------------------


def test_exports_every_tvm_ffi_cxx_symbol_of_the_official_runtime(official_runtime: Path) -> None:
    ours = _dynamic_symbols(_ours())
    official = _dynamic_symbols(official_runtime)
    # functions, vtables, typeinfo and typeinfo names in tvm::ffi; not the
    # function-local statics (_ZZ/_ZGV: libraries keep their own copies)
    wanted = {s for s in official if re.match(r"_Z(N|NK|TV|TI|TS)N?3tvm3ffi", s)}
    assert len(wanted) >= 27
    assert wanted - ours == set()
    # the 0.1.12 by-value json::Stringify, still imported by tilelang 0.1.x
    assert "_ZN3tvm3ffi4json9StringifyERKNS0_3AnyENS0_8OptionalIivEE" in ours
    # and nothing of the C++ standard library leaks out
    assert [s for s in ours if s.startswith(("_ZNSt", "_ZSt"))] == []
    # (but __cxa_call_terminate, which GCC 14 built libraries import
    # unversioned and the official runtime exports too: stdlib_compat.cc)
    others = {s for s in ours if not s.startswith(("TVMFFI", "tvmffi_rt_", "_Z"))}
    assert others == {"__cxa_call_terminate"}


def test_cxx_sources_compile_warning_free() -> None:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    root = fixturebuild.ROOT / "runtime"
    sources = sorted((root / "src" / "cxx").glob("*.cc"))
    assert len(sources) >= 5
    for cc in sources:
        proc = subprocess.run(
            [
                gxx,
                "-std=c++17",
                "-D_GNU_SOURCE",
                "-DTVM_FFI_EXPORTS",
                "-fPIC",
                "-fvisibility=hidden",
                "-fvisibility-inlines-hidden",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                f"-I{root / 'include'}",
                f"-I{root / 'src'}",
                "-c",
                str(cc),
                "-o",
                os.devnull,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, f"{cc.name}:\n{proc.stderr}"


# ---- a ModuleObj subclass, Error and json on both runtimes -------------------


@pytest.fixture(scope="module")
def module_sub_results(official_runtime: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    ours = _ours()
    sub = fixturebuild.build("cxx/module_sub.cc", headers="official")
    plain = fixturebuild.build("cxx/plain_export.c", headers="ours")
    results = []
    for rt in (ours, official_runtime):
        proc = _child([str(DRIVER), str(rt), str(sub), str(plain)])
        if proc.returncode != 0:
            pytest.fail(f"driver failed on {rt} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        results.append(json.loads(proc.stdout))
    return results[0], results[1]


# Where our runtime differs on purpose (checked separately below).
KNOWN_DIFFERENCES = {"load missing file", "json depth 2049"}


def test_module_sub_same_results_as_official(
    module_sub_results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, official = module_sub_results
    assert set(ours) == set(official)
    assert len(official) > 100
    diffs = {
        k: (ours[k], official[k])
        for k in official
        if k not in KNOWN_DIFFERENCES and ours[k] != official[k]
    }
    assert diffs == {}


def test_module_sub_exact_values(module_sub_results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, _ = module_sub_results
    # a library's ModuleObj subclass through the ffi.Module* globals
    assert ours["kind(adder)"] == {"ok": "fixture.adder"}
    assert ours["ffi.ModuleGetKind(adder)"] == {"ok": "fixture.adder"}
    assert ours["global get add_k"] == {"ok": 15}
    assert ours["global doc"] == {"ok": "Adds k."}
    assert ours["fail raises"] == {"raised": "ValueError", "message": "adder: boom"}
    # our library module seen from C++ (vtable, imports_ field)
    assert ours["kind(lib)"] == {"ok": "library"}
    assert ours["imports1"] == {"ok": 1}
    assert ours["adder->add1 via imports"] == {"ok": 42}
    assert ours["adder->add1 no imports"] == {"ok": -1}
    assert ours["lib imports count"] == {"ok": 1}
    assert ours["lib->add_k via imports (C++)"] == {"ok": 101}
    assert ours["global lib get add_k"] == {"ok": 102}
    assert ours["cycle"]["raised"] == "RuntimeError"
    assert ours["imports after clear"] == {"ok": 0}
    assert ours["lib imports after clear"] == {"ok": 0}
    assert ours["load_and_call"] == {"ok": 10}
    assert ours["visit ctx"] == {"ok": "found"}
    # Error thrown by the runtime, caught by the library, and the reverse
    assert ours["catch '{'"] == {
        "ok": "ValueError: Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1) | what=Expecting "
        "property name enclosed in double quotes: line 1 column 2 "
        "(char 1)"
    }
    assert ours["catch std '[1 2]'"] == {
        "ok": "std::exception: Expecting ',' delimiter: line 1 column 4 (char 3)"
    }
    assert ours["throw"] == {"raised": "IndexError", "message": "from the library"}
    # globals answered through the vtable
    assert ours["adder mask"] == {"ok": 2}
    assert ours["lib mask"] == {"ok": 3}
    assert ours["adder inspect"] == {"ok": "source as c"}
    assert ours["lib inspect"] == {"ok": ""}
    assert ours["adder write formats"] == {"ok": ["txt", "bin"]}
    assert ours["lib write"] == {
        "raised": "RuntimeError",
        "message": "Module[library] does not support WriteToFile",
    }
    assert ours["json '[1,[2,{}],[]]' 2"] == {
        "ok": "[\n  1,\n  [\n    2,\n    {\n    }\n  ],\n  [\n  ]\n]"
    }


def test_module_sub_known_differences(
    module_sub_results: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, official = module_sub_results
    # both refuse a missing file with the loader's message
    for side in (ours, official):
        assert "cannot open shared object file" in side["load missing file"]["message"]
    # JSON nesting is capped (the reference crashes on ~100000 levels)
    assert ours["json depth 2048"] == official["json depth 2048"] == {"ok": 4096}
    assert official["json depth 2049"] == {"ok": 4098}
    assert ours["json depth 2049"] == {
        "raised": "ValueError",
        "message": "Maximum nesting depth exceeded: line 1 column 2049 (char 2048)",
    }
    # tvm::ffi::StructuralEqual::Equal is implemented (tests/test_structural.py)
    assert ours["struct_equal"] == official["struct_equal"] == {"ok": True}


# ---- lazy binding -----------------------------------------------------------

LAZY_DRIVER = r"""
import sys
import tvmffi_cli
from tvmffi_cli.ffi import library
rt_path, lib_path, mode = sys.argv[1:4]
rt = library.get_runtime(rt_path)
if mode == "plain":  # the loader-less path: a runtime without module loading
    rt.rt.pop("tvmffi_rt_library_load", None)
    rt.get_global_handle = lambda name: None
lib = tvmffi_cli.load(lib_path)
print(lib.module is None, lib._dl is not None)
if lib.module is not None:
    print(lib.ok())
"""


@pytest.mark.parametrize("side", ["ours", "official", "plain"])
def test_library_importing_undefined_symbols_loads(side: str, official_runtime: Path) -> None:
    lib = fixturebuild.build("cxx/lazy_missing.cc", headers="ours")
    undefined = (
        subprocess.run(
            ["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True, check=False
        ).stdout
        if shutil.which("nm")
        else ""
    )
    if undefined:
        assert "_ZN3tvm3ffi24FunctionNoRuntimeExportsEi" in undefined
        assert "tvmffi_fixture_defined_nowhere" in undefined
    rt = official_runtime if side == "official" else _ours()
    proc = _child(["-c", LAZY_DRIVER, str(rt), str(lib), side])
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split()
    if side == "plain":
        assert lines == ["True", "True"]
    else:
        assert lines == ["False", "False", "42"]


# ---- real libraries from public wheels ----------------------------------------


# (requirement, members to extract, libraries to dlopen). Versions pinned:
# these are the releases whose imports the runtime was checked against.
WHEELS = [
    ("jax-tvm-ffi==0.1.3", ["jax_tvm_ffi/jax_tvm_ffi.so"], ["jax_tvm_ffi/jax_tvm_ffi.so"]),
    ("xgrammar==0.2.8", ["xgrammar/libxgrammar_bindings.so"], ["xgrammar/libxgrammar_bindings.so"]),
    (
        "apache-tvm-ffi-orcjit==0.1.3",
        ["tvm_ffi_orcjit/lib/libtvm_ffi_orcjit.so"],
        ["tvm_ffi_orcjit/lib/libtvm_ffi_orcjit.so"],
    ),
    (
        "apache-tvm==0.27.0.post1",
        ["tvm/lib/libtvm_runtime.so", "tvm/lib/libtvm_runtime_extra.so"],
        ["tvm/lib/libtvm_runtime.so", "tvm/lib/libtvm_runtime_extra.so"],
    ),
    (
        "tilelang==0.1.15",
        [
            "tilelang/lib/libtvm_runtime.so",
            "tilelang/lib/libstub_cudart.so",
            "tilelang/lib/libstub_cuda.so",
            "tilelang/lib/libstub_hip.so",
            "tilelang/lib/libstub_ascendcl.so",
        ],
        ["tilelang/lib/libtvm_runtime.so"],
    ),
]


def _wheel(req: str) -> Path:
    name, version = req.split("==")
    return releases.fetch_wheel(name, version, binary_only=False)


def _extract(whl: Path, members: list[str]) -> Path:
    return releases.extract_members("cxx", [(whl, members)])


DLOPEN_DRIVER = r"""
import ctypes, os, sys
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_GLOBAL)
libc = ctypes.CDLL(None)
libc.dlopen.restype = ctypes.c_void_p
libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.dlerror.restype = ctypes.c_char_p
for p in sys.argv[2:]:
    h = libc.dlopen(p.encode(), os.RTLD_LAZY | os.RTLD_LOCAL)
    print("OK" if h else "FAIL " + libc.dlerror().decode(errors="replace"), flush=True)
"""


@pytest.mark.parametrize("req,members,libs", WHEELS, ids=[w[0] for w in WHEELS])
def test_real_library_dlopens_on_our_runtime(req: str, members: list[str], libs: list[str]) -> None:
    ours = _ours()
    root = _extract(_wheel(req), members)
    proc = _child(["-c", DLOPEN_DRIVER, str(ours), *[str(root / lib) for lib in libs]], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[: len(libs)] == ["OK"] * len(libs), proc.stdout


def test_tilelang_compiler_and_library_dlopen_on_our_runtime() -> None:
    """libtvm_compiler.so and libtilelang.so of tilelang 0.1.15 import
    StructuralEqual/Hash, ReprPrint, ToJSONGraph, ... and the 0.1.12 by-value
    json::Stringify; they also need libz3.so.4.15 from z3-solver at
    $ORIGIN/../../z3/lib."""
    ours = _ours()
    tilelang = [
        "tilelang/lib/libtvm_runtime.so",
        "tilelang/lib/libtvm_compiler.so",
        "tilelang/lib/libtilelang.so",
        "tilelang/lib/libstub_cudart.so",
        "tilelang/lib/libstub_cuda.so",
        "tilelang/lib/libstub_hip.so",
        "tilelang/lib/libstub_ascendcl.so",
    ]
    z3 = ["z3/lib/libz3.so.4.15"]
    root = releases.extract_members(
        "cxx", [(_wheel("tilelang==0.1.15"), tilelang), (_wheel("z3-solver==4.15.4.0"), z3)]
    )
    libs = [root / "tilelang/lib/libtvm_compiler.so", root / "tilelang/lib/libtilelang.so"]
    proc = _child(["-c", DLOPEN_DRIVER, str(ours), *map(str, libs)], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:2] == ["OK", "OK"], proc.stdout


def test_official_test_library_dlopens_on_our_runtime(official_runtime: Path) -> None:
    """libtvm_ffi_testing.so of the official package: no C++ imports, but it
    reads the standard type attribute column __ffi_enum__ while loading."""
    testing = official_runtime.parent / "libtvm_ffi_testing.so"
    if not testing.is_file():
        pytest.skip("the official package has no lib/libtvm_ffi_testing.so")
    proc = _child(["-c", DLOPEN_DRIVER, str(_ours()), str(testing)], timeout=120)
    if "Cannot find type attribute __ffi_enum__" in proc.stderr:
        pytest.xfail("our runtime has no standard type attribute columns yet (registry work)")
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stdout + proc.stderr[-2000:]


# ---- the C++ surface under ASan + UBSan ----------------------------------------


def test_module_sub_under_asan_ubsan(
    module_sub_results: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    """The same driver on the sanitized runtime (TVMFFI_RT_SANITIZE=ON):
    no sanitizer report and exactly the results of the plain build."""
    import test_hardening_sanitize as san

    san._need_tools()
    libdir = san.sanitized_runtime_dir()
    if libdir is None:
        pytest.skip("the sanitized runtime did not build")
    env = san.python_sanitize_env(libdir)
    sub = fixturebuild.build("cxx/module_sub.cc", headers="official")
    plain = fixturebuild.build("cxx/plain_export.c", headers="ours")
    proc = subprocess.run(
        [sys.executable, str(DRIVER), str(libdir / "libtvm_ffi.so"), str(sub), str(plain)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert san.SAN_REPORT.search(proc.stderr) is None, proc.stderr[-6000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout) == module_sub_results[0]


# ---- a real library's ModuleObj subclass (TVM's const_loader) -------------------

TVM_DRIVER = r"""
import sys, tvmffi_cli
from tvmffi_cli.ffi import errors as E
from tvmffi_cli.ffi import values as C
rt_path, tvm_runtime, plain_path = sys.argv[1:4]
lib = tvmffi_cli.load(tvm_runtime, runtime=rt_path)
def g(name):
    return C.global_func(lib.runtime, name)
def show(label, fn, *args):
    try:
        v = fn(*args)
        print(label, type(v).__name__ if isinstance(v, (C.Module, C.Function)) else repr(v))
    except E.FFIErrorBase as e:
        print(label, "raised", e.kind, e.message)
print("globals", len(lib.globals_registered))
m = g("ffi.Module.create.const_loader")({}, {})
m2 = g("ffi.Module.create.const_loader")({}, {})
plain = tvmffi_cli.load(plain_path)
show("kind", g("ffi.ModuleGetKind"), m)
show("get before imports", g("ffi.ModuleGetFunction"), m, "x", True)
show("import plain", g("ffi.ModuleImportModule"), m, plain.module)
show("get missing", g("ffi.ModuleGetFunction"), m, "nope", True)
show("mask", g("ffi.ModuleGetPropertyMask"), m)
show("formats", g("ffi.ModuleGetWriteFormats"), m)
show("implements", g("ffi.ModuleImplementsFunction"), m, "add1", False)
show("import m2", g("ffi.ModuleImportModule"), m, m2)
show("cycle", g("ffi.ModuleImportModule"), m2, m)
show("add1 via imports", lambda: g("ffi.ModuleGetFunction")(m, "add1", True)(5))
show("lib imports tvm module", g("ffi.ModuleImportModule"), plain.module, m)
show("lib -> add1", lambda: g("ffi.ModuleGetFunction")(plain.module, "add1", True)(1))
show("lib -> missing through tvm module", g("ffi.ModuleGetFunction"), plain.module, "zz", True)
show("clear", g("ffi.ModuleClearImports"), m)
# Compare the calls only: at interpreter exit the official runtime may run its
# static destructors before Python drops its last references (SIGSEGV there).
import os
sys.stdout.flush()
os._exit(0)
"""


def test_tvm_module_subclass_same_on_both_runtimes(official_runtime: Path) -> None:
    ours = _ours()
    root = _extract(_wheel("apache-tvm==0.27.0.post1"), ["tvm/lib/libtvm_runtime.so"])
    tvm_runtime = root / "tvm/lib/libtvm_runtime.so"
    plain = fixturebuild.build("cxx/plain_export.c", headers="ours")
    outs = []
    for rt in (ours, official_runtime):
        proc = _child(["-c", TVM_DRIVER, str(rt), str(tvm_runtime), str(plain)], timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(proc.stdout.splitlines())
    assert outs[0] == outs[1]
    assert "kind 'const_loader'" in outs[0]
    assert "add1 via imports 6" in outs[0]
    assert "cycle raised RuntimeError Cyclic dependency detected during import" in outs[0]
