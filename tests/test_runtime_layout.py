"""The C runtime's file-level call graph: layered and free of circles.

Every C file under runtime/src/ is compiled on its own (gcc -c), `nm` gives
what it defines and what it leaves undefined, and an undefined symbol that
another file defines is an edge "file -> that file". The graph must have no
cycle, and an edge may only go to the same or a lower-numbered layer
directory (runtime/src/<N>_<area>/, see runtime/src/README.md).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "runtime" / "src"
LAYER_DIR = re.compile(r"^(\d+)_[a-z_]+$")

Graph = dict[str, dict[str, set[str]]]


def find_cycle(graph: Graph) -> list[str] | None:
    """One cycle of `graph` as [a, b, ..., a], or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, {})):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def layer_of(rel: str) -> int:
    m = LAYER_DIR.match(rel.split("/")[0])
    assert m is not None, f"{rel}: not in a numbered layer directory"
    return int(m.group(1))


def _symbols(obj: Path) -> tuple[set[str], set[str]]:
    out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    defined: set[str] = set()
    undefined: set[str] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWCu":
            defined.add(parts[2])
    return defined, undefined


@pytest.fixture(scope="module")
def call_graph(tmp_path_factory: pytest.TempPathFactory) -> Graph:
    gcc = shutil.which("gcc")
    if gcc is None or shutil.which("nm") is None:
        pytest.skip("gcc and nm are needed to derive the call graph")
    out = tmp_path_factory.mktemp("rtobj")
    files = sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.c"))
    assert files, "no C sources found"
    symbols: dict[str, tuple[set[str], set[str]]] = {}
    for i, rel in enumerate(files):
        obj = out / f"{i}.o"
        r = subprocess.run(
            [
                gcc,
                "-c",
                "-O0",
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-D_GNU_SOURCE",
                "-DTVM_FFI_EXPORTS",
                "-fvisibility=hidden",
                "-fPIC",
                f"-I{ROOT / 'runtime' / 'include'}",
                f"-I{SRC}",
                str(SRC / rel),
                "-o",
                str(obj),
            ],
            check=False,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, f"{rel} does not compile warning-free:\n{r.stderr}"
        symbols[rel] = _symbols(obj)
    owner: dict[str, str] = {}
    for rel, (defined, _) in symbols.items():
        for s in defined:
            assert owner.setdefault(s, rel) == rel, f"{s} defined in {owner[s]} and {rel}"
    graph: Graph = {rel: {} for rel in files}
    for rel, (_, undefined) in symbols.items():
        for s in undefined:
            dst = owner.get(s)
            if dst is not None and dst != rel:
                graph[rel].setdefault(dst, set()).add(s)
    return graph


def test_cycle_finder_finds_a_planted_circle() -> None:
    planted: Graph = {"a": {"b": {"f"}}, "b": {"c": {"g"}}, "c": {"a": {"h"}}, "d": {"a": {"x"}}}
    assert find_cycle(planted) == ["a", "b", "c", "a"]
    del planted["c"]["a"]
    assert find_cycle(planted) is None


def test_every_c_file_sits_in_a_layer_directory() -> None:
    stray = [
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*.c")
        if not LAYER_DIR.match(p.relative_to(SRC).parts[0])
    ]
    assert stray == [], f"C files outside runtime/src/<N>_<area>/: {stray}"


def test_no_call_circle_between_files(call_graph: Graph) -> None:
    cycle = find_cycle(call_graph)
    if cycle:
        steps = [
            f"{a} -> {b} ({', '.join(sorted(call_graph[a][b])[:3])})"
            for a, b in zip(cycle, cycle[1:])
        ]
        pytest.fail("call circle between runtime files:\n  " + "\n  ".join(steps))


def test_calls_go_only_down_the_layers(call_graph: Graph) -> None:
    upward = [
        f"{src} -> {dst} ({', '.join(sorted(syms)[:3])})"
        for src, edges in sorted(call_graph.items())
        for dst, syms in sorted(edges.items())
        if layer_of(dst) > layer_of(src)
    ]
    assert upward == [], "calls into a higher layer:\n  " + "\n  ".join(upward)


def test_graph_sees_the_known_edges(call_graph: Graph) -> None:
    """The derivation itself works: edges every layering keeps are present."""
    assert "rt_raise" in call_graph["3_string/string.c"]["2_error/error.c"]
    assert "rt_object_free" in call_graph["2_error/error.c"]["1_object/object.c"]
    assert call_graph["1_object/counters.c"] == {}
