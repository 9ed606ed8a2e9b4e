"""Run tvmffi as an unprivileged user (nobody) and inside an emulated container
that refuses namespaces (and, asked, Landlock), for the sandbox tests and
bench/bench_sandbox.py.

    run("call", lib, "hello", user="nobody")  # CompletedProcess, uid 65534
    no_namespaces()                           # path of the wrapper executable
    tvmffi_argv(user="nobody", wrap=True)     # the argv prefix for both
    tvmffi_argv(wrap=True, landlock=False)    # ... nor Landlock
    tvmffi_argv(wrap="no-landlock")           # namespaces, no Landlock

The test interpreter may live where nobody cannot read (a pyenv under /root):
a small venv made from the system's python of the same version, whose only
site directory is ours, stands in for it. `unavailable()` says why a case
cannot run here (then the test skips with that reason)."""

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fixturebuild

NOBODY = 65534

_SHARED = []


def shared_tempdir(prefix):
    """A new directory (mode 0755) in the temp directory, for files another
    user must reach: pytest's tmp_path is root's alone. Removed by
    remove_shared_tempdirs() (tests/conftest.py, at the end of the session)."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    _SHARED.append(d)
    return d


def remove_shared_tempdirs():
    while _SHARED:
        shutil.rmtree(_SHARED.pop(), ignore_errors=True)


@functools.cache
def no_namespaces():
    """The wrapper that makes unshare/setns/clone(CLONE_NEW*) fail (EPERM)
    as Docker's default seccomp profile does without CAP_SYS_ADMIN."""
    return str(
        fixturebuild.build(
            "sandbox/no_namespaces.c", shared=False, headers="none", link_runtime=False
        )
    )


def _readable_by_all(p):
    p = Path(p).resolve()
    for q in [p, *p.parents]:
        try:
            mode = q.stat().st_mode
        except OSError:
            return False
        if not mode & (0o001 if q != p else 0o004):
            return False
    return True


@functools.cache
def _nobody_python():
    """(python, None) usable by nobody, or (None, reason)."""
    if os.geteuid() != 0:
        return None, "needs root to switch to the unprivileged user nobody"
    if shutil.which("setpriv") is None:
        return None, "no setpriv here to switch users"
    if _readable_by_all(sys.executable) and _readable_by_all(sys.prefix):
        return sys.executable, None
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    system = shutil.which(f"python{version}", path="/usr/bin:/usr/local/bin")
    if system is None or not _readable_by_all(system):
        return None, f"the test python is not readable by nobody and no system python{version}"
    site = next((p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)), None)
    if site is None or not _readable_by_all(site):
        return None, "our site-packages is not readable by nobody"
    d = shared_tempdir("tvmffi-nobody-venv-")
    subprocess.run([system, "-m", "venv", "--without-pip", d], check=True, capture_output=True)
    venv_site = Path(d) / "lib" / f"python{version}" / "site-packages"
    # addsitedir, not a plain path line: our site's own .pth files (the
    # editable install's finder) must run too.
    (venv_site / "tvmffi_site.pth").write_text(f"import site; site.addsitedir({site!r})\n")
    os.chmod(d, 0o755)
    return str(Path(d) / "bin" / "python"), None


def unavailable(user="root"):
    """Why tvmffi cannot run as `user` here (None when it can)."""
    if user == "root":
        return None if os.geteuid() == 0 else "not running as root"
    return _nobody_python()[1]


def shared_copy(path, into):
    """A copy of `path` in `into` that nobody can read."""
    os.makedirs(into, exist_ok=True)
    os.chmod(into, 0o755)
    dst = Path(into) / Path(path).name
    shutil.copyfile(path, dst)
    os.chmod(dst, 0o755)
    return str(dst)


def wrapper(wrap=False, landlock=True):
    """The argv prefix of the wrapper: wrap=True refuses namespaces,
    wrap="no-landlock" only Landlock; landlock=False refuses Landlock too."""
    if wrap == "no-landlock":
        return [no_namespaces(), "--keep-namespaces", "--no-landlock"]
    if wrap:
        return [no_namespaces(), *([] if landlock else ["--no-landlock"])]
    return [no_namespaces(), "--keep-namespaces", "--no-landlock"] if not landlock else []


def tvmffi_argv(user="root", wrap=False, landlock=True):
    py = sys.executable if user == "root" else _nobody_python()[0]
    argv = [py, "-m", "tvmffi_cli"]
    if user != "root":
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    return [*wrapper(wrap, landlock), *argv]


def run(*args, user="root", wrap=False, env=None, home=None, timeout=120, cwd="/", landlock=True):
    """tvmffi ARGS as `user`, optionally inside the wrapper that refuses
    namespaces (wrap) or Landlock (landlock=False). home: a directory
    nobody owns, used as HOME and TMPDIR (the worker's scratch goes there)."""
    e = dict(os.environ)
    e.pop("TVMFFI_RUNTIME", None)
    if home is not None:
        os.makedirs(home, exist_ok=True)
        if user != "root":
            os.chown(home, NOBODY, NOBODY)
        e["HOME"] = e["TMPDIR"] = str(home)
    if env:
        e.update(env)
    return subprocess.run(
        [*tvmffi_argv(user, wrap, landlock), *map(str, args)],
        capture_output=True,
        text=True,
        env=e,
        timeout=timeout,
        cwd=cwd,
    )
