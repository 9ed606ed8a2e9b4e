"""The runtime core (objects, types, strings, errors, functions, registry,
environment, instrumentation) through C programs written against our header
and linked to our libtvm_ffi.so; exact output compared line by line."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import fixturebuild
from tvmffi_cli.abi.capi import C_API_NAMES as _C_API

ROOT = Path(__file__).resolve().parents[1]
C_DIR = Path(__file__).resolve().parent / "c"

C_API_NAMES = sorted(_C_API)

RT_NAMES = """
tvmffi_rt_live_objects tvmffi_rt_live_objects_of_type tvmffi_rt_strong_count
tvmffi_rt_weak_count tvmffi_rt_error_pending tvmffi_rt_type_index_valid
tvmffi_rt_set_checking tvmffi_rt_violation_count tvmffi_rt_violations
tvmffi_rt_list_globals tvmffi_rt_type_index_end tvmffi_rt_time_calls
""".split()

STATIC_TYPES = [
    (0, "None"),
    (1, "int"),
    (2, "bool"),
    (3, "float"),
    (4, "void*"),
    (5, "DataType"),
    (6, "Device"),
    (7, "DLTensor*"),
    (8, "const char*"),
    (9, "TVMFFIByteArray*"),
    (10, "ObjectRValueRef"),
    (11, "ffi.SmallStr"),
    (12, "ffi.SmallBytes"),
    (13, "ffi.Unchanged"),
]
STATIC_OBJECTS = [
    (64, "ffi.Object"),
    (65, "ffi.String"),
    (66, "ffi.Bytes"),
    (67, "ffi.Error"),
    (68, "ffi.Function"),
    (69, "ffi.Shape"),
    (70, "ffi.Tensor"),
    (71, "ffi.Array"),
    (72, "ffi.Map"),
    (73, "ffi.Module"),
    (74, "ffi.OpaquePyObject"),
    (75, "ffi.List"),
    (76, "ffi.Dict"),
    (77, "ffi.VisitInterrupt"),
    (78, "ffi.BigInt"),
]


def _types_block():
    lines = [
        f"type {i}: key={k} depth=0 ancestors=[] fields=0 methods=0 metadata=no"
        for i, k in STATIC_TYPES
    ]
    for i, k in STATIC_OBJECTS:
        anc = "" if i == 64 else "64"
        # ffi.VisitInterrupt has its reflected `value` field and ffi.Module its
        # `imports_`, as in the official
        fields = 1 if k in ("ffi.VisitInterrupt", "ffi.Module") else 0
        # these have metadata (structural kind Unsupported), as in the official
        md = "yes" if i in (64, 73, 77, 78) else "no"
        lines.append(
            f"type {i}: key={k} depth={0 if i == 64 else 1} ancestors=[{anc}] "
            f"fields={fields} methods=0 metadata={md}"
        )
    return "\n".join(lines)


EXPECTED_CORE = """\
version 0.1.16
stream unset: (nil)
set stream: old=(nil) now=0x10 other_dev=(nil)
set again: old=0x10 now=0x20
cleared: (nil)
check signals: 0
register capi: 0 ctx: 0 syslib: 0
init once: rc=0 calls=1 set=1
init once again: rc=0 calls=1
deinit once: rc=0 calls=1 null=1
deinit again: rc=0 calls=1
failing init: rc=-1 still_null=1
  error: RuntimeError: init failed
default allocator present: 1
custom installed: 1
custom: allocs=1 frees=0
custom after release: allocs=1 frees=1
restored default: 1
default tensor allocator present: 1
set tls allocator: prev_null=1 now_mine=1
unset: prev_mine=1 back_to_default=1
opaque type=74 handle=7 strong=1 weak=1
live delta=1 of_type delta=1
after 2 incref strong=3 combined=0x100000003
after 2 decref strong=1 deleted=0
after last decref deleted=7 live delta=0
create opaque with POD index: rc=-1
  error: ValueError: TVMFFIObjectCreateOpaque: type index 1 is not an object type
incref/decref NULL: 0 0
ranges live delta=3 of_type deltas=1,1,0
ranges released deleted=3 live delta=0
weak held: deleted=5 weak=1 live delta=0
weak released: live delta=-1
@TYPES@
type 14: none
type 79: none
KeyToIndex ffi.Map rc=0 idx=72
KeyToIndex missing rc=-1
  error: KeyError: Cannot find type `no.such.Type`
alloc: A>=128:1 B=A+1 B1=B+1 B2=B+2 B2a=B2+1
B3 (no slot left, parent forbids overflow) = -1
  error: RuntimeError: type `test.B3`: parent `test.B` has no child slot left
