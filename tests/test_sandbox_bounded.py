"""Issue 15 items 6 and 7: bounded work and library text as data, with
libraries written to misbehave (fixtures/hostile/meta.c, stuck.c) and a
generated library whose __tvm_ffi__library_bin holds 5,000 kernels."""

import json
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import fixturebuild
from test_call_helpers import tvmffi, validate
from tvmffi_cli import text
from tvmffi_cli.conform import junit
from tvmffi_cli.conform.results import FAIL, Report, Result, github_annotations


def test_huge_metadata_is_capped_with_a_warning():
    lib = fixturebuild.build("hostile/meta.c")
    r = tvmffi("inspect", "--json", "--timeout", "30", lib)
    doc = validate(json.loads(r.stdout), "inspect")
    assert any(
        "big: metadata of 104857600 characters cut to the first 1048576 (cap)" in w
        for w in doc["warnings"]
    )
    assert len(r.stdout) < 2 << 20  # 100 MiB in, a few hundred KiB out
    assert r.returncode == 0, r.stderr


def test_never_returning_metadata_getter_is_a_hang_not_a_wait():
    lib = fixturebuild.build("hostile/stuck.c")
    # Before: 64 restarts x 33 s each (over half an hour); the bound here is generous.
    r = tvmffi("conform", lib, "--json", "--timeout", "3", timeout=90)
    assert r.returncode == 1
    doc = validate(json.loads(r.stdout), "conform")
    hangs = [x for x in doc["results"] if x["check"] == "no-hang" and x["status"] == "fail"]
    assert hangs and "metadata" in hangs[0]["message"]


def _many_kernels(n, tmp_path):
    def u64(*xs):
        return struct.pack(f"<{len(xs)}Q", *xs)

    def s(b):
        b = b.encode() if isinstance(b, str) else b
        return u64(len(b)) + b

    parts = [s("cubin"), u64(n)]
    for i in range(n):
        name = f"kernel_{i:07d}"
        parts.append(
            s(name)
            + s(name)
            + u64(2)
            + struct.pack("<BBHBBH", 2, 32, 1, 0, 32, 1)
            + u64(1)
            + s("blockIdx.x")
            + u64(2)
            + struct.pack("<2i", 0, 0)
        )
    parts.append(s(b"\x7fELF" + bytes(60)))
    cuda = b"".join(parts)
    body = u64(3, 0, 1, 1) + u64(1, 1) + s("_lib") + s("cuda") + s(cuda)
    blob = u64(len(body)) + body
    (tmp_path / "bin").write_bytes(blob)
    src = tmp_path / "many.c"
    src.write_text(
        '__asm__(".section .rodata\\n.globl __tvm_ffi__library_bin\\n'
        '__tvm_ffi__library_bin:\\n.incbin \\"' + str(tmp_path / "bin") + '\\"\\n.text\\n");\n'
        '__attribute__((visibility("default"))) void* __tvm_ffi__library_ctx = 0;\n'
    )
    out = tmp_path / "many.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(out)], check=True)
    return out, len(blob)


def test_static_library_bin_is_summarised_not_dumped(tmp_path):
    lib, size = _many_kernels(5000, tmp_path)
    r = tvmffi("inspect", "--static", "--json", lib)
    doc = validate(json.loads(r.stdout), "inspect")
    (cuda,) = [m for m in doc["modules"] if m["kind"] == "cuda"]
    funcs = cuda["details"]["functions"]
    assert len(funcs) == 1001 and funcs[-1]["omitted"] == 4000
    assert funcs[999]["name"] == "kernel_0000999" and funcs[0]["arg_types"] == ["float32", "int32"]
    assert len(r.stdout) < size  # the output is smaller than the input


def test_docs_with_escapes_reach_the_terminal_inert_and_json_as_utf8():
    lib = fixturebuild.build("hostile/meta.c")
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", str(lib)], capture_output=True, check=False
    )
    assert b"\x1b" not in r.stdout and b"\r" not in r.stdout and b"\x07" not in r.stdout
    assert b"Innocent.\\r\\x1b[2J" in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", "--json", str(lib)],
        capture_output=True,
        check=False,
    )
    doc = json.loads(r.stdout.decode("utf-8"))  # strict UTF-8
    (loud,) = [f for f in doc["functions"] if f["name"] == "loud"]
    assert loud["doc"].startswith("Innocent.\r\x1b[2J")  # JSON keeps the text, escaped


HOSTILE_MSG = "boom\r\x1b[31mred\n::error file=a.c::forged\x00\x01 raw \udcff end"


def _report():
    return Report(
        "/x/lib\x1b.so", [Result("no-crash", "f\x1b]0;t\x07", FAIL, HOSTILE_MSG)], ["f"], 0.1, 1
    )


def test_github_annotations_one_line_per_finding():
    lines = github_annotations(_report())
    assert len(lines) == 1
    (line,) = lines
    assert "\n" not in line and "\r" not in line and "\x1b" not in line and "\x00" not in line
    assert line.startswith("::error ") and len(line.splitlines()) == 1


def test_junit_is_well_formed_whatever_the_bytes():
    xml = junit.to_xml(_report())
    root = ET.fromstring(xml)  # raises on characters XML cannot hold
    (fail,) = root.iter("failure")
    assert "\\x1b[31mred" in fail.get("message") and "\\x00\\x01" in fail.get("message")


def test_json_clean_escapes_surrogates_at_any_depth():
    bad = text.from_bytes(b"ok\xff")
    doc = {"a": [1, 2.5, None, {"k": bad}], bad: "x", "emoji": "\U0001f600", "t": ("p",)}
    clean = text.json_clean(doc)
    assert clean == {
        "a": [1, 2.5, None, {"k": "ok\\xff"}],
        "ok\\xff": "x",
        "emoji": "\U0001f600",
        "t": ["p"],
    }
    plain = {"a": ["b", {"c": "d\\e"}], "n": float("nan")}
    assert json.dumps(text.json_clean(plain)) == json.dumps(plain)


def test_json_text_is_valid_utf8_and_recoverable():
    raw = b"ok \xff\xfe back\\slash"
    s = text.json_text(text.from_bytes(raw))
    s.encode("utf-8")  # no lone surrogates left
    assert s == "ok \\xff\\xfe back\\\\slash"
    assert text.unescape_json_text(s, had_bytes=True) == raw
    assert text.json_text("plain \\ text") == "plain \\ text"


def test_terminal_text_neutralises_controls():
    assert text.terminal("a\x1b[2Jb\rc\u202ed\n") == "a\\x1b[2Jb\\rc\\u202ed\n"
    assert text.one_line("a\nb\tc") == "a\\nb\\tc"
