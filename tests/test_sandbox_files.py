"""The parent trusts nothing the worker leaves (issue 23): it never follows the
worker's files, hands it an allow-listed environment, bounds and removes its
scratch directory whatever modes it set, fails closed on --require-sandbox,
fails a step whose worker crashes after replying, and names a reached
--memory-limit. The library is fixtures/hostile/planter.c.

Cases that differ by who runs tvmffi and by what the kernel offers run as
root and as nobody, with namespaces and inside tests/unprivileged.py's
wrapper that refuses them (a default container)."""

import functools
import json
import os
import stat
import tempfile
import time

import pytest

import fixturebuild
import unprivileged
from test_call_helpers import validate
from tvmffi_cli.sandbox import environ, files

SECRET = "TOPSECRET-b7d1e0"


@functools.cache
def planter(*defines):
    return str(fixturebuild.build("hostile/planter.c", defines=defines))


MATRIX = [
    pytest.param((user, wrap), id=f"{user}-{'nons' if wrap else 'ns'}")
    for user in ("root", "nobody")
    for wrap in (False, True)
]


@pytest.fixture
def where(request, tmp_path):
    """(run, lib): tvmffi as the case's user/wrapper, and planter readable by
    it; run.base is a directory of the case's user (for its own files)."""
    user, wrap = request.param
    why = unprivileged.unavailable(user)
    if why:
        pytest.skip(why)
    base = tmp_path
    if user != "root":
        # pytest's tmp_path is root's alone; nobody needs a way in.
        base = tempfile.mkdtemp(prefix="tvmffi-test-nobody-")
        os.chmod(base, 0o755)
    lib = unprivileged.shared_copy(planter(), os.path.join(base, "lib"))
    home = os.path.join(base, "home")

    def run(*args, env=None):
        return unprivileged.run(*args, user=user, wrap=wrap, env=env, home=home)

    run.user, run.home, run.wrap, run.base = user, home, wrap, base
    yield run, lib
    if base != tmp_path:
        files.remove_tree(base)


def secret_file(base, user):
    """A file of the test's own, mode 0600, in a directory outside scratch."""
    d = os.path.join(base, "private")
    os.mkdir(d, 0o700)
    f = os.path.join(d, "key")
    with open(f, "w") as fh:
        fh.write(SECRET + "\n")
    os.chmod(f, 0o600)
    if user != "root":
        os.chown(d, unprivileged.NOBODY, unprivileged.NOBODY)
        os.chown(f, unprivileged.NOBODY, unprivileged.NOBODY)
    return f


def left_in(home):
    return sorted(p for p in os.listdir(home) if p.startswith("tvmffi-"))


# -- 1. the parent never follows the worker's files ------------------------------
@pytest.mark.parametrize("where", MATRIX, indirect=True)
def test_fault_log_symlink_never_followed(where):
    run, lib = where
    key = secret_file(run.base, run.user)
    r = run("call", lib, "plant_symlink", key, "-v")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "SIGABRT" in r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert "Fatal Python error: Aborted" in r.stderr  # the real fault log still shows
    assert left_in(run.home) == []


def test_fault_log_symlink_at_load_inspect(tmp_path):
    key = secret_file(tmp_path, "root")
    lib = planter(f'PLANT_ON_LOAD="{key}"')
    r = unprivileged.run("inspect", lib, home=tmp_path / "h")
    assert r.returncode == 1 and "SIGABRT" in r.stdout + r.stderr, (r.stdout, r.stderr)
    rj = unprivileged.run("inspect", lib, "--json", home=tmp_path / "h")
    assert rj.returncode == 1
    validate(json.loads(rj.stdout), "inspect")
    assert SECRET not in r.stdout + r.stderr + rj.stdout + rj.stderr


