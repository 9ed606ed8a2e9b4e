"""Issue 15 item 1 and 8: what a library may do inside the default sandbox,
tried by fixtures/hostile/hostile.c (each try_* returns the errno it got, 0
when the forbidden thing worked), and the same calls under --no-sandbox as
the control that shows the test can fail."""

import json
import os
import subprocess
import sys
from pathlib import Path

import fixturebuild
from sandbox_helpers import EACCES, EPERM, EROFS, ESRCH, call_json, hostile, need, result


def test_every_json_output_says_what_the_sandbox_applied():
    doc, _ = call_json(hostile(), "hello")
    sb = doc["sandbox"]
    assert sb["enabled"] is True and sb["ran"] is True
    assert {"die-with-parent", "no-new-privs"} <= set(sb["applied"])
    assert set(sb["applied"]).isdisjoint(sb["missing"])
    assert sb["memory_limit"] == 4 << 30
    off, _ = call_json("--no-sandbox", hostile(), "hello")
    assert off["sandbox"]["enabled"] is False
    assert "seccomp" not in off["sandbox"]["applied"]
    assert "landlock-fs" not in off["sandbox"]["applied"]


def test_no_network():
    need("seccomp")
    assert result("try_socket") == EPERM
    assert result("try_connect") == EPERM
    off, _ = call_json("--no-sandbox", hostile(), "try_socket")
    assert off["result"] == 0  # control: the same library opens a socket unconfined


def test_no_exec_of_other_programs():
    need("seccomp")
    assert result("try_exec") == EPERM


def test_reads_limited_to_what_loading_needs(tmp_path):
    need("landlock-fs")
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's data\n")
    assert result("try_read", "--str", str(secret)) == EACCES
    assert result("try_read", "--str", "/etc/hostname") == EACCES
    assert result("try_read", "--str", str(hostile())) == 0  # the library itself
    assert result("try_read", "--str", "/usr/lib/os-release") == 0  # the system
    off, _ = call_json("--no-sandbox", hostile(), "try_read", "--str", str(secret))
    assert off["result"] == 0


def test_writes_only_to_the_private_scratch_directory(tmp_path):
    need("landlock-fs")
    target = tmp_path / "pwned.txt"
    # EROFS where every mount outside the write paths is read-only
    assert result("try_write", "--str", str(target)) in (EACCES, EROFS)
    assert not target.exists()
    assert result("try_write", "--str", "scratch.txt") == 0  # relative: the scratch dir
    assert not (tmp_path / "scratch.txt").exists() and not os.path.exists("scratch.txt")


def test_no_signals_to_processes_outside_the_worker():
    need("seccomp")
    # Signal 0 only asks whether the kernel would deliver; this test process
    # (an ancestor of tvmffi) must be out of reach.
    assert result("try_signal", "--int", str(os.getpid())) in (EPERM, ESRCH)
    assert result("try_kill_parent") in (EPERM, ESRCH)
    # Never a process group (the supervisor's included) or every process;
    # a positive pid of the worker's own only (a probe child signals itself).
    assert result("try_signal", "--int", "0") == EPERM
    assert result("try_signal", "--int", "-1") == EPERM
    off, _ = call_json("--no-sandbox", hostile(), "try_signal", "--int", str(os.getpid()))
    assert off["result"] in (0, ESRCH)  # ESRCH: hidden by the PID namespace alone


def test_worker_python_ignores_the_current_directory(tmp_path):
    marker = tmp_path / "imported"
    (tmp_path / "json.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit('shadowed json imported')\n"
    )
    # The installed entry point (`python -m` would put the directory on the
    # parent's own path; the worker must not depend on how tvmffi was started).
    exe = Path(sys.executable).parent / "tvmffi"
    r = subprocess.run(
        [str(exe), "call", str(hostile()), "hello", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == 1
    assert not marker.exists()


def test_dependencies_on_the_runpath_load_but_their_siblings_stay_unreadable(tmp_path):
    need("landlock-fs")
    sub = tmp_path / "sub"
    sub.mkdir()
    (tmp_path / "dep.c").write_text("int dep_value(void) { return 41; }\n")
    (tmp_path / "main.c").write_text(
        "#include <tvm/ffi/c_api.h>\nint dep_value(void);\n"
        "TVM_FFI_DLL_EXPORT int __tvm_ffi_val(void* s, const TVMFFIAny* a, int32_t n, "
        "TVMFFIAny* out) { (void)s; (void)a; (void)n; out->type_index = kTVMFFIInt; "
        "out->zero_padding = 0; out->v_int64 = dep_value() + 1; return 0; }\n"
    )
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(tmp_path / "dep.c"), "-o", str(sub / "libdep.so")],
        check=True,
    )
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            f"-I{fixturebuild.our_include()}",
            str(tmp_path / "main.c"),
            "-o",
            str(tmp_path / "main.so"),
            f"-L{sub}",
            "-ldep",
            "-Wl,-rpath,$ORIGIN/sub",
        ],
        check=True,
    )
    doc, _ = call_json(tmp_path / "main.so", "val")
    assert doc["result"] == 42
    (tmp_path / "secret.txt").write_text("x")
    assert result("try_read", "--str", str(tmp_path / "secret.txt")) == EACCES
