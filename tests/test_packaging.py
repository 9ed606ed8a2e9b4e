"""What a user installs: the wheel's tags and glibc floor, the sdist's files,
license metadata, declared dependencies, installability on every claimed
Python, and the CMake package that `tvmffi config --cmakedir` points at."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The documented floors (README "Install"): glibc 2.17 for the symbols the
# runtime takes; libstdc++ within the manylinux_2_24 policy the tag names.
GLIBC_FLOOR = (2, 17)
GLIBCXX_MAX = (3, 4, 22)
CXXABI_MAX = (1, 3, 11)
# Libraries a manylinux wheel may need from the system (the policy's list).
MANYLINUX_LIBS = re.compile(
    r"^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1|"
    r"libstdc\+\+\.so\.6|ld-linux[-a-z0-9_.]*\.so\.[12])$"
)
# pip's words for a build that could not fetch the build backend.
_OFFLINE = re.compile(
    r"No matching distribution|Could not find a version|"
    r"Failed to establish a new connection|Network is unreachable"
)


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _build(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        if _OFFLINE.search(r.stdout + r.stderr):
            pytest.skip(
                f"cannot build the {what}: the build backend cannot be fetched "
                "(package index unreachable)"
            )
        raise AssertionError(f"{what} build failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _build([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(out)], "wheel")
    (whl,) = out.glob("*.whl")
    return whl


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("build") is None:
        pytest.skip("the `build` package (test extra) is not installed")
    out = tmp_path_factory.mktemp("sdist")
    _build([sys.executable, "-m", "build", "--sdist", "-o", str(out), "."], "sdist")
    (tgz,) = out.glob("*.tar.gz")
    return tgz


# ---------------------------------------------------------------- wheel


def test_wheel_is_py3_none_manylinux(wheel: Path) -> None:
    from packaging.utils import parse_wheel_filename

    name, version, _build_tag, tags = parse_wheel_filename(wheel.name)
    machine = os.uname().machine
    print("wheel:", wheel.name)
    assert name == "tvmffi"
    assert {(t.interpreter, t.abi) for t in tags} == {("py3", "none")}
    assert {t.platform for t in tags} == {f"manylinux_2_24_{machine}"}
    with zipfile.ZipFile(wheel) as z:
        wheel_meta = z.read(f"tvmffi-{version}.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: false" in wheel_meta


def _runtime_from_wheel(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as z:
        z.extract("tvmffi_cli/lib/libtvm_ffi.so", dest)
    return dest / "tvmffi_cli" / "lib" / "libtvm_ffi.so"


def _needed_versions(lib: Path) -> tuple[list[str], dict[str, list[str]]]:
    """DT_NEEDED names and, per needed file, the symbol versions asked of it."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection

    with open(lib, "rb") as f:
        elf = ELFFile(f)
        needed: list[str] = []
        versions: dict[str, list[str]] = {}
        for sec in elf.iter_sections():
            if isinstance(sec, DynamicSection):
                needed += [
                    str(getattr(t, "needed", ""))
                    for t in sec.iter_tags()
                    if t.entry.d_tag == "DT_NEEDED"
                ]
            elif isinstance(sec, GNUVerNeedSection):
                for verneed, auxes in sec.iter_versions():
                    versions[str(verneed.name)] = [str(a.name) for a in auxes]
    return needed, versions


def _ver(name: str, prefix: str) -> tuple[int, ...]:
    return tuple(int(x) for x in name[len(prefix) :].split("."))


def test_wheel_runtime_needs_no_glibc_newer_than_the_floor(wheel: Path, tmp_path: Path) -> None:
    lib = _runtime_from_wheel(wheel, tmp_path)
    needed, versions = _needed_versions(lib)
    glibc = sorted(
        {v for vs in versions.values() for v in vs if v.startswith("GLIBC_")},
        key=lambda v: _ver(v, "GLIBC_"),
    )
    print("DT_NEEDED:", needed, "GLIBC versions:", glibc)
    assert glibc, "no GLIBC_ symbol versions found: the check would be vacuous"
    too_new = [v for v in glibc if _ver(v, "GLIBC_") > GLIBC_FLOOR]
    assert not too_new, f"libtvm_ffi.so needs {too_new}, above the glibc 2.17 floor"
    cxx = {v for vs in versions.values() for v in vs if v.startswith(("GLIBCXX_", "CXXABI_"))}
    assert cxx, "no libstdc++ symbol versions found: the check would be vacuous"
    too_new_cxx = [
        v
        for v in cxx
        if (
            _ver(v, "GLIBCXX_") > GLIBCXX_MAX
            if v.startswith("GLIBCXX_")
            else _ver(v, "CXXABI_") > CXXABI_MAX
        )
    ]
    assert not too_new_cxx, f"libtvm_ffi.so needs {too_new_cxx}, above manylinux_2_24"
    assert all(MANYLINUX_LIBS.match(n) for n in needed), needed