def test_fault_log_fifo_does_not_block_inspect(tmp_path):
    lib = planter("PLANT_FIFO_ON_LOAD")
    t0 = time.monotonic()
    r = unprivileged.run("inspect", lib, "--timeout", "5", home=tmp_path / "h", timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert took < 20, took
    assert left_in(tmp_path / "h") == []


def test_open_untrusted_refuses_links_and_fifos(tmp_path):
    (tmp_path / "real").write_bytes(b"data")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    with files.open_untrusted(str(tmp_path / "real")) as f:
        assert f.read() == b"data"
    for name in ("link", "fifo"):
        with pytest.raises(files.Untrusted):
            files.open_untrusted(str(tmp_path / name))
    fd = files.fault_log()
    try:
        os.write(fd, b"x" * 10000)
        assert files.read_log(fd, 4096) == b"x" * 4096
    finally:
        os.close(fd)


# -- 2. allow-listed environment -------------------------------------------------
SECRETS = {"GITHUB_TOKEN": "ghp_x1", "AWS_SECRET_ACCESS_KEY": "aws_x2", "FOO_TOKEN": "foo_x3"}


@pytest.mark.parametrize("where", [MATRIX[0], MATRIX[3]], indirect=True)
def test_credentials_not_in_worker_env(where):
    run, lib = where
    env = {**SECRETS, "LANG": "C.UTF-8", "CUDA_VISIBLE_DEVICES": "3"}
    r = run("call", lib, "show_env", *SECRETS, "CUDA_VISIBLE_DEVICES", "LANG", env=env)
    assert (r.returncode, r.stdout.strip()) == (0, "2"), (r.stdout, r.stderr)
    for name, value in SECRETS.items():
        assert value not in r.stderr and f"ENV {name} unset" in r.stderr
    assert "ENV CUDA_VISIBLE_DEVICES=3" in r.stderr and "ENV LANG=C.UTF-8" in r.stderr


def test_env_option_passes_one_name(tmp_path):
    lib = planter()
    env = {**SECRETS}
    r = unprivileged.run("call", lib, "show_env", "FOO_TOKEN", "--env", "FOO_TOKEN", env=env)
    assert (r.returncode, r.stdout.strip()) == (0, "1"), r.stderr
    assert "ENV FOO_TOKEN=foo_x3" in r.stderr
    r = unprivileged.run("call", lib, "show_env", "HOME", home=tmp_path / "h")
    assert f"ENV HOME={tmp_path / 'h'}/tvmffi-scratch-" in r.stderr  # HOME is the scratch
    r = unprivileged.run("call", lib, "show_env", "X", "--env", "1BAD")
    assert r.returncode == 2 and "--env '1BAD'" in r.stderr


def test_worker_env_allow_list():
    got = environ.worker_env(
        {
            "PATH": "/bin",
            "LC_ALL": "C",
            "LD_LIBRARY_PATH": "/x",
            "CUDA_HOME": "/cuda",
            "TVM_FFI_X": "1",
            "HIP_VISIBLE_DEVICES": "0",
            "HOME": "/root",
            "GITHUB_TOKEN": "t",
            "AWS_ACCESS_KEY_ID": "k",
            "CUDA_API_KEY": "k2",
            "TVMFFI_SECRET": "s",
            "MY_PASSWORD": "p",
            "SSH_AUTH_SOCK": "/s",
            "FOO": "foo",
        },
        scratch="/scr",
        passthrough=("FOO", "BAR=2", "MISSING"),
    )
    assert got == {
        "PATH": "/bin",
        "LC_ALL": "C",
        "LD_LIBRARY_PATH": "/x",
        "CUDA_HOME": "/cuda",
        "TVM_FFI_X": "1",
        "HIP_VISIBLE_DEVICES": "0",
        "HOME": "/scr",
        "TMPDIR": "/scr",
        "FOO": "foo",
        "BAR": "2",
    }


# -- 3. scratch bounded and always removed ----------------------------------------
@pytest.mark.parametrize("where", MATRIX, indirect=True)
def test_locked_scratch_removed(where):
    run, lib = where
    r = run("call", lib, "lock_scratch")
    assert (r.returncode, r.stdout.strip()) == (0, "0"), r.stderr
    assert left_in(run.home) == []


def test_scratch_total_bound(tmp_path):
    lib = planter()
    r = unprivileged.run(
        "call", lib, "fill_scratch", "400", "--scratch-limit", "64M", home=tmp_path / "h"
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "scratch limit exceeded (--scratch-limit 64M)" in r.stderr
    assert left_in(tmp_path / "h") == []
    r = unprivileged.run("call", lib, "fill_scratch", "8", "--scratch-limit", "64M")
    assert (r.returncode, r.stdout.strip()) == (0, "8"), r.stderr


def test_scratch_file_bound():
    r = unprivileged.run("call", planter(), "big_file", "40", "--scratch-limit", "16M")
    assert (r.returncode, r.stdout.strip()) == (0, "-27"), r.stderr  # EFBIG at 16 MiB
    r = unprivileged.run("call", planter(), "big_file", "1", "--scratch-limit", "1K")
    assert r.returncode == 2 and "--scratch-limit '1K': at least 1M" in r.stderr


def test_remove_tree_never_follows_links(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "keep").write_text("k")
    t = tmp_path / "tree"
    (t / "a" / "b").mkdir(parents=True)
    (t / "a" / "b" / "f").write_text("x" * 5000)
    os.symlink(outside, t / "a" / "link")
    os.symlink(outside / "sub", t / "a" / "b" / "link2")
    os.chmod(outside / "sub", 0o500)
    os.chmod(t / "a" / "b", 0)
    os.chmod(t / "a", 0o100)
    assert files.tree_usage(str(t)) >= 5000
    files.remove_tree(str(t))
    assert not t.exists()
    assert (outside / "sub" / "keep").read_text() == "k"
    assert stat.S_IMODE(os.stat(outside / "sub").st_mode) == 0o500  # untouched
    os.chmod(outside / "sub", 0o700)


def test_remove_tree_deep(tmp_path):
    t = tmp_path / "deep"
    p = t
    for _ in range(300):  # deeper than the descriptors remove_tree keeps open
        p = p / "d"
    p.mkdir(parents=True)
    (p / "f").write_text("x")
    files.remove_tree(str(t))
    assert not t.exists()


# -- 4. fail closed on demand ------------------------------------------------------
@pytest.mark.parametrize("where", MATRIX, indirect=True)
def test_require_sandbox(where):
    run, lib = where
    r = run("call", lib, "show_env", "X", "--require-sandbox", "--json")
    if run.wrap:
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "--require-sandbox: this system does not give the worker pid-namespace" in r.stderr
        assert "ENV X" not in r.stderr  # no library code ran
    elif r.returncode == 0:
        sb = json.loads(r.stdout)["sandbox"]
        assert sb["missing"] == [] and sb["ran"]
    else:
        pytest.skip(f"this machine's sandbox is incomplete: {r.stderr.strip()}")


def test_require_sandbox_env_and_conflict(tmp_path):
    lib = planter()
    env = {"TVMFFI_REQUIRE_SANDBOX": "1"}
    r = unprivileged.run("inspect", lib, wrap=True, env=env)
    assert r.returncode == 2 and "pid-namespace" in r.stderr, (r.stdout, r.stderr)
    r = unprivileged.run("call", lib, "show_env", "X", "--no-sandbox", env=env)
    assert r.returncode == 2 and "contradict" in r.stderr
    # The wrapper's sandbox field says what was missing (truthful, not hidden).
    r = unprivileged.run("call", lib, "show_env", "X", "--json", wrap=True)
    assert r.returncode == 0
    sb = validate(json.loads(r.stdout), "call")["sandbox"]
    assert "pid-namespace" in sb["missing"] and "pid-namespace" not in sb["applied"]


def test_require_sandbox_from_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.tvmffi.conform]\nrequire-sandbox = true\nallow-read = ['data']\n"
    )
    (tmp_path / "data").mkdir()
    r = unprivileged.run("conform", planter(), wrap=True, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "--require-sandbox: this system does not give the worker pid-namespace" in r.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.tvmffi.conform]\nrequire-sandbox = 1\n")
    r = unprivileged.run("conform", planter(), cwd=tmp_path)
    assert r.returncode == 2 and "require-sandbox must be true or false" in r.stderr


