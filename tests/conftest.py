import os
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
# whole run (its xdist workers, every tvmffi child, the package's own
# temporary directories) a private TMPDIR; pytest's tmp_path stays where
# pytest keeps it. At the end that directory must be empty: anything left is
# named and fails the run, then removed. Tests write under tmp_path /
# tmp_path_factory; a directory another user must reach (pytest's basetemp
# is root's alone) comes from unprivileged.shared_tempdir and is removed at
# the end of the session.

_RUN_TMP = "TVMFFI_TEST_RUN_TMPDIR"


def pytest_configure(config):
    if hasattr(config, "workerinput") or os.environ.get(_RUN_TMP):
        return  # an xdist worker (or a nested run): the controller checks
    # pytest's own area (basetemp, kept for a few runs) stays in the real one.
    real = tempfile.gettempdir()
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", real)
    run_tmp = tempfile.mkdtemp(prefix="tvmffi-test-run-", dir=real)
    os.chmod(run_tmp, 0o711)  # others may pass through (to shared_tempdir), not list
    config._tvmffi_run_tmp = run_tmp
    os.environ[_RUN_TMP] = run_tmp
    os.environ["TMPDIR"] = run_tmp
    tempfile.tempdir = run_tmp


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session, exitstatus):
    yield  # after everything else, xdist's worker shutdown included
    run_tmp = getattr(session.config, "_tvmffi_run_tmp", None)
    if run_tmp is None:
        return
    try:
        left = sorted(os.listdir(run_tmp))
    except OSError:
        left = []
    finally:
        shutil.rmtree(run_tmp, ignore_errors=True)
    if left:
        shown = ", ".join(left[:8]) + (f" and {len(left) - 8} more" if len(left) > 8 else "")
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = f"the run left {len(left)} entr(y/ies) in the temp directory: {shown}"
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
