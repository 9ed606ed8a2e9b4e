"""People's output of `tvmffi stubs`, `diff` and `extract` (rich)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..diff.engine import DiffResult
    from ..extract.engine import ExtractResult
    from ..stubs.engine import StubResult


def _console(stderr: bool = False) -> Any:
    from .common import make_console

    make: Callable[..., Any] = make_console
    return make(stderr=stderr)


def _esc(s: object) -> str:
    """Text from a library, safe for a terminal: control characters shown as
    escapes, rich markup escaped."""
    from rich.markup import escape

    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(s))
    return str(escape(text))


def render_diff(r: DiffResult) -> None:
    from rich.table import Table

    con = _console()
    if not r.changes:
        what = {
            "compatible": "No changes",
            "cannot judge": "No changes seen (not everything was compared)",
        }[r.verdict]
        con.print(f"{what}: {_esc(r.new_path)} has the API of {_esc(r.old_path)} ({r.mode}).")
    else:
        t = Table(
            title=f"{_esc(r.old_path)} -> {_esc(r.new_path)} ({r.mode})", title_justify="left"
        )
        t.add_column("", no_wrap=True)
        t.add_column("change", no_wrap=True)
        for col in ("what", "old", "new"):
            t.add_column(col, overflow="fold")
        for c in r.changes:
            verdict = (
                "note"
                if c.note
                else "ok"
                if c.compatible
                else ("accepted" if c.suppressed else "[red]BREAKS[/]")
            )
            t.add_row(
                verdict,
                c.kind,
                _esc(c.subject),
                _esc(c.old if c.old is not None else "-"),
                _esc(c.new if c.new is not None else "-"),
            )
        con.print(t)
        bad = sum(not c.compatible for c in r.changes)
        acc = sum(c.suppressed for c in r.changes)
        notes = sum(c.note for c in r.changes)
        con.print(
            f"{len(r.changes)} change(s), {bad} incompatible"
            + (f" ({acc} suppressed)" if acc else "")
            + (f", {notes} note(s)" if notes else "")
            + ": "
            + {
                "compatible": "[green]compatible[/]",
                "incompatible": "[red]incompatible[/]",
                "cannot judge": "[yellow]cannot judge[/]",
            }[r.verdict]
        )
    for line in r.not_compared:
        con.print(f"[yellow]not compared:[/] {_esc(line)}")
    if r.not_compared and r.compatible:
        from ..diff.kinds import RANGE_GAP

        fixes = []
        if any(not n.startswith(RANGE_GAP) for n in r.not_compared):
            fixes.append(
                "make both libraries load (a missing dependency, --runtime, --timeout) or "
                "ask for a comparison of the files with --static"
            )
        if any(n.startswith(RANGE_GAP) for n in r.not_compared):
            fixes.append(
                "make the runtimes of those releases reachable (the registry, or the "
                "cache ~/.cache/tvmffi) or compare the ranges by symbols with --symbols-range"
            )
        con.print(
            "[yellow]cannot judge:[/] no break among what was compared, but not everything "
            f"was (exit 2); {'; '.join(fixes)}"
        )
    if r.promise:
        con.print(f"[dim]{_esc(r.promise)}[/]")
    for w in r.warnings:
        con.print(f"[yellow]warning:[/] {_esc(w)}")


def render_extract(r: ExtractResult) -> None:
    from rich.table import Table

    from .common import human_size as _hs

    human_size: Callable[[int], str] = _hs
    con = _console()
    if not r.entries:
        con.print(f"Nothing embedded in {_esc(r.library)}; wrote an empty manifest.json.")
    else:
        t = Table(title=f"{_esc(r.library)} -> {_esc(r.directory)}", title_justify="left")
        for col in ("file", "kind", "format", "size", "arch", "source", "kernels"):
            t.add_column(col, overflow="fold")
        for e in r.entries:
            t.add_row(
                _esc(e.file),
                e.kind,
                e.format,
                human_size(e.size),
                e.architecture or "-",
                _esc(f"{e.symbol}+{e.offset}"),
                _esc(", ".join(e.kernels) or "-"),
            )
        con.print(t)
    for msg in r.errors:
        con.print(f"[red]error:[/] {_esc(msg)}")


def render_stub_summary(r: StubResult, path: str, stderr: bool = True) -> None:
    con = _console(stderr=stderr)
    con.print(
        f"wrote {_esc(path)}: {r.exports} export(s), {r.globals} global(s), "
        f"{r.types} type(s); {r.typed} typed, {len(r.untyped)} untyped ({r.mode})"
    )