# -- 6. crashes after the reply; a reached memory limit ----------------------------
@pytest.mark.parametrize("where", MATRIX, indirect=True)
def test_crash_after_reply_fails(where):
    run, lib = where
    r = run("call", lib, "crash_later", "50", "--json")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert json.loads(r.stdout)["error"]["signal"] == "SIGSEGV"


def test_memory_limit_named_whatever_the_library_said():
    lib = planter()
    r = unprivileged.run("call", lib, "alloc_until_refused", "--memory-limit", "1G")
    assert r.returncode == 1
    assert "RuntimeError: the frobnicator gave up" in r.stdout + r.stderr
    assert "memory limit reached (--memory-limit 1G, peak " in r.stderr
    r = unprivileged.run("call", lib, "alloc_until_refused", "--memory-limit", "1G", "--json")
    err = validate(json.loads(r.stdout), "call")["error"]
    assert err["memory_limit_reached"]["limit"] == 1 << 30
    assert 3 << 28 <= err["memory_limit_reached"]["peak"] <= 1 << 30


# -- 5. --allow-read / --allow-write, denials named, GPU device nodes -------------
def test_denial_named_with_option(tmp_path):
    lib = planter()
    outside = tmp_path / "cache"
    outside.mkdir()
    r = unprivileged.run("call", lib, "write_in", outside, "--json")
    if r.returncode == 0:
        pytest.skip("no Landlock here: nothing is denied")
    err = validate(json.loads(r.stdout), "call")["error"]
    assert err["sandbox_denied"] == [
        {
            "path": f"{outside}/tvmffi-test-file",
            "option": "--allow-write",
            "value": str(outside),
        }
    ]
    r = unprivileged.run("call", lib, "write_in", outside, "--allow-write", outside)
    assert (r.returncode, r.stdout.strip()) == (0, "0"), r.stderr
    (tmp_path / "data").write_text("d")
    r = unprivileged.run("call", lib, "open_path", tmp_path / "data")
    assert f"rerun with --allow-read {tmp_path / 'data'}" in r.stderr
    r = unprivileged.run("call", lib, "open_path", tmp_path / "data", "--allow-read", tmp_path)
    assert (r.returncode, r.stdout.strip()) == (0, "0"), r.stderr
    # A path the library names that the sandbox allows is no denial of ours.
    r = unprivileged.run("call", lib, "open_path", "/usr/nonexistent-x", "--json")
    assert r.returncode == 1
    err = json.loads(r.stdout)["error"]
    # Neither a denial of ours, nor near the memory limit.
    assert "sandbox_denied" not in err and "memory_limit_reached" not in err


