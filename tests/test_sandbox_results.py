"""Issue 15 items 3, 4, 5, 7, 9 with libraries written to misbehave:
memory limit, results the library cannot forge, files the user owns, library
text and output, conform of a file with nothing to check."""

import hashlib
import json
import time

import numpy as np
import pytest

import fixturebuild
from sandbox_helpers import call_json, hostile, spoil
from test_call_helpers import tvmffi, validate

# -- 3. limits -----------------------------------------------------------------------


def test_memory_bomb_is_a_failure_that_names_memory():
    t0 = time.monotonic()
    r = tvmffi("call", hostile(), "memory_bomb", "--memory-limit", "512M", "--timeout", "60")
    elapsed = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    assert "memory limit exceeded (--memory-limit 512M" in r.stderr
    assert elapsed < 30  # within seconds, far before the timeout
    doc, _ = call_json(hostile(), "memory_bomb", "--memory-limit", "512M", rc=1)
    assert doc["sandbox"]["memory_limit"] == 512 << 20
    assert "memory limit exceeded" in doc["error"]["message"]


@pytest.mark.parametrize("size", ["lots", "12Q", "1K", "-5G"])
def test_bad_memory_limit_is_an_input_error(size):
    r = tvmffi("call", hostile(), "hello", "--memory-limit", size)
    assert r.returncode == 2 and r.stderr.startswith("tvmffi: error: memory size")


def test_cpu_limit_backs_the_timeout():
    doc, _ = call_json(hostile(), "hello", "--timeout", "3")
    assert doc["sandbox"]["cpu_limit"] is not None and doc["sandbox"]["cpu_limit"] >= 3


# -- 4. results the library cannot forge ---------------------------------------------


@pytest.mark.parametrize("func", ["forge_and_crash", "forge_and_return"])
@pytest.mark.parametrize("mode", [[], ["--no-sandbox"]])
def test_forged_replies_never_become_a_result(func, mode):
    r = tvmffi("call", *mode, hostile(), func, "--json")
    assert r.returncode == 1, r.stdout
    doc = validate(json.loads(r.stdout), "call")
    assert "result" not in doc and doc["error"]["kind"] in ("Tampered", "Crash")
    assert '"result":42' not in r.stdout.replace(" ", "")


def test_conform_of_forging_crashing_functions_fails():
    lib = fixturebuild.build("hostile/forger.c")
    r = tvmffi("conform", lib, "--json", "--timeout", "5")
    assert r.returncode == 1, r.stdout
    doc = validate(json.loads(r.stdout), "conform")
    assert doc["passed"] is False
    crashed = {
        x["function"] for x in doc["results"] if x["check"] == "no-crash" and x["status"] == "fail"
    }
    assert crashed == {"add", "mul"}


# -- 5. files the user owns ----------------------------------------------------------


def test_out_rewritten_after_tvmffi_wrote_it_is_refused(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.arange(4, dtype=np.float32))
    before = hashlib.sha256(x.read_bytes()).hexdigest()
    out = tmp_path / "out"
    # Unconfined, the library's destructor finds the staged file (in tvmffi's
    # temp directory, which it is told) and rewrites it:
    told = ("--env", "SPOIL_DIR")
    env = {"SPOIL_DIR": __import__("tempfile").gettempdir()}
    r = tvmffi(
        "call", "--no-sandbox", *told, spoil(), "touch", "--tensor", x, "--out", out, env=env
    )
    assert r.returncode == 1 and "changed after tvmffi wrote it" in r.stderr, r.stderr
    assert not (out / "arg0.npy").exists()
    # Confined, it cannot reach the staging directory: the file is exactly what was reported.
    r = tvmffi("call", *told, spoil(), "touch", "--tensor", x, "--out", out, env=env)
    assert r.returncode == 0, r.stderr
    # (the human text folds long paths to the terminal width)
    assert f"wrote {out / 'arg0.npy'}" in " ".join(r.stdout.split())
    assert np.array_equal(np.load(out / "arg0.npy"), np.arange(4, dtype=np.float32))
    assert hashlib.sha256(x.read_bytes()).hexdigest() == before


def test_input_file_is_a_private_copy(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.arange(4, dtype=np.float32))
    before = x.read_bytes()
    # The library looks up the .npy files it has mapped and writes to them.
    # Unconfined it succeeds, on the private copy; confined it cannot write at all.
    doc, _ = call_json("--no-sandbox", hostile(), "rewrite_mapped", "--tensor", x)
    assert x.read_bytes() == before
    doc, _ = call_json(hostile(), "rewrite_mapped", "--tensor", x)
    assert doc["result"] == 0
    assert x.read_bytes() == before


# -- 7. text and output from the library ---------------------------------------------


def test_library_output_goes_to_stderr_marked_and_sanitized():
    crashy = fixturebuild.build("c/crashy.c")
    r = tvmffi("call", crashy, "chatty", "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["result"] == 7  # stdout is pure JSON
    assert '[lib] {"noise": true}\n' in r.stderr and "[lib] not json at all\n" in r.stderr


def test_forged_bytes_reach_the_terminal_escaped():
    r = tvmffi("call", hostile(), "forge_and_return")
    assert "\x00" not in r.stderr and "[lib] \\x00\\x00\\x00\\x08" in r.stderr


# -- 9. nothing to check is not a pass ------------------------------------------------


def test_conform_of_a_library_without_functions_fails():
    lib = fixturebuild.build("hostile/hidden.c")
    r = tvmffi("conform", lib, "--json")
    assert r.returncode == 1
    doc = validate(json.loads(r.stdout), "conform")
    (res,) = [x for x in doc["results"] if x["check"] == "has-functions"]
    assert res["status"] == "fail" and doc["passed"] is False