again A same=1
query B2a same=1
query missing=-2
B2a depth=3 ancestors=64,B,B2
C after B's range: 1
valid: A=1 13=1 14=0 78=1 79=0 end>B2a=1
static 1000: 1000
static 1000 again (taken): -1
  error: ValueError: type `test.Static2`: static type index 1000 is already taken
method holds fn: strong=2
type dyn(ok): key=test.A depth=1 ancestors=[64] fields=2 methods=1 metadata=yes
field0 default: type=65 len=27 "a default longer than seven"
field0 name=value doc=the value offset=24; field1=other
getter -> 41
metadata doc=type A total_size=32 kind=1 creator_called=1
method name=inc type=68
register field on bad type rc=-1
  error: ValueError: TVMFFITypeRegisterField: type index 99999 is not registered
column before: NULL
column: begin=0 size>A=1 [A]=5 [Str]=6 [Bytes].type=0
column after a refused second value [A]=5
string sizes 0..200: bad=0
str abc: type=11 len=3 "abc"
  small_str_len=3 v_bytes[3]=0
str 7: type=11 len=7 "1234567"
str 8: type=65 len=8 "12345678"
  heap: data follows cell=1 nul=1 strong=1
bytes a\\0b: type=12 len=3 mid=0
bytes 14: type=66 size=14 byte10=0 tail=abc
str empty: type=11 len=0 ""
view raw short: type=11 len=5 "short"
view raw long: type=65 len=30 "a raw string longer than seven"
view bytearray: type=66 len=15 "bytes-view-long"
view object: same=1 strong=2
rvalue ref moved: same=1 slot_null=1 strong=1
rvalue ref again rc=-1
  error: ValueError: RValueRef already moved
view float: type=3 v=2.5
view device: type=6 dev=2:3
function type=68 cpp_call=(nil)
call add_one(41): rc=0 type=1 v=42
call add_one("x"): rc=-1
  error: TypeError: add_one expects one int
direct safe_call: rc=0 v=2
call with self: 902
set global: 0
set again without override: -1
  error: RuntimeError: Global Function `test.add_one` is already registered
get global: same=1 strong=3
set with override: 0
get after override: is_g=1 call=901
get missing: rc=0 out=(nil)
set non-function: -1
  error: TypeError: global `test.add_one` must be a Function object
set from method info: 0
method info without function: -1
  error: TypeError: method info of `test.from_method_info` does not hold a Function
remove existing: rc=0 type=2 v=1
remove again: v=0
get removed: (nil)
re-add removed: 0
names functor: count>5=1 seen=2 sorted=1
names functor out of range: rc=-1 kind=IndexError
ffi.String(raw): type=65 len=12 "hello world!"
ffi.String(1): rc=-1
  error: TypeError: Mismatched type on argument #0 when calling: `ffi.String(0: str) -> str`. \
Expected `str` but got `int`
ffi.Bytes(bytearray): type=12 len=2 "xy"
self deleter after last ref (registry holds g): 0
pending initially: 0
pending after raise: 1
moved: type=67 kind=ValueError message=bad value bt_len=0 strong=1 pending=0
move with nothing raised: (nil)
parts: TypeError: Argument 1 mismatch in `f(x)`
created: kind=RuntimeError message=inner backtrace=  File "a.c", line 1, in f
appended:   File "a.c", line 1, in f
  File "b.c", line 2, in g
replaced:   File "b.c", line 2, in g
with cause: cause_is_inner=1 extra_is_ctx=1 inner.strong=2 ctx.strong=2 bt_len=0
set raised: outer.strong=2
after replace: inner.strong=1 ctx.strong=1
replaced: KeyError: replaces the previous
backtrace:   File "file.c", line 12, in myfn
backtrace empty: 0
null kind: RuntimeError: \

violations: 2
json starts=1 has_decref=1 has_incref=1
time_calls: rc=0
time_calls rounds positive: 1
time_calls failing: rc=-1
  error: TypeError: add_one expects one int
time_calls bad args: rc=-1
  error: ValueError: tvmffi_rt_time_calls: bad arguments
