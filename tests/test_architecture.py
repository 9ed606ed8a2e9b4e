"""The layout of src/tvmffi_cli (docs/architecture.md, issue 10) as tests.

Every module's imports are read with `ast` (imports inside functions count:
a lazy import is still a dependency) into a graph of modules, which must have
no cycle, and whose edges between rooms must follow the table below. No
module may grow past MAX_LINES.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = "tvmffi_cli"
SRC = Path(__file__).resolve().parents[1] / "src" / PKG
# "No module over ~600 lines": 600 plus a margin for the formatter, which
# puts every argument of a long call on its own line.
MAX_LINES = 620

#: room -> rooms it may import (besides itself). "*" = anything.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "text": set(),  # sanitizers of library text (text.py), usable by every room
    "abi": {"text", "errors"},
    "binary": {"text", "abi", "errors"},
    "ffi": {"text", "abi", "binary", "errors"},
    "sandbox": {"text", "errors"},
    "inspect": {"text", "sandbox", "ffi", "binary", "abi", "errors"},
    "call": {"text", "sandbox", "ffi", "binary", "abi", "errors"},
    "conform": {"text", "sandbox", "ffi", "binary", "abi", "errors", "call"},
    "stubs": {"text", "inspect", "binary", "abi", "errors"},
    "diff": {"text", "inspect", "binary", "abi", "errors"},
    "extract": {"text", "inspect", "binary", "abi", "errors"},
    # Wheels and directories as input: the engines above, once per library.
    "wheel": {"text", "inspect", "conform", "stubs", "extract", "binary", "abi", "errors"},
    "render": {
        "text",
        "inspect",
        "call",
        "conform",
        "stubs",
        "diff",
        "extract",
        "wheel",
        "binary",
        "abi",
        "errors",
    },
    # The public Python API (api.py): engines, never cli/ or render/.
    "api": {"text", "inspect", "call", "conform", "ffi", "sandbox", "binary", "abi", "errors"},
    "cli": {"*"},
    "": {"*"},  # tvmffi_cli/__init__.py and __main__.py: the public re-exports
}

#: Finer grants than the room table: (importing module, imported module) prefixes.
EXTRA: list[tuple[str, str, str]] = [
    # The child side of the sandbox runs tasks that load libraries.
    (f"{PKG}.sandbox.worker", f"{PKG}.ffi", "child side"),
    (f"{PKG}.sandbox.selftest", f"{PKG}.ffi", "child side"),
]

#: conform may use call's literal parsers, nothing else of call.
ONLY: dict[tuple[str, str], tuple[str, ...]] = {
    ("conform", "call"): (f"{PKG}.call.literals", f"{PKG}.call.argv", f"{PKG}.call"),
}

#: Modules allowed past MAX_LINES, each with the reason. Keep this empty.
TOO_LONG_OK: dict[str, str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of this package that `name` imports anywhere in its file."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == PKG:
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != PKG:
                continue
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.add(sub if sub in known else mod)
    return {m for m in out if m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    g = {}
    for name, path in mods.items():
        deps = imports_of(name, path, known)
        missing = sorted(d for d in deps if d not in known)
        assert not missing, f"{name} imports modules that do not exist: {missing}"
        g[name] = deps
    return g


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One cycle of g as [a, b, ..., a], or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(g, WHITE)
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        color[n] = GREY
        stack.append(n)
        for m in sorted(g[n]):
            if color[m] == GREY:
                return stack[stack.index(m) :] + [m]
            if color[m] == WHITE:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        color[n] = BLACK
        return None

    for n in sorted(g):
        if color[n] == WHITE:
            c = visit(n)
            if c:
                return c
    return None


def room(mod: str) -> str:
    parts = mod.split(".")
    if len(parts) == 1 or parts[1] in ("__main__",):
        return ""
    return parts[1]


def violations(g: dict[str, set[str]]) -> list[str]:
    bad = []
    for a, deps in sorted(g.items()):
        ra = room(a)
        for b in sorted(deps):
            rb = room(b)
            if rb == ra or rb == "" and b == PKG and ra == "":
                continue
            allowed = ALLOWED.get(ra)
            if allowed is None:
                bad.append(f"{a}: room {ra!r} is not in the layout table")
                continue
            if "*" in allowed:
                continue
            if any(a.startswith(x) and (b == y or b.startswith(y + ".")) for x, y, _ in EXTRA):
                continue
            if rb not in allowed:
                bad.append(f"{a} imports {b}: room {ra!r} may not import {rb or PKG!r}")
                continue
            only = ONLY.get((ra, rb))
            if only and b not in only:
                bad.append(f"{a} imports {b}: {ra!r} may use only {', '.join(only)} of {rb!r}")
    return bad


def test_graph_sees_function_level_imports():
    g = graph()
    # cli/main.py imports .app only inside _run_click: still an edge.
    assert f"{PKG}.cli.app" in g[f"{PKG}.cli.main"]
    assert f"{PKG}.errors" in g[f"{PKG}.cli.main"]


def test_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_reports_a_planted_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(g) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_rooms_import_only_what_the_layout_allows():
    bad = violations(graph())
    assert not bad, "layout violations:\n  " + "\n  ".join(bad)


def test_room_checker_reports_a_planted_violation():
    g = {
        f"{PKG}.abi.structs": {f"{PKG}.ffi.runtime"},
        f"{PKG}.ffi.runtime": set(),
        f"{PKG}.conform.x": {f"{PKG}.call.task"},
        f"{PKG}.call.task": set(),
    }
    bad = violations(g)
    assert any("abi.structs imports" in b for b in bad)
    assert any("conform.x imports" in b for b in bad)


def test_every_room_is_in_the_table():
    rooms = {room(m) for m in modules()}
    assert rooms <= set(ALLOWED), sorted(rooms - set(ALLOWED))


@pytest.mark.parametrize("rel", sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")))
def test_module_size(rel):
    n = len((SRC / rel).read_text().splitlines())
    if rel in TOO_LONG_OK:
        assert n > MAX_LINES, f"{rel} is {n} lines now: drop it from TOO_LONG_OK"
        return
    assert n <= MAX_LINES, f"{rel} has {n} lines (max {MAX_LINES}); split it by concern"


def test_too_long_exceptions_exist():
    for rel in TOO_LONG_OK:
        assert (SRC / rel).is_file(), rel


# --- every ABI fact defined once, in abi/ -------------------------------------

#: Symbol families: a string constant starting with one of these is a symbol
#: name (or prefix) and must come from abi/symbols.py.
SYMBOL_STARTS = ("__tvm_ffi", "__TVMFFI")


def _name_tables() -> dict[str, set[str]]:
    from tvmffi_cli.abi import devices, dtypes

    return {
        "dtype": set(dtypes.DTYPE_CODES) - {"int", "uint", "float", "bool"},
        "device": set(devices.DEVICE_TYPE_NAMES.values())
        - {"cpu", "cuda", "metal", "rocm", "vulkan", "opencl", "webgpu"},
    }


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = n.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def abi_fact_violations(sources: dict[str, str]) -> list[str]:
    """Symbol-name constants and dtype/device name tables outside abi/.
    sources: relative path -> text. A table is a literal container with two
    or more names of the same kind (prose mentioning one is fine)."""
    tables = _name_tables()
    bad = []
    for rel, text in sorted(sources.items()):
        if rel.startswith("abi/"):
            continue
        tree = ast.parse(text)
        docs = _docstrings(tree)
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                if n.value.startswith(SYMBOL_STARTS):
                    bad.append(f"{rel}:{n.lineno}: symbol name {n.value!r} (use abi.symbols)")
            if isinstance(n, (ast.Dict, ast.Set, ast.List, ast.Tuple)):
                elts = n.keys + n.values if isinstance(n, ast.Dict) else n.elts
                strs = {
                    e.value
                    for e in elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
                for kind, names in tables.items():
                    if len(strs & names) >= 2:
                        bad.append(
                            f"{rel}:{n.lineno}: a {kind} name table "
                            f"({', '.join(sorted(strs & names))}); use abi.{kind}s"
                        )
    return bad


def test_abi_facts_are_defined_only_in_abi():
    sources = {str(p.relative_to(SRC)): p.read_text() for p in SRC.rglob("*.py")}
    bad = abi_fact_violations(sources)
    assert not bad, "ABI facts outside abi/:\n  " + "\n  ".join(bad)


def test_abi_fact_checker_reports_planted_copies():
    bad = abi_fact_violations(
        {
            "x/a.py": 'PREFIX = "__tvm_ffi_"\n',
            "x/b.py": 'NAMES = {"cuda_host": 3, "ext_dev": 12}\n',
            "x/c.py": 'CODES = ("bfloat", "float8_e4m3fn")\n',
            "x/ok.py": '"""mentions __tvm_ffi_ in a docstring"""\nMSG = "no __tvm_ffi_x here"\n',
            "abi/symbols.py": 'PREFIX = "__tvm_ffi_"\n',
        }
    )
    assert [b.split(":")[0] for b in bad] == ["x/a.py", "x/b.py", "x/c.py"], bad


def test_abi_and_ffi_pass_mypy_strict():
    """abi/ and ffi/ are fully annotated ([tool.mypy] in pyproject.toml)."""
    pytest.importorskip("mypy", reason="mypy not installed (pip install mypy)")
    import subprocess
    import sys

    root = SRC.parents[1]
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "src/tvmffi_cli/abi",
            "src/tvmffi_cli/ffi",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
