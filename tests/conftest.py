import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixturebuild


@pytest.fixture(scope="session")
def build_lib():
    """build_lib(sources, headers="ours"|"official", ...) -> Path of a built library."""
    return fixturebuild.build


@pytest.fixture(scope="session")
def official_runtime():
    p = fixturebuild.official_runtime()
    if p is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    return p


@pytest.fixture(scope="session")
def official_include():
    p = fixturebuild.official_include()
    if p is None:
        pytest.skip("apache-tvm-ffi (the reference headers) are not installed")
    return p


# ---------------------------------------------------------------------------
# Nothing of the run stays in the temp directory. The controller gives the
# whole run (every tvmffi child, the package's own temporary directories) a
# private TMPDIR, and each xdist worker a folder of its own in it; pytest's
# tmp_path stays where pytest keeps it. At the end nothing may be left there:
# what is left is named, with the test after which it appeared, fails the run,
# and is removed (TVMFFI_TEST_KEEP_TMPDIR=1 keeps it to look at). Tests write
# under tmp_path / tmp_path_factory; a directory another user must reach
# (pytest's basetemp is root's alone) comes from unprivileged.shared_tempdir
# and is removed at the end of the session.

_RUN_TMP = "TVMFFI_TEST_RUN_TMPDIR"
_LEFT = "tvmffi_left_by"  # xdist workeroutput key: {entry: test after which it appeared}


def _use_tmp(config, d):
    config._tvmffi_own_tmp = d
    os.environ["TMPDIR"] = d
    tempfile.tempdir = d


def pytest_configure(config):
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        run_tmp = os.environ.get(_RUN_TMP)
        if run_tmp and os.path.isdir(run_tmp):
            d = os.path.join(run_tmp, worker["workerid"])
            os.makedirs(d, exist_ok=True)
            os.chmod(d, 0o711)
            _use_tmp(config, d)
        return
    if os.environ.get(_RUN_TMP):
        return  # a nested run: the outer one checks
    # pytest's own area (basetemp, kept for a few runs) stays in the real one.
    real = tempfile.gettempdir()
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", real)
    run_tmp = tempfile.mkdtemp(prefix="tvmffi-test-run-", dir=real)
    os.chmod(run_tmp, 0o711)  # others may pass through (to shared_tempdir), not list
    config._tvmffi_run_tmp = run_tmp
    os.environ[_RUN_TMP] = run_tmp
    _use_tmp(config, run_tmp)
    # People's output in a pipe follows the terminal the command runs in
    # (render/common.py); the expected outputs are those of a pipe without
    # one (160 wide) unless a test says otherwise, whatever terminal runs pytest.
    os.environ.setdefault("COLUMNS", "160")


_left_by: dict = {}  # entry of this process's temp folder -> the test after which it appeared


def _entries(d):
    try:
        return set(os.listdir(d))
    except OSError:
        return set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    d = getattr(item.config, "_tvmffi_own_tmp", None)
    before = _entries(d) if d else set()
    yield
    if d:
        for name in _entries(d) - before:
            _left_by.setdefault(name, item.nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    wid = node.workerinput["workerid"]
    for name, nodeid in getattr(node, "workeroutput", {}).get(_LEFT, {}).items():
        _left_by[f"{wid}/{name}"] = nodeid


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session, exitstatus):
    out = getattr(session.config, "workeroutput", None)
    if out is not None:  # an xdist worker: tell the controller who left what
        out[_LEFT] = dict(_left_by)
    yield  # after everything else, xdist's worker shutdown included
    run_tmp = getattr(session.config, "_tvmffi_run_tmp", None)
    if run_tmp is None:
        return
    left = []
    for name in sorted(_entries(run_tmp)):
        if re.fullmatch(r"gw[0-9]+", name) and os.path.isdir(os.path.join(run_tmp, name)):
            left += [f"{name}/{n}" for n in sorted(_entries(os.path.join(run_tmp, name)))]
        else:
            left.append(name)
    keep = os.environ.get("TVMFFI_TEST_KEEP_TMPDIR") == "1" and left
    if not keep:
        shutil.rmtree(run_tmp, ignore_errors=True)
    if left:
        said = [f"{n} (after {_left_by[n]})" if n in _left_by else n for n in left]
        shown = ", ".join(said[:8]) + (f" and {len(said) - 8} more" if len(said) > 8 else "")
        msg = f"the run left {len(left)} entr(y/ies) in the temp directory: {shown}"
        if keep:
            msg += f" (kept in {run_tmp})"
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.ensure_newline()
            tr.write_line(f"FAILED (litter): {msg}", red=True, bold=True)
        else:
            print(f"FAILED (litter): {msg}", file=sys.stderr)
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def _remove_shared_tempdirs():
    yield
    import unprivileged

    unprivileged.remove_shared_tempdirs()


# ---------------------------------------------------------------------------
# `python -m pytest -m "not slow"`: the quick subset (README). A whole module
# is slow when what it does is costly by nature; single tests carry the
# marker themselves.

SLOW_MODULES = {
    # official releases and public wheels: downloaded into the cache, each
    # release's runtime and test library exercised
    "test_releases_meta.py",
    "test_release_runtimes.py",
    "test_runtime_ranges.py",
    "test_ecosystem_wheels.py",
    "test_runtime_cxx.py",
    "test_runtime_stdlib_compat.py",
    "test_stubs_clashes.py",
    "test_wheels_input.py",
    # fuzzing, mutants, sanitizers, memcheck, stress
    "test_fuzz.py",
    "test_mutation_kills.py",
    "test_runtime_mutations.py",
    "test_hardening_corpus.py",
    "test_hardening_stress.py",
    "test_hardening_valgrind.py",
    "test_hardening_sanitize.py",
    "test_hardening_resources.py",
    # the wheel and sdist built, pip's resolution for every Python
    "test_packaging.py",
    # tvmffi as another user, in emulated containers
    "test_sandbox_contain.py",
    "test_conform_zygote.py",
}


SLOW_TESTS = {
    # the runtime and its C tests built under ASan + UBSan, and warning-free
    "test_runtime_core.py::test_sanitizer_build_runs_clean",
    "test_runtime_core.py::test_runtime_sources_compile_warning_free",
    # a call graph of every runtime source (compiled for it)
    "test_runtime_layout.py::test_no_call_circle_between_files",
    # CMake projects configured and built against `tvmffi config`
    "test_config_cxx.py::test_cmake_find_package_builds_the_cxx_library",
    "test_config_cxx.py::test_cmake_without_cxx_headers_names_the_package",
    "test_config_cxx.py::test_build_with_official_macros_from_config_flags_alone",
    # mypy --strict over the API modules (.ci/run runs mypy over all of src)
    "test_api.py::test_api_modules_are_mypy_strict_clean",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = f"{item.path.name}::{item.originalname}"
        if item.path.name in SLOW_MODULES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
