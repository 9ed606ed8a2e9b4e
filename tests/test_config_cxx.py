"""C++ builds from `tvmffi config` alone (issue 20 item 6): --cxxflags and the
CMake package add apache-tvm-ffi's C++ include directory when that package is
installed, and say exactly what to install when it is not. The library built
uses the official macros and is then called through `tvmffi call`."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fixturebuild

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "fixtures" / "config"
SCHEMA = json.loads((ROOT / "src/tvmffi_cli/schemas/config.schema.json").read_text())


def tvmffi(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _needs_official():
    if fixturebuild.official_include() is None:
        pytest.skip("apache-tvm-ffi is not installed (pip install '.[test]')")
    if shutil.which("g++") is None:
        pytest.skip("no g++ on PATH")


def _call_both(lib):
    r = tvmffi("call", str(lib), "add_ints", "40", "2")
    assert (r.returncode, r.stdout) == (0, "42\n"), r.stderr
    r = tvmffi("call", str(lib), "greet", "cxx")
    assert (r.returncode, r.stdout) == (0, '"hello cxx"\n'), r.stderr


def test_cxxflags_name_both_include_dirs():
    _needs_official()
    r = tvmffi("config", "--cxxflags")
    assert r.returncode == 0, r.stderr
    ours = tvmffi("config", "--includedir").stdout.strip()
    official = str(fixturebuild.official_include().resolve())
    assert r.stdout.split() == [f"-I{ours}", f"-I{official}", "-std=c++17"]
    doc = json.loads(tvmffi("config", "--json").stdout)
    import jsonschema

    jsonschema.validate(doc, SCHEMA)
    assert doc["cxx_includedir"] == official


def test_build_with_official_macros_from_config_flags_alone(tmp_path):
    _needs_official()
    r = tvmffi("config", "--cxxflags", "--ldflags", "--libs")
    assert r.returncode == 0, r.stderr
    flags = shlex.split(r.stdout)
    out = tmp_path / "libcxx_macros.so"
    cc = subprocess.run(
        ["g++", "-shared", "-fPIC", str(SRC / "cxx_macros.cc"), *flags, "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert cc.returncode == 0, cc.stderr
    _call_both(out)


def test_without_apache_tvm_ffi_cxxflags_exit_2_naming_the_package(tmp_path):
    # A `tvm_ffi` of our own making that has no include directory shadows the
    # installed one; the distribution is hidden by an empty metadata path.
    shadow = tmp_path / "site"
    (shadow / "tvm_ffi").mkdir(parents=True)
    (shadow / "tvm_ffi" / "__init__.py").write_text("raise SystemExit('imported')\n")
    code = (
        "import sys, importlib.metadata as m\n"
        f"sys.path.insert(0, {str(shadow)!r})\n"
        "m.distribution = lambda n: (_ for _ in ()).throw(m.PackageNotFoundError(n))\n"
        "from tvmffi_cli.cli.main import main\n"
        "main(sys.argv[1:])\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "config", "--cflags", "--cxxflags"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert "apache-tvm-ffi" in r.stderr and "pip install 'tvmffi[cxx]'" in r.stderr
    assert r.stderr.startswith("tvmffi: error: --cxxflags: the C++ headers (tvm/ffi/tvm_ffi.h)")
    r = subprocess.run(
        [sys.executable, "-c", code, "config", "--json"], capture_output=True, text=True
    )
    assert r.returncode == 0 and "imported" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["cxxflags"] is None and doc["cxx_includedir"] is None


def _cmake(src, build, *defs):
    r = subprocess.run(
        ["cmake", "-S", str(src), "-B", str(build), *defs], capture_output=True, text=True
    )
    return r


@pytest.fixture
def cmake_project(tmp_path):
    _needs_official()
    if shutil.which("cmake") is None:
        pytest.skip("no cmake on PATH")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SRC / "CMakeLists.txt", src)
    shutil.copy(SRC / "cxx_macros.cc", src)
    return src


def test_cmake_find_package_builds_the_cxx_library(cmake_project, tmp_path):
    cmakedir = Path(tvmffi("config", "--cmakedir").stdout.strip())
    installed = cmakedir / "tvm_ffi-config.cmake"
    source = ROOT / "runtime" / "cmake" / "tvm_ffi-config.cmake"
    if installed.read_bytes() != source.read_bytes():
        pytest.skip(
            "the installed CMake package is older than runtime/cmake (tools/dev-rebuild.sh)"
        )
    build = tmp_path / "build"
    r = _cmake(cmake_project, build, f"-DCMAKE_PREFIX_PATH={cmakedir}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "C only" not in r.stderr
    r = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    _call_both(build / "libcxx_macros.so")


def test_cmake_without_cxx_headers_names_the_package(cmake_project, tmp_path):
    # The package as installed, minus apache-tvm-ffi next to it: a prefix of
    # links to our include/lib and the config file from the source tree.
    prefix = tmp_path / "prefix"
    (prefix / "share" / "cmake" / "tvm_ffi").mkdir(parents=True)
    shutil.copy(ROOT / "runtime/cmake/tvm_ffi-config.cmake", prefix / "share/cmake/tvm_ffi")
    os.symlink(tvmffi("config", "--includedir").stdout.strip(), prefix / "include")
    os.symlink(tvmffi("config", "--libdir").stdout.strip(), prefix / "lib")
    cml = cmake_project / "CMakeLists.txt"
    r = _cmake(cmake_project, tmp_path / "b1", f"-DCMAKE_PREFIX_PATH={prefix}")
    assert r.returncode == 0, r.stderr
    assert "pip install 'tvmffi[cxx]'" in r.stderr and "C only" in r.stderr
    cml.write_text(cml.read_text().replace("CONFIG REQUIRED", "CONFIG REQUIRED COMPONENTS CXX"))
    r = _cmake(cmake_project, tmp_path / "b2", f"-DCMAKE_PREFIX_PATH={prefix}")
    assert r.returncode != 0
    assert "pip install 'tvmffi[cxx]'" in r.stderr + r.stdout
    # Naming the headers' directory by hand is enough.
    inc = fixturebuild.official_include().resolve()
    defs = (f"-DCMAKE_PREFIX_PATH={prefix}", f"-Dtvm_ffi_CXX_INCLUDE_DIR={inc}")
    r = _cmake(cmake_project, tmp_path / "b3", *defs)
    assert r.returncode == 0 and "C only" not in r.stderr, r.stdout + r.stderr