list_globals: rc=0 type=71
pending at end: 0
""".replace("@TYPES@", _types_block())

EXPECTED_THREADS = """\
refcount: counts intact=1
refcount: each deleted once=1
errors: wrong fetches=0
registry: bad=0 present=2000
types: agree=1 distinct=1
init once: calls=1 bad=0
handoff: live after alloc=+40000 strings=+40000
handoff: live after free=+0
"""


def _our_runtime():
    return Path(fixturebuild.our_runtime())


def _build_prog(name, flags=()):
    return fixturebuild.build(
        C_DIR / f"{name}.c", name=name, headers="ours", shared=False, flags=["-O1", *flags]
    )


def _run(exe, libdir, env_extra=None, timeout=120):
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    env.update(env_extra or {})
    return subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=timeout)


def _assert_same(out, expected):
    got, want = out.splitlines(), expected.splitlines()
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"line {i + 1}: got {g!r}, want {w!r}"
    assert len(got) == len(want), f"got {len(got)} lines, want {len(want)}:\n{out}"


def test_core_program_exact_output():
    exe = _build_prog("rt_core")
    proc = _run(exe, _our_runtime().parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _assert_same(proc.stdout, EXPECTED_CORE)


def test_thread_stress_exact_output():
    exe = _build_prog("rt_threads", flags=["-pthread"])
    proc = _run(exe, _our_runtime().parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _assert_same(proc.stdout, EXPECTED_THREADS)


def _dynsym(lib):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run(
        [nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-2:-1] == ["T"]}


def test_exports_all_c_api_names_and_soname():
    lib = _our_runtime()
    names = _dynsym(lib)
    missing = [n for n in C_API_NAMES + RT_NAMES if n not in names]
    assert not missing, f"not exported: {missing}"
    assert len(C_API_NAMES) == 50
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    dyn = subprocess.run(
        [readelf, "-d", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"\(SONAME\)\s+Library soname: \[libtvm_ffi\.so\]", dyn), dyn
    # internal helpers stay hidden
    assert not [n for n in names if n.startswith("rt_")]


def test_same_names_as_official(official_runtime):
    official = {n for n in _dynsym(official_runtime) if n.startswith("TVMFFI")}
    assert official == set(C_API_NAMES)


def test_runtime_sources_compile_warning_free():
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc is not installed")
    src = ROOT / "runtime" / "src"
    sources = sorted(src.rglob("*.c"))  # one directory per layer
    assert len(sources) >= 15, sources
    for c in sources:
        proc = subprocess.run(
            [
                cc,
                "-std=c11",
                "-D_GNU_SOURCE",
                "-DTVM_FFI_EXPORTS",
                "-fPIC",
                "-fvisibility=hidden",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                f"-I{ROOT / 'runtime' / 'include'}",
                f"-I{src}",
                "-c",
                str(c),
                "-o",
                os.devnull,
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"{c.name}:\n{proc.stderr}"


def test_headers_compile_as_c_and_cxx(tmp_path):
    inc = ROOT / "runtime" / "include"
    src = (
        "#include <tvm/ffi/c_api.h>\n#include <tvm/ffi/extra/c_env_api.h>\n"
        "#include <tvmffi/rt.h>\nint main(void) { return 0; }\n"
    )
    for lang, cc, std in (("c", "gcc", "-std=c11"), ("c++", "g++", "-std=c++17")):
        exe = shutil.which(cc)
        if exe is None:
            pytest.skip(f"{cc} is not installed")
        f = tmp_path / f"h.{'c' if lang == 'c' else 'cc'}"
        f.write_text(src)
        proc = subprocess.run(
            [
                exe,
                std,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                f"-I{inc}",
                "-c",
                str(f),
                "-o",
                os.devnull,
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"{lang}:\n{proc.stderr}"


def test_sanitizer_build_runs_clean(tmp_path):
    """Build the runtime with TVMFFI_RT_SANITIZE=ON (ASan + UBSan) and run
    both C programs against it: same output, no sanitizer report."""
    cmake = shutil.which("cmake")
    if cmake is None or shutil.which("gcc") is None:
        pytest.skip("cmake and gcc are needed for the sanitizer build")
    build = tmp_path / "build"
    for args in (
        [
            cmake,
            "-S",
            str(ROOT),
            "-B",
            str(build),
            "-DCMAKE_BUILD_TYPE=Debug",
            "-DTVMFFI_RT_SANITIZE=ON",
        ],
        [cmake, "--build", str(build), "-j2"],
    ):
        proc = subprocess.run(args, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    libdir = build / "runtime"
    assert (libdir / "libtvm_ffi.so").is_file()
    inc = ROOT / "runtime" / "include"
    env = {
        "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }
    for name, expected in (("rt_core", EXPECTED_CORE), ("rt_threads", EXPECTED_THREADS)):
        exe = tmp_path / name
        proc = subprocess.run(
            [
                "gcc",
                "-std=c11",
                "-g",
                "-O1",
                "-fsanitize=address,undefined",
                "-pthread",
                f"-I{inc}",
                str(C_DIR / f"{name}.c"),
                f"-L{libdir}",
                "-ltvm_ffi",
                "-o",
                str(exe),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
        proc = _run(exe, libdir, env_extra=env, timeout=300)
        report = proc.stderr
        assert "Sanitizer" not in report and "runtime error:" not in report, report
        assert proc.returncode == 0, proc.stdout + report
        _assert_same(proc.stdout, expected)