def test_glibc_check_catches_an_unpinned_build(tmp_path: Path) -> None:
    """The same check on the runtime built without the pins finds GLIBC_2.34
    (on a build machine with glibc >= 2.34; older ones cannot produce it)."""
    libc_ver = os.confstr("CS_GNU_LIBC_VERSION") or ""
    m = re.match(r"glibc (\d+)\.(\d+)", libc_ver)
    if not m or (int(m.group(1)), int(m.group(2))) < (2, 34):
        pytest.skip(f"build machine has {libc_ver or 'no glibc'}; the unpinned build needs 2.34+")
    build = tmp_path / "b"
    for cmd in (
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build),
            "-DTVMFFI_RT_GLIBC_FLOOR=OFF",
            "-DCMAKE_BUILD_TYPE=Release",
        ],
        ["cmake", "--build", str(build), "-j2"],
    ):
        r = subprocess.run(cmd, check=False, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    _needed, versions = _needed_versions(build / "runtime" / "libtvm_ffi.so")
    assert "GLIBC_2.34" in versions.get("libc.so.6", [])


def test_wheel_contents_and_license_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read("tvmffi-0.1.0.dist-info/METADATA").decode()
        lic = z.read("tvmffi-0.1.0.dist-info/licenses/LICENSE").decode()
    for need in (
        "tvmffi_cli/lib/libtvm_ffi.so",
        "tvmffi_cli/include/tvm/ffi/c_api.h",
        "tvmffi_cli/include/dlpack/dlpack.h",
        "tvmffi_cli/share/cmake/tvm_ffi/tvm_ffi-config.cmake",
        "tvmffi_cli/cli/main.py",
        "tvmffi_cli/abi/release_exports.py",  # the release export table
        "tvmffi_cli/schemas/config.schema.json",
        "tvmffi_cli/docs/checks.md",  # `tvmffi conform --help` points to it
        "tvmffi_cli/docs/security.md",  # and to this (--no-sandbox's help too)
    ):
        assert need in names, need
    assert "License-Expression: Apache-2.0" in meta.splitlines()
    assert "Requires-Python: >=3.9" in meta.splitlines()
    for minor in range(9, 14):
        assert f"Classifier: Programming Language :: Python :: 3.{minor}" in meta
    assert "Apache License" in lic and "Version 2.0, January 2004" in lic
    assert lic == (ROOT / "LICENSE").read_text()


# ---------------------------------------------------------------- sdist


def _git_files() -> set[str]:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: nothing to compare the sdist with")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    # Files not added yet but not ignored either (a developer's tree) also go
    # in; a clean CI checkout has none.
    others = subprocess.run(
        ["git", "ls-files", "-z", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {f for f in tracked + others.split("\0") if f and (ROOT / f).is_file()}


def test_sdist_holds_exactly_the_git_tracked_files(sdist: Path) -> None:
    with tarfile.open(sdist) as t:
        members = [m.name.split("/", 1)[1] for m in t.getmembers() if m.isfile() and "/" in m.name]
    files = set(members)
    print(
        f"sdist: {sdist.name}, {len(files)} files;",
        ", ".join(
            f"{top}: {sum(1 for f in files if f.split('/')[0] == top)}"
            for top in sorted({f.split("/")[0] for f in files})
        ),
    )
    assert len(members) == len(files)
    expected = _git_files() | {"PKG-INFO"}
    assert files == expected, (sorted(files - expected), sorted(expected - files))
    for bad in ("build/", ".venv/", "fixtures/build/"):
        assert not any(f.startswith(bad) for f in files), bad
    assert not any(f.endswith((".so", ".o", ".pyc")) for f in files)
    assert "LICENSE" in files


# ---------------------------------------------------------------- metadata


def _pyproject() -> dict[str, object]:
    try:
        import tomllib
    except ImportError:
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return dict(tomllib.load(f))


# distribution name -> the module it provides
_IMPORT_NAME = {"pyelftools": "elftools"}


def test_every_declared_dependency_is_imported() -> None:
    from packaging.requirements import Requirement

    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    source = "\n".join(p.read_text() for p in (ROOT / "src").rglob("*.py"))
    unused = []
    for text in project["dependencies"]:
        name = Requirement(text).name
        mod = _IMPORT_NAME.get(name, name)
        if not re.search(rf"^\s*(import|from)\s+{re.escape(mod)}\b", source, re.MULTILINE):
            unused.append(name)
    assert unused == []


def test_source_has_no_syntax_newer_than_python_3_9() -> None:
    """ruff, told the oldest claimed Python, flags match statements, PEP 604
    unions evaluated at run time (FA102) and other 3.10+ syntax."""
    ruff = shutil.which("ruff") or (
        str(Path(sys.executable).parent / "ruff")
        if (Path(sys.executable).parent / "ruff").exists()
        else None
    )
    if ruff is None:
        pytest.skip("ruff is not installed (pip install ruff)")
    r = subprocess.run(
        [
            ruff,
            "check",
            "--no-cache",
            "--target-version",
            "py39",
            "--select",
            "FA102",
            "--output-format",
            "concise",
            "src",
            "tools",
        ],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # The check itself must catch 3.10 syntax.
    probe = subprocess.run(
        [
            ruff,
            "check",
            "--no-cache",
            "--isolated",
            "--target-version",
            "py39",
            "--select",
            "FA102",
            "--stdin-filename",
            "probe.py",
            "-",
        ],
        input="def f(x: int | None) -> None:\n    match x:\n        case _:\n            pass\n",
        check=False,
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 1 and "FA102" in probe.stdout and "match" in probe.stdout


def test_requirement_markers_are_judged_for_the_target_python() -> None:
    rd = _tool("resolve_deps")
    reqs = rd.requirements_for("3.9")
    names = [r.split(">")[0].split("=")[0].split("<")[0].split(";")[0] for r in reqs]
    assert "click" in names and "pytest" in names and "scikit-build-core" in names
    assert all(";" not in r for r in reqs)
    assert "macholib" not in names


def test_dependencies_resolve_to_wheels_on_every_claimed_python() -> None:
    """pip resolves runtime + test + build requirements to existing wheels for
    3.9 .. 3.13 (five resolutions in parallel), and the same resolution fails
    where a wheel is missing (numpy>=2.1 has none for 3.9)."""
    rd = _tool("resolve_deps")
    assert rd.CLAIMED == ("3.9", "3.10", "3.11", "3.12", "3.13")
    assert _pyproject()["project"]["requires-python"] == ">=3.9"  # type: ignore[index]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=6) as pool:
        futs = [pool.submit(rd.resolve, v, 300.0) for v in rd.CLAIMED]
        neg = pool.submit(rd.resolve, "3.9", 300.0, ("numpy>=2.1",))
        results = [f.result() for f in futs]
        negative = neg.result()
    for r in results:
        print(
            f"python {r.python}: {'ok' if r.ok else 'FAILED: ' + r.message}", " ".join(r.installed)
        )
    if all(r.offline for r in results):
        pytest.skip("package index unreachable: " + results[0].message)
    bad = [(r.python, r.message) for r in results if not r.ok]
    assert not bad, bad
    for r in results:
        assert any(i.startswith("apache-tvm-ffi==") for i in r.installed), r.python
        assert any(i.startswith("numpy==") for i in r.installed), r.python
    assert not negative.ok and not negative.offline, negative


def test_an_unreachable_index_counts_as_offline_not_as_missing_wheels() -> None:
    """What makes the resolution test skip instead of fail: pip could not
    reach the index (here an address nothing answers on, one retry)."""
    rd = _tool("resolve_deps")
    r = rd.resolve(
        "3.9",
        120.0,
        env={
            "PIP_INDEX_URL": "https://192.0.2.1:9/simple",
            "PIP_EXTRA_INDEX_URL": "",
            "PIP_FIND_LINKS": "",
            "PIP_CONFIG_FILE": os.devnull,
        },
    )
    assert not r.ok and r.offline, r


# ---------------------------------------------------------------- CMake package


def test_cmake_project_builds_and_runs_against_the_package(tmp_path: Path) -> None:
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    tv = [sys.executable, "-m", "tvmffi_cli"]
    cmakedir = subprocess.run(
        [*tv, "config", "--cmakedir"], check=False, capture_output=True, text=True
    )
    assert cmakedir.returncode == 0, cmakedir.stderr
    libfile = subprocess.run(
        [*tv, "config", "--libfiles"], check=False, capture_output=True, text=True
    ).stdout.strip()
    assert (Path(cmakedir.stdout.strip()) / "tvm_ffi-config.cmake").is_file()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\n"
        "project(use_tvm_ffi LANGUAGES C)\n"
        "find_package(tvm_ffi CONFIG REQUIRED)\n"
        "add_executable(probe probe.c)\n"
        "target_link_libraries(probe PRIVATE tvm_ffi::shared ${CMAKE_DL_LIBS})\n"
        "add_library(hdr_only MODULE hdr.c)\n"
        "target_link_libraries(hdr_only PRIVATE tvm_ffi::header)\n"
        'file(WRITE "${CMAKE_BINARY_DIR}/vars.txt" "${tvm_ffi_LIB_FILES}\\n'
        '${tvm_ffi_INCLUDE_DIR}\\n${tvm_ffi_DLPACK_INCLUDE_DIR}\\n")\n'
    )
    (proj / "hdr.c").write_text(
        "#include <tvm/ffi/c_api.h>\n#include <dlpack/dlpack.h>\n"
        "int hdr_dtype_code(void) { return kDLFloat; }\n"
    )
    (proj / "probe.c").write_text(r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
int main(void) {
  TVMFFIByteArray key = {"ffi.String", strlen("ffi.String")};
  int32_t idx = -1;
  if (TVMFFITypeKeyToIndex(&key, &idx) != 0) return 3;
  TVMFFIByteArray s = {"float32x4", strlen("float32x4")};
  DLDataType dt;
  if (TVMFFIDataTypeFromString(&s, &dt) != 0) return 4;
  Dl_info info;
  if (!dladdr((void*)&TVMFFITypeKeyToIndex, &info)) return 5;
  printf("%d %d %d %d\n%s\n", (int)idx, dt.code, dt.bits, dt.lanes, info.dli_fname);
  return 0;
}
""")
    build = tmp_path / "build"
    for cmd in (
        [
            "cmake",
            "-S",
            str(proj),
            "-B",
            str(build),
            f"-DCMAKE_PREFIX_PATH={cmakedir.stdout.strip()}",
        ],
        ["cmake", "--build", str(build)],
    ):
        r = subprocess.run(cmd, check=False, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    run = subprocess.run([str(build / "probe")], check=False, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    first, where = run.stdout.splitlines()
    assert first == "65 2 32 4"  # kTVMFFIStr; kDLFloat, 32 bits, 4 lanes
    assert Path(where).resolve() == Path(libfile).resolve()
    lib, inc, dlpack_inc = (build / "vars.txt").read_text().splitlines()
    assert Path(lib).resolve() == Path(libfile).resolve()
    assert (Path(inc) / "tvm" / "ffi" / "c_api.h").is_file()
    assert (Path(dlpack_inc) / "dlpack" / "dlpack.h").is_file()


def test_cmake_package_missing_library_is_reported(tmp_path: Path) -> None:
    """A broken install (no libtvm_ffi.so next to the config) fails find_package
    with our message, not a later link error."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    pkg = tmp_path / "pkg" / "share" / "cmake" / "tvm_ffi"
    pkg.mkdir(parents=True)
    shutil.copy(ROOT / "runtime" / "cmake" / "tvm_ffi-config.cmake", pkg)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p LANGUAGES NONE)\n"
        "find_package(tvm_ffi CONFIG REQUIRED)\n"
    )
    r = subprocess.run(
        ["cmake", "-S", str(proj), "-B", str(tmp_path / "b"), f"-DCMAKE_PREFIX_PATH={pkg}"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0
    assert "reinstall the tvmffi package" in r.stderr
