"""The runtime under AddressSanitizer + UndefinedBehaviorSanitizer, beyond the
two core programs of test_runtime_core.py: the runtime-ext C programs
(tests/c_ext), the hardening programs (tests/c_hard) and the Python side.

The sanitized runtime is built once with CMake (TVMFFI_RT_SANITIZE=ON) into
fixtures/build/rt-sanitize-<hash of the runtime sources>/ and reused.

Python side: Python itself is not instrumented, so libasan is preloaded
(LD_PRELOAD) together with libstdc++ (ASan must see the C++ runtime's
__cxa_throw at start-up, or the first C++ exception of a fixture library
aborts in the interceptor) and the runtime is chosen with TVMFFI_RUNTIME.
Leak detection is off there (the interpreter keeps memory until exit by
design); use-after-free, overflows and UB still abort the process.

    TVMFFI_TEST_SANITIZE=1 pytest tests/test_hardening_sanitize.py

runs the Python-side runtime test files (PY_SIDE_TESTS) in that mode; the
default run does a shorter smoke of the same set-up.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fixturebuild

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
C_EXT = HERE / "c_ext"
C_HARD = HERE / "c_hard"
INC = ROOT / "runtime" / "include"

PY_SIDE_TESTS = [
    "tests/test_convert.py",
    "tests/test_library.py",
    "tests/test_call_values.py",
    "tests/test_call.py",
    "tests/test_sandbox.py",
    "tests/test_runtime_ext.py",
]

ASAN_C = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:halt_on_error=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}
# handle_segv=0 and friends: the crash-containment tests crash a worker on
# purpose and expect the signal itself, not ASan's exit status 1.
ASAN_PY = {
    "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:handle_segv=0:handle_sigbus=0:"
    "handle_sigfpe=0:handle_sigill=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}
SAN_REPORT = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|"
    r"AddressSanitizer: CHECK failed"
)


def _need_tools():
    for tool in ("cmake", "gcc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is needed for the sanitizer build")


def sanitized_runtime_dir():
    """Directory holding the ASan+UBSan libtvm_ffi.so (built once per source hash)."""
    h = hashlib.sha256()
    files = sorted((ROOT / "runtime").rglob("*")) + [ROOT / "CMakeLists.txt"]
    for f in files:
        if f.is_file() and f.suffix in (".c", ".cc", ".h", ".txt", ".map"):
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    out = fixturebuild.BUILD / f"rt-sanitize-{h.hexdigest()[:12]}"
    lib = out / "runtime" / "libtvm_ffi.so"
    if lib.is_file():
        return lib.parent
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    for args in (
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(tmp),
            "-DCMAKE_BUILD_TYPE=Debug",
            "-DTVMFFI_RT_SANITIZE=ON",
        ],
        ["cmake", "--build", str(tmp), "-j2"],
    ):
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode != 0:
            raise fixturebuild.BuildError(proc.stdout + proc.stderr)
    try:
        os.replace(tmp, out)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return lib.parent if lib.is_file() else None


def sanitized_program(src, name, flags=()):
    """A C program built with -fsanitize=address,undefined against our
    headers and linked to the sanitized runtime (cached by a hash of the
    source, headers and command)."""
    libdir = sanitized_runtime_dir()
    args = [
        "gcc",
        "-std=c11",
        "-g",
        "-O1",
        "-fsanitize=address,undefined",
        "-fno-omit-frame-pointer",
        "-D_GNU_SOURCE",
        "-pthread",
        f"-I{INC}",
        *flags,
        str(src),
        f"-L{libdir}",
        "-ltvm_ffi",
        "-ldl",
    ]
    h = hashlib.sha256(" ".join(args).encode() + Path(src).read_bytes())
    for hdr in sorted(INC.rglob("*.h")):
        h.update(hdr.read_bytes())
    out = fixturebuild.BUILD / f"san-{name}-{h.hexdigest()[:12]}"
    if not out.exists():
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        proc = subprocess.run(args + ["-o", str(tmp)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        os.replace(tmp, out)
    return out, libdir


def run_sanitized(exe, args, libdir, timeout=300):
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir), **ASAN_C)
    proc = subprocess.run(
        [str(exe), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout
    )
    report = SAN_REPORT.search(proc.stderr)
    assert report is None, f"{exe.name} {args}: sanitizer report\n{proc.stderr[-6000:]}"
    return proc


@pytest.fixture(scope="module")
def san_libdir():
    _need_tools()
    return sanitized_runtime_dir()


@pytest.fixture(scope="module")
def ours_libdir():
    return Path(fixturebuild.our_runtime()).parent


def _plain(name, libdir, args):
    """The same program built normally, run on the normal runtime: the
    sanitized run must print exactly what it prints."""
    exe = fixturebuild.build(C_EXT / f"{name}.c", headers="ours", shared=False, name=f"cext-{name}")
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    return subprocess.run(
        [str(exe), *map(str, args)], capture_output=True, text=True, env=env, timeout=120
    )


def _libbin():
    return fixturebuild.build(
        "runtime/libbin.c", headers="ours", link_runtime=False, name="libbin-"
    )


def _ctor():
    return fixturebuild.build("runtime/ctor.c", headers="ours")


def _official_containers():
    return fixturebuild.build(
        "runtime/official_containers.cc", headers="official", flags=("-Wno-unused-parameter",)
    )


EXT_RUNS = [
    ("rt_ext", lambda: ["tensor"]),
    ("rt_ext", lambda: ["bigint"]),
    ("rt_ext", lambda: ["load", _libbin(), _ctor()]),
    ("rt_ext", lambda: ["load", _libbin(), _ctor(), "loader"]),
    ("container_probe", lambda: []),
    (
        "dtype_probe",
        lambda: [
            "int8",
            "float32x4",
            "bf16",
            "int8x0",
            "complex64",
            "@3,64,4",
            "fp8_e5m2x2",
            "int99999999999",
            "",
            "@2,32,-1",
        ],
    ),
]


@pytest.mark.parametrize(
    "name,args", EXT_RUNS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(EXT_RUNS)]
)
def test_runtime_ext_programs_under_asan_ubsan(san_libdir, ours_libdir, name, args):
    exe, libdir = sanitized_program(C_EXT / f"{name}.c", name)
    argv = args()
    proc = run_sanitized(exe, argv, libdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # same output as the plain build: sanitizers change nothing observable
    plain = _plain(name, ours_libdir, argv)
    assert plain.returncode == 0
    assert proc.stdout == plain.stdout
    assert len(proc.stdout.splitlines()) >= 5


def test_official_cxx_containers_under_asan_ubsan(san_libdir, ours_libdir, official_include):
    # A C++ library built with the official headers, hosted by the sanitized
    # runtime (C++ exceptions, containers made on either side).
    exe, libdir = sanitized_program(C_EXT / "rt_ext.c", "rt_ext")
    cxx = _official_containers()
    proc = run_sanitized(exe, ["cxx", cxx], libdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "live objects delta: 0"
    assert proc.stdout == _plain("rt_ext", ours_libdir, ["cxx", cxx]).stdout


def test_hardening_programs_under_asan_ubsan(san_libdir):
    from test_hardening_stress import EXPECTED_STRESS
    from test_hardening_valgrind import CAPI_ALL_EXPECTED, basic_library

    exe, libdir = sanitized_program(C_HARD / "capi_all.c", "capi_all")
    proc = run_sanitized(exe, [basic_library()], libdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == CAPI_ALL_EXPECTED
    # the stress program at a tenth of the counts (ASan makes every atomic
    # op several times slower); the exact lines depend on the count
    n = 100000
    exe, libdir = sanitized_program(C_HARD / "stress.c", "stress")
    proc = run_sanitized(exe, [n], libdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == EXPECTED_STRESS.replace("1000000", str(n))


def _asan_preload():
    libs = []
    for cc, name in (("gcc", "libasan.so"), ("g++", "libstdc++.so.6")):
        exe = shutil.which(cc)
        if exe is None:
            return None
        p = subprocess.run(
            [exe, f"-print-file-name={name}"], capture_output=True, text=True
        ).stdout.strip()
        if not os.path.isabs(p) or not os.path.exists(p):
            return None
        libs.append(os.path.realpath(p))
    return " ".join(libs)


def python_sanitize_env(libdir):
    """Environment that makes tvmffi (and its workers) use the sanitized runtime."""
    pre = _asan_preload()
    if pre is None:
        pytest.skip("libasan.so / libstdc++.so.6 not found through gcc/g++ -print-file-name")
    env = dict(os.environ, TVMFFI_RUNTIME=str(libdir / "libtvm_ffi.so"), LD_PRELOAD=pre, **ASAN_PY)
    env.pop("TVMFFI_TEST_SANITIZE", None)
    return env


SMOKE = r"""
import sys
sys.path.insert(0, sys.argv[2])
import fixturebuild
import tvmffi_cli
lib = tvmffi_cli.load(sys.argv[1])
assert lib.add_int(40, 2) == 42
assert lib.echo_str("a string longer than seven") == "a string longer than seven"
try:
    lib.raise_value_error("boom")