def test_device_nodes_usable(tmp_path):
    """A stand-in device node (listed through TVMFFI_DEVICE_NODES, as the
    real /dev/nvidia*, /dev/dri/*, /dev/kfd are by default) opens read-write."""
    node = tmp_path / "dev" / "nvidia-standin"
    node.parent.mkdir()
    if os.geteuid() == 0:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    else:
        node.write_bytes(b"")
    lib = planter()
    r = unprivileged.run("call", lib, "open_device", node)
    if r.stdout.strip() == "0":
        pytest.skip("no Landlock here: every node opens anyway")
    assert r.stdout.strip() == "13", r.stderr  # EACCES
    env = {"TVMFFI_DEVICE_NODES": f"{tmp_path}/dev/nvidia*"}
    r = unprivileged.run("call", lib, "open_device", node, env=env)
    assert (r.returncode, r.stdout.strip()) == (0, "0"), r.stderr


def test_staged_outputs_not_followed(tmp_path):
    """--out: a staged name the worker replaced by a link or a FIFO is refused
    at once (no read through the link, no blocking), and nothing is written."""
    import hashlib

    from tvmffi_cli.call.files import publish_outputs
    from tvmffi_cli.call.messages import OutFile
    from tvmffi_cli.errors import CheckFailed

    key = secret_file(tmp_path, "root")
    stage, out = tmp_path / "stage", tmp_path / "out"
    stage.mkdir()
    os.symlink(key, stage / "arg0.npy")
    os.mkfifo(stage / "arg1.npy")
    (stage / "result.npy").write_bytes(b"ok")
    good = OutFile("result", str(stage / "result.npy"), hashlib.sha256(b"ok").hexdigest())
    digest = hashlib.sha256((SECRET + "\n").encode()).hexdigest()
    for name in ("arg0.npy", "arg1.npy"):
        bad = OutFile(name[:4], str(stage / name), digest)
        with pytest.raises(CheckFailed, match="not a regular file the worker staged"):
            publish_outputs(str(stage), str(out), [good, bad], force=False)
        assert os.listdir(out) == []
    got = publish_outputs(str(stage), str(out), [good], force=False)
    assert got == (OutFile("result", str(out / "result.npy")),)
    assert (out / "result.npy").read_bytes() == b"ok"


def test_private_dir_is_mkdtemp_without_tempfile(tmp_path, monkeypatch):
    import stat
    import subprocess
    import sys

    from tvmffi_cli.sandbox import files

    code = (
        "import sys; from tvmffi_cli.sandbox import files\n"
        "print(files.private_dir('tvmffi-x-'), 'tempfile' in sys.modules)"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert out[1] == "False"
    d = out[0]
    assert os.path.dirname(d) == str(tmp_path) and os.path.basename(d).startswith("tvmffi-x-")
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    # loaded anyway, tempfile decides (tempfile.tempdir included)
    import tempfile

    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(other))
    a, b = files.private_dir("p-"), files.private_dir("p-")
    assert a != b and os.path.dirname(a) == str(other) == os.path.dirname(b)
