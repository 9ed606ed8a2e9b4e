"""People's output of a command over a wheel or a directory: one row per
TVM-FFI library, the wheel's own checks, and a summary line (rich)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..wheel.engine import BundleResult, LibraryOutcome


def _esc(s: object) -> str:
    from rich.markup import escape

    from .. import text

    return str(escape(text.terminal(str(s), one_line=True)))


def _status(o: LibraryOutcome) -> str:
    if o.note:
        return "[dim]left out[/]"
    if o.error:
        return "[red]ERROR[/]"
    return "[green]ok[/]" if o.exit_code == 0 else "[red]FAIL[/]"


def _runs_on(rr: Any) -> str:
    """apache-tvm-ffi releases a RuntimeRange admits, as people read them."""
    if rr is None:
        return "-"
    if not rr.ok_releases:
        return "[red]no known release[/]"
    ok = rr.ok_releases
    return _esc(ok[0] if len(ok) == 1 else f"{ok[0]} .. {ok[-1]} ({len(ok)})")


def _details(command: str, o: LibraryOutcome) -> str:
    r: Any = o.report
    if o.note or o.error:
        return _esc(o.note or o.error)
    if command == "inspect":
        text = f"{len(r['functions'])} function(s)"
        text += f", {len(r['modules'])} module(s)" if r["modules"] else ""
        text += f", {len(r['globals'])} global(s)" if r["globals"] else ""
        if r["errors"]:
            text += f"; {len(r['errors'])} problem(s): {r['errors'][0]['message']}"
        return _esc(text)
    if command == "conform":
        c = r.counts()
        return _esc(", ".join(f"{n} {k}" for k, n in c.items() if n) or "no checks")
    if command == "extract":
        return _esc(f"{len(r.entries)} file(s), {len(r.modules)} module(s) -> {r.directory}")
    if command == "stubs":
        return _esc(f"{r.exports} export(s), {r.globals} global(s), {r.types} type(s)")
    return ""


def render_bundle(res: BundleResult) -> None:
    from rich.table import Table

    from .common import make_console

    con = make_console()
    b = res.bundle
    title = f"tvmffi {res.command} {_esc(b.source)}"
    if b.metadata is not None:
        spec = b.metadata.runtime_specifier
        declared = (
            "no apache-tvm-ffi requirement"
            if spec is None
            else f"requires apache-tvm-ffi{spec}"
            if spec
            else "requires apache-tvm-ffi (any version)"
        )
        title += f"  ({_esc(b.metadata.name)} {_esc(b.metadata.version)}, {_esc(declared)})"
    t = Table(title=title, title_justify="left")
    t.add_column("library", no_wrap=True)
    t.add_column("status")
    t.add_column("runs on (known releases)", overflow="fold")
    t.add_column("details", overflow="fold")
    for o in res.outcomes:
        t.add_row(_esc(o.member), _status(o), _runs_on(o.range), _details(res.command, o))
    con.print(t)
    con.print(f"all libraries together run on: {_runs_on(res.combined_range())}")
    by_role: dict[str, list[str]] = {}
    for f in b.files:
        if f.role != "tvm-ffi":
            by_role.setdefault(f.role, []).append(f.member.rsplit("/", 1)[-1])
    what = {
        "runtime": "its own runtime (defines the C API)",
        "other": "without TVM-FFI",
        "unreadable": "not a library we read",
    }
    for role, names in by_role.items():
        shown = ", ".join(names[:5]) + (f", +{len(names) - 5} more" if len(names) > 5 else "")
        con.print(f"[dim]not checked, {what.get(role, role)}: {_esc(shown)}[/]")
    for c in res.checks:
        mark = (
            "[green]PASS[/]" if not c.bad else "[red]FAIL[/]" if c.blocking else "[yellow]WARN[/]"
        )
        con.print(f"{mark} {c.check}: {_esc(c.message)}")
    con.print(_esc(res.summary_line()))
