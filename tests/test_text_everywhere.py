"""Library text reaches no terminal, JSON, JUnit file or CI log raw (issue 23
item 5). fixtures/hostile/text.c puts escape sequences, CR, BEL, newlines and
`::error` workflow commands in a global's name, an export's symbol name (patched
into the built file), a doc, an error kind and message, and its load-time
output; every command and output form must show them inert: no control
character but newline and tab, and no line that starts a workflow command."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import fixturebuild

SLOT = b"EXPORT_SLOT_0123456789abcdefghijklmnopqrstuvwxyz"
EVIL_NAME = b"ex\x1b[31m\r\x07\n::error file=e.c,line=1::inj".ljust(len(SLOT), b"x")
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
COMMAND_LINE = re.compile(r"^\s*::", re.MULTILINE)


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    plain = fixturebuild.build("hostile/text.c")
    data = plain.read_bytes()
    assert SLOT in data
    d = tmp_path_factory.mktemp("hostile-text")
    evil = d / "libhostile_text.so"
    evil.write_bytes(data.replace(SLOT, EVIL_NAME))
    return plain, evil


def run(*args, env=None, cwd=None):
    e = dict(os.environ, COLUMNS="200", **(env or {}))
    e.pop("GITHUB_ACTIONS", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *map(str, args)],
        capture_output=True,
        env=e,
        cwd=cwd,
        timeout=300,
    )


def assert_inert(what, data, ours=None):
    """ours: the library path of tvmffi's own annotations (conform under
    GITHUB_ACTIONS), whose lines may start with ::error / ::warning."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if ours is not None:
        own = re.compile(
            rf"^::(error|warning) file={re.escape(str(ours))},title=tvmffi conform .*$", re.M
        )
        text = own.sub("", text)
    bad = RAW_CONTROL.search(text)
    assert bad is None, (
        f"{what}: raw {bad.group()!r} in {text[max(0, bad.start() - 60) : bad.end() + 60]!r}"
    )
    line = COMMAND_LINE.search(text)
    assert line is None, (
        f"{what}: a line starts a workflow command: {text[line.start() : line.start() + 80]!r}"
    )


def check(what, p, *, codes=(0, 1), ours=None):
    assert p.returncode in codes, (what, p.returncode, p.stderr[-2000:])
    assert_inert(f"{what} stdout", p.stdout, ours)
    assert_inert(f"{what} stderr", p.stderr, ours)
    return p


def test_inspect_every_form(libs):
    _, evil = libs
    p = check("inspect --static", run("inspect", "--static", evil))
    assert b"\\x1b[31m\\r\\x07\\n\\x3a:error" in p.stdout  # shown, escaped
    check("inspect --static --json", run("inspect", "--static", "--json", evil))
    p = check("inspect", run("inspect", evil))
    assert b"hostile.g\\x1b[31m" in p.stdout
    assert b"[lib] loading\\x1b[31m\\r\\x07\n[lib] \\x3a:error file=evil.c" in p.stderr
    p = check("inspect --json", run("inspect", "--json", evil))
    doc = json.loads(p.stdout)
    assert "hostile.g\x1b[31m\r\x07\n::error file=evil.c,line=1::injected\ntail" in [
        g if isinstance(g, str) else g.get("name") for g in doc["globals"]
    ]


def test_call_every_form(libs):
    _, evil = libs
    p = check("call", run("call", evil, "hostile_raise"), codes=(1,))
    assert (
        b"\nValue\\x1b[2JError\\n::error::kind: bad \\x1b]0;title\\x07 input\\r\n"
        b"\\x3a:error file=a.c::message\n  \\x3a:warning::indented\n"
    ) in p.stderr
    check("call -v", run("call", "-v", evil, "hostile_raise"), codes=(1,))
    p = check("call --json", run("call", "--json", evil, "hostile_raise"), codes=(1,))
    err = json.loads(p.stdout)["error"]
    assert err["kind"] == "Value\x1b[2JError\n::error::kind"  # JSON keeps the exact text
    name = "hostile.raise\x1b[31m\r\x07\n::error file=evil.c,line=1::injected\n"
    check("call global", run("call", evil, name), codes=(1,))


def test_conform_every_form(libs, tmp_path):
    _, evil = libs
    junit = tmp_path / "junit.xml"
    gh = {"GITHUB_ACTIONS": "true"}
    p = check("conform", run("conform", evil, "-v", env=gh), ours=evil)
    assert f"::warning file={evil},title=tvmffi conform ".encode() in p.stdout  # ours
    p = check(
        "conform --json", run("conform", "--json", "--junit-xml", junit, evil, env=gh), ours=evil
    )
    json.loads(p.stdout)
    raw = junit.read_bytes()
    assert_inert("junit", raw)
    ET.fromstring(raw)


def test_stubs_diff_extract(libs, tmp_path):
    plain, evil = libs
    check("stubs", run("stubs", evil))
    check("diff", run("diff", plain, evil))
    check("diff --json", run("diff", "--json", plain, evil))
    check("extract --json", run("extract", "--json", evil, "-o", tmp_path / "x"))
