"""The click-free start of `call`, `bench` and `inspect` (cli/fastpath.py):
what the parent imports, and the same output and exit codes as the click path."""

import json
import subprocess
import sys

import pytest

import fixturebuild

# Run the entry point as the console script does, then list what the parent
# process imported (the worker is a fork: its imports are not in this list).
_PROBE = """
import sys
from tvmffi_cli.cli import main as m
try:
    m.{entry}({argv!r})
except SystemExit as e:
    rc = e.code
heavy = sorted(n for n in ("click", "rich", "numpy", "elftools", "pefile", "tempfile", "shutil",
                            "hashlib") if n in sys.modules)
sys.stderr.write("\\nPROBE %s %s\\n" % (rc, " ".join(heavy) or "-"))
"""


def _run(entry, argv):
    code = _PROBE.format(entry=entry, argv=argv)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    head, _, probe = r.stderr.rpartition("\nPROBE ")
    rc, heavy = probe.split()
    return int(rc), r.stdout, head.strip(), heavy


@pytest.fixture(scope="module")
def lib():
    return str(fixturebuild.build("inspect/funcs.c", headers="ours"))


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "{lib}", "mul3", "2", "3", "7"],
        ["call", "{lib}", "mul3", "2", "3", "7", "--json"],
        ["bench", "{lib}", "mul3", "2", "3", "7", "--rounds", "2", "--repeat", "10"],
    ],
    ids=["call", "call-json", "bench"],
)
def test_plain_forms_import_no_click_rich_numpy_or_what_they_do_not_use(lib, argv):
    # tempfile, shutil, hashlib: a call makes its directories itself
    # (sandbox/files.private_dir) and hashes only --out files.
    rc, out, err, heavy = _run("main", [a.format(lib=lib) for a in argv])
    assert (rc, heavy) == (0, "-"), err
    assert out.strip()


CASES = [
    ["call", "{lib}", "mul3", "2", "3", "7"],  # 42
    ["call", "{lib}", "add", "1"],  # the function raises: exit 1
    ["call", "{lib}", "add", "1", "--json"],
    ["call", "{lib}", "mul3", "2", "3"],  # arity known from its signature: exit 2
    ["call", "{lib}", "nosuch"],  # exit 2, names the functions there are
    ["call", "/no/such/lib.so", "f"],  # exit 2
    ["call", "{lib}", "mul3", "--int", "x"],  # bad value: exit 2
    ["bench", "{lib}", "mul3", "1", "--rounds", "0"],  # exit 2
    ["call", "{lib}", "mul3", "2", "3", "7", "--timeout", "nan"],
    ["inspect", "{lib}", "--static", "--json"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c[:1] + c[2:]) for c in CASES])
def test_fast_path_answers_as_the_click_path(lib, argv):
    argv = [a.format(lib=lib) for a in argv]
    fast = _run("main", argv)
    slow = _run("_run_click", argv)
    assert fast[3] == "-"
    assert slow[3] != "-"  # the reference really went through click
    if "--json" in argv and fast[1]:
        a, b = json.loads(fast[1]), json.loads(slow[1])
        for d in (a, b):
            d.pop("elapsed_s", None)
            (d.get("library_info") or {}).pop("elapsed_s", None)
        assert a == b
    else:
        assert fast[1] == slow[1]
    assert (fast[0], fast[2]) == (slow[0], slow[2])
    assert fast[0] == {0: 0, 1: 1}.get(fast[0], 2)  # never an internal error (3)


def test_help_goes_to_click(lib):
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "call", "--help"], capture_output=True, text=True
    )
    assert r.returncode == 0 and "Argument flags" in r.stdout and "--guard" in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "bench", lib, "f", "-h"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "--rounds R" in r.stdout


# exec's tvmffi in this process (same pid) with SIGINT set as argv[1] says.
_WITH_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, getattr(signal, sys.argv[1])); "
    "os.execv(sys.executable, [sys.executable, '-m', 'tvmffi_cli', *sys.argv[2:]])"
)


def _hung(cmd, sigint="SIG_DFL", *extra):
    """(process, sleeper name): `tvmffi cmd` of the hostile library's
    spawn_and_hang with SIGINT at `sigint`, once the worker started the
    library's sleeper. Started as from a terminal by default (SIG_DFL): a test
    run launched in the background (`pytest &`, nohup) inherits SIGINT
    ignored, and tvmffi, like any program, keeps ignoring it."""
    import os
    import time

    from sandbox_helpers import hostile, processes_named, token

    name = token()
    p = subprocess.Popen(
        [sys.executable, "-c", _WITH_SIGINT, sigint, cmd, hostile(), "spawn_and_hang"]
        + ["--str", name, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "TVMFFI_RUNTIME"},
    )
    deadline = time.monotonic() + 60
    while not processes_named(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not processes_named(name):
        p.kill()
        p.communicate()
        raise AssertionError("the worker never started the library's sleeper")
    return p, name


@pytest.mark.parametrize("cmd", ["call", "bench"])
def test_ctrl_c_is_one_line_and_ends_the_worker(cmd):
    # As the click path answers a Ctrl-C ("tvmffi: aborted", exit 2), never
    # with a traceback, and the hung worker and what it started are gone.
    import signal

    from sandbox_helpers import gone

    p, name = _hung(cmd)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert (p.returncode, err) == (2, "tvmffi: aborted\n"), err
    assert gone(name, 10.0)


def test_ctrl_c_ignored_by_the_shell_stays_ignored_and_the_worker_still_ends():
    # A job the shell started in the background (`tvmffi call ... &`, nohup)
    # inherits SIGINT ignored: tvmffi keeps it so (as Python and any program
    # do); the call still ends at its timeout, and its worker with it.
    import signal

    from sandbox_helpers import gone

    p, name = _hung("call", "SIG_IGN", "--timeout", "3")
    try:
        p.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=1.0)
        out, err = p.communicate(timeout=60)
        assert (p.returncode, err) == (
            1,
            "tvmffi: error: spawn_and_hang did not return within 3 s; the worker was killed\n",
        )
        assert gone(name, 10.0)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_sigterm_cleans_up_and_ends_by_sigterm():
    # A CI job cancelled or timed out (SIGTERM): the worker, what it started
    # and tvmffi's temp dirs are gone (conftest's litter check after each
    # test), one line on stderr, and the process ends by SIGTERM, as its
    # caller expects of a terminated program.
    import signal

    from sandbox_helpers import gone

    p, name = _hung("call")
    try:
        p.terminate()
        out, err = p.communicate(timeout=30)
        assert (p.returncode, err) == (-signal.SIGTERM, "tvmffi: terminated\n"), err
        assert gone(name, 10.0)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