except ValueError as e:
    assert "boom" in str(e), e
else:
    raise SystemExit("no error raised")
maps = open("/proc/self/maps").read()
print("sanitized runtime mapped:", sys.argv[3] in maps)
print("libasan mapped:", "libasan" in maps)
"""


def test_python_side_smoke_under_sanitizers(san_libdir, tmp_path):
    """Always on: the Python API on the sanitized runtime, with a proof that
    this runtime (not the installed one) is the one in the process."""
    env = python_sanitize_env(san_libdir)
    basic = fixturebuild.build("c/basic.c", headers="ours")
    script = tmp_path / "smoke.py"
    script.write_text(SMOKE)
    proc = subprocess.run(
        [sys.executable, str(script), str(basic), str(HERE), str(san_libdir / "libtvm_ffi.so")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert SAN_REPORT.search(proc.stderr) is None, proc.stderr[-6000:]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["sanitized runtime mapped: True", "libasan mapped: True"]


def test_python_side_setup_reports_an_overflow(san_libdir, tmp_path):
    """The preload set-up really catches memory errors in the process: an
    instrumented library that reads past a heap block is stopped by ASan."""
    env = python_sanitize_env(san_libdir)
    src = tmp_path / "overflow.c"
    src.write_text(
        "#include <stdlib.h>\nint overflow(void) { volatile char* p = malloc(8);\n"
        "  int v = p[8]; free((void*)p); return v; }\n"
    )
    so = tmp_path / "overflow.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-g", "-fsanitize=address", str(src), "-o", str(so)], check=True
    )
    proc = subprocess.run(
        [sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(so)!r}).overflow()"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in proc.stderr, proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TVMFFI_TEST_SANITIZE") != "1",
    reason="Python-side runtime tests on the ASan+UBSan runtime run only with "
    "TVMFFI_TEST_SANITIZE=1 (about a minute)",
)
def test_python_side_runtime_tests_under_sanitizers(san_libdir):
    env = python_sanitize_env(san_libdir)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PY_SIDE_TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    out = proc.stdout + proc.stderr
    assert SAN_REPORT.search(out) is None, out[-8000:]
    assert proc.returncode == 0, out[-8000:]
    assert re.search(r"\d+ passed", out), out[-2000:]


def test_type_registry_growth_under_asan_ubsan(san_libdir):
    # issue 11: many methods/fields on one type, with rejected registrations
    # in between, and attribute columns that grow; no overflow, no leak.
    exe, libdir = sanitized_program(C_HARD / "type_registry.c", "type_registry")
    proc = run_sanitized(exe, [100], libdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == (
        "methods 100 fields 100\n"
        "read back 100 methods and 100 fields; 25 rejected\n"
        f"attr sum {7 + sum(range(100))}\n"
    )


def test_registry_calls_under_asan_ubsan(san_libdir, ours_libdir):
    # The calls of the registry parity test (List, Dict growth and erase,
    # conversion hooks, the official test library) on the sanitized runtime:
    # no report, and the same results as on the normal build.
    official = fixturebuild.official_package_dir()
    if official is None or not (official / "lib" / "libtvm_ffi_testing.so").is_file():
        pytest.skip("the official apache-tvm-ffi package (test extra) is not installed")
    testing = str(official / "lib" / "libtvm_ffi_testing.so")
    script = str(HERE / "registry_calls.py")
    env = python_sanitize_env(san_libdir)
    san = subprocess.run(
        [sys.executable, script, str(san_libdir / "libtvm_ffi.so"), "--testing", testing],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=HERE,
        check=False,
    )
    assert SAN_REPORT.search(san.stderr) is None, san.stderr[-6000:]
    assert san.returncode == 0, san.stderr[-3000:]
    plain = subprocess.run(
        [sys.executable, script, str(ours_libdir / "libtvm_ffi.so"), "--testing", testing],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE,
        check=False,
    )
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert san.stdout == plain.stdout


def test_list_dict_lifecycle_under_asan_ubsan(san_libdir, ours_libdir):
    # List/Dict growth, in-place changes, erase, self-replacement and the
    # conversion hooks: no overflow, no leak, every object released.
    exe, libdir = sanitized_program(C_HARD / "list_dict.c", "list_dict")
    proc = run_sanitized(exe, [], libdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == (
        "round 0: dict size 133\nround 1: dict size 133\n"
        "round 2: dict size 133\nlist size 220\n"
        "converted to type 71\nconverted to type 72\n"
        "failures 0, live objects delta 0\n"
    )
