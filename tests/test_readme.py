"""README.md stays true (issue 14): every `$ ` command of its ```console
blocks (and of ```sh blocks that have `$ ` lines) runs from the repository
root after set-up, exits with the code the README states, and prints every
output line the README shows.

Conventions of README.md, checked here:
- `$ cmd  # exit N` states a non-zero exit code; without it the code is 0.
- Output lines shown are compared with whitespace runs collapsed, in order,
  each against one whole line of the real output (stdout and stderr merged).
- A command shown without output prints nothing.
- `…` in a shown line matches any text (timings, addresses, absolute paths);
  a line that is only `...` marks an omission.
Commands write only under examples/build/ (made by `sh examples/run.sh`,
which a session fixture runs when what the README needs is missing or older
than its sources).
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLES = ROOT / "examples"
BUILD = EXAMPLES / "build"
BUILT = ["libadd_one.so", "libadd_one_v2.so", "libbroken.so", "libkernels.so", "x.npy"]
SOURCES = ["add_one.c", "broken.c", "run.sh"]
EXIT_RE = re.compile(r"#\s*exit\s+(\d+)\s*$")


@dataclass
class Command:
    line: int  # 1-based line of README.md
    text: str
    exit_code: int
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    line: int
    commands: list[Command]


def parse_readme(text: str) -> list[Block]:
    """The console blocks of a README and their `$ ` commands with the
    output lines shown under each."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        lang, start = m.group(1), i + 1
        j = start
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        body = lines[start:j]
        i = j + 1
        if lang not in ("console", "sh") or not any(b.startswith("$ ") for b in body):
            continue
        cmds: list[Command] = []
        for k, b in enumerate(body):
            if b.startswith("$ "):
                em = EXIT_RE.search(b)
                cmds.append(Command(start + k + 1, b[2:], int(em.group(1)) if em else 0))
            elif cmds:
                cmds[-1].expected.append(b)
            else:
                raise AssertionError(f"README.md:{start + k + 1}: output before any $ command")
        blocks.append(Block(start, cmds))
    return blocks


def _norm(s: str) -> str:
    return " ".join(s.split())


def _pattern(shown: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in _norm(shown).split("…")]
    return re.compile(".*".join(parts))


def missing_lines(expected: list[str], actual: str) -> list[str]:
    """Shown lines not found, in order, among the actual output lines."""
    got = [_norm(a) for a in actual.splitlines()]
    pos, missing = 0, []
    for shown in expected:
        if not shown.strip() or shown.strip() == "...":
            continue
        pat = _pattern(shown)
        for k in range(pos, len(got)):
            if pat.fullmatch(got[k]):
                pos = k + 1
                break
        else:
            missing.append(shown)
    return missing


def _stale() -> bool:
    newest = max((EXAMPLES / s).stat().st_mtime for s in SOURCES)
    return any(not (BUILD / b).exists() or (BUILD / b).stat().st_mtime < newest for b in BUILT)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "TVMFFI_RUNTIME")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(COLUMNS="100", NO_COLOR="1", LC_ALL="C.UTF-8")
    return env


@pytest.fixture(scope="session")
def example_build() -> None:
    """`sh examples/run.sh` (README command 1 after pip), once, under a lock
    so parallel workers do not build over each other."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / ".readme-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stale():
            r = subprocess.run(
                ["sh", "examples/run.sh"],
                cwd=ROOT,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert r.returncode == 0, f"examples/run.sh failed:\n{r.stdout}\n{r.stderr}"


BLOCKS = parse_readme(README.read_text(encoding="utf-8"))


def test_readme_has_the_blocks_it_promises() -> None:
    cmds = [c.text for b in BLOCKS for c in b.commands]
    for name in ("inspect", "call", "bench", "conform", "config", "stubs", "diff", "extract"):
        assert any(c.startswith(f"tvmffi {name} ") for c in cmds), name
    assert any("_TVMFFI_COMPLETE=bash_source tvmffi" in c for c in cmds)
    assert any(c.exit_code == 1 for b in BLOCKS for c in b.commands)
    assert any(c.exit_code == 2 for b in BLOCKS for c in b.commands)
    text = README.read_text(encoding="utf-8")
    setup = 'python3 -m venv .venv && . .venv/bin/activate && pip install ".[test]" && sh examples/run.sh'
    assert setup in text and "\npython -m pytest\n" in text
    assert len(text.splitlines()) <= 620


def test_readme_links_point_at_files() -> None:
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target or target.startswith("#"):
            continue
        assert (ROOT / target.split("#")[0]).exists(), target


def test_parser_and_matcher() -> None:
    blocks = parse_readme("x\n```console\n$ a  # exit 2\nout 1\n...\n$ b\n```\n```sh\nno\n```\n")
    assert [(c.text, c.exit_code, c.expected) for c in blocks[0].commands] == [
        ("a  # exit 2", 2, ["out 1", "..."]),
        ("b", 0, []),
    ]
    assert len(blocks) == 1
    assert missing_lines(["a  b", "...", "t: … ns"], "a b\nx\nt: 3.1 ns\n") == []
    assert missing_lines(["t: … ns", "a b"], "a b\nt: 3.1 ns\n") == ["a b"]  # order matters
    assert missing_lines(["42"], "420\n") == ["42"]  # whole lines, not substrings


@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b.line}" for b in BLOCKS])
def test_readme_block(block: Block, example_build: None) -> None:
    for cmd in block.commands:
        assert "/tmp" not in cmd.text and ".." not in cmd.text, cmd.text
        r = subprocess.run(
            ["bash", "-c", cmd.text],
            cwd=ROOT,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=60,
        )
        where = f"README.md:{cmd.line}: $ {cmd.text}"
        assert r.returncode == cmd.exit_code, f"{where}\nexit {r.returncode}\n{r.stdout}"
        if not [e for e in cmd.expected if e.strip()]:
            # shown with no output: it prints nothing (a note that the kernel
            # lacks a sandbox feature may reach stderr on some hosts)
            extra = [ln for ln in r.stdout.splitlines() if not ln.startswith("tvmffi: sandbox:")]
            assert not extra, f"{where}\nprints what the README does not show:\n{r.stdout}"
        missing = missing_lines(cmd.expected, r.stdout)
        assert not missing, f"{where}\nnot in the output: {missing}\noutput:\n{r.stdout}"
