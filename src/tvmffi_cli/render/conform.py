"""People-facing output of `tvmffi conform`: a table grouped by function.

Passing checks are counted, not listed, and functions without findings fold
into one row (-v lists them): a clean 300-function library stays one screen,
and every failure, error and (with -v) skip reason is spelt out. Rich lays
out a table row in about 3 ms, so the fold also keeps big runs fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import text
from ..conform.results import ERROR, FAIL, PASS, SKIP

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ..conform.results import Report, Result

_STYLE = {PASS: "green", FAIL: "red", ERROR: "magenta", SKIP: "dim"}


def render(report: Report, console: Console, verbose: bool = False) -> None:
    from rich.table import Table
    from rich.text import Text

    groups: dict[str | None, list[Result]] = {}
    for r in report.results:
        groups.setdefault(r.function, []).append(r)
    table = Table(expand=False, show_lines=False)
    rows: list[tuple[str, Text, str, Text]] = []
    table.add_column("function", overflow="fold")
    table.add_column("status")
    table.add_column("checks", justify="right")
    table.add_column("findings", overflow="fold")
    # A library that did not load was not probed: its functions are "not
    # loaded", not "ok" next to the load failure.
    not_loaded = any(
        r.check == "library-load" and r.status in (FAIL, ERROR) for r in report.results
    )
    folded = [0, 0, 0, 0]  # functions, passed, checks, skipped
    listed = 0  # functions with a row of their own
    for fn in sorted(groups, key=lambda k: (k is not None, k or "")):
        rs = groups[fn]
        n_pass = sum(r.status == PASS for r in rs)
        bad = [r for r in rs if r.status in (FAIL, ERROR)]
        skips = [r for r in rs if r.status == SKIP]
        idle = fn in report.not_run
        if fn is not None and not bad and not verbose and not idle:
            for i, n in enumerate((1, n_pass, len(rs), len(skips))):
                folded[i] += n
            continue
        listed += fn is not None
        if any(r.blocking for r in bad):
            status = Text("FAIL", style="bold red")
        elif any(r.suppressed is None for r in bad):
            status = Text("WARN", style="yellow")
        elif bad:
            status = Text("ok*", style="green")
        elif not_loaded and fn is not None:
            status = Text("not loaded", style="yellow")
        elif idle:
            status = Text("not run", style="yellow")
        else:
            status = Text("ok", style="green")
        lines = Text()
        for r in bad:
            sev = "" if r.severity == "error" else f" ({r.severity})"
            style = _STYLE[r.status] if r.severity == "error" else "yellow"
            if lines:
                lines.append("\n")
            if r.suppressed is not None:
                lines.append(f"{r.check}{sev} (suppressed: {r.suppressed}): ", style="dim")
                lines.append(text.one_line(r.message or ""), style="dim")
                continue
            lines.append(f"{r.check}{sev}: ", style=f"bold {style}")
            lines.append(text.one_line(r.message or ""))
        if idle and not bad:
            lines.append("its kernels never ran: no CUDA device (not checked)", style="yellow")
        if verbose:
            for r in skips:
                if lines:
                    lines.append("\n")
                lines.append(f"{r.check} skipped: ", style="dim")
                lines.append(text.one_line(r.message or ""), style="dim")
        counts = f"{n_pass}/{len(rs)}"
        if skips and not verbose:
            counts += f" ({len(skips)} skip)"
        rows.append(("(library)" if fn is None else text.one_line(fn), status, counts, lines))
    if folded[0]:
        n_fn, n_pass, n_all, n_skip = folded
        counts = f"{n_pass}/{n_all}" + (f" ({n_skip} skip)" if n_skip else "")
        plural = "s" if n_fn != 1 else ""
        label = f"{n_fn} other function{plural}" if listed else f"all {n_fn} function{plural}"
        rows.append(
            (
                label,
                Text("not loaded", style="yellow") if not_loaded else Text("ok", style="green"),
                counts,
                Text(
                    "not probed: the library did not load"
                    if not_loaded
                    else "no findings (-v lists them)",
                    style="dim",
                ),
            )
        )
    # The title on a line of its own: a path is never broken to a table's width.
    console.print(
        Text(f"tvmffi conform {text.one_line(report.path)}"), crop=False, overflow="ignore"
    )
    if _table_fits(rows, console.width):
        for row in rows:
            table.add_row(*row)
        console.print(table)
    else:
        _print_list(console, rows)
    shown = [r for r in report.results if r.bad and r.reproduce and r.suppressed is None]
    if shown:
        console.print(Text("Reproduce:", style="bold"))
        for r in shown[:REPRODUCE_SHOWN]:
            where = text.one_line(r.function) if r.function is not None else "(library)"
            console.print(
                Text.assemble(f"  {r.check} {where}: ", (text.one_line(r.reproduce or ""), "cyan")),
                soft_wrap=True,
            )
            _cause_and_fix(console, r)
        if len(shown) > REPRODUCE_SHOWN:
            console.print(
                f"  ... {len(shown) - REPRODUCE_SHOWN} more in --json (field reproduce)",
                markup=False,
            )
    sup = [r for r in report.results if r.bad and r.suppressed is not None]
    if sup:
        console.print(Text(f"{len(sup)} finding(s) suppressed by the configuration", style="dim"))
    if report.shared_process is not None:
        console.print(
            Text(
                "functions shared a probe process (" + text.one_line(report.shared_process) + "): "
                "a verdict may depend on the functions probed before it",
                style="yellow",
            ),
            soft_wrap=True,
        )
    console.print(Text(counts_line(report), style="dim"))
    verdict = Text.assemble(("", "bold green" if report.passed else "bold red"))
    verdict.append(
        text.one_line(report.summary_line()), style="bold green" if report.passed else "bold red"
    )
    console.print(verdict, soft_wrap=True)


#: The narrowest findings column the table is drawn with; narrower, each
#: function is a line (name, status, checks) with its findings under it.
FINDINGS_MIN = 40
_BORDERS = 13  # a 4-column table's rules and cell padding


def _table_fits(rows: list[tuple[str, Text, str, Text]], width: int) -> bool:
    widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
    return (
        _BORDERS + max(widths[0], 8) + max(widths[1], 6) + max(widths[2], 6) + FINDINGS_MIN <= width
    )


def _print_list(console: Console, rows: list[tuple[str, Text, str, Text]]) -> None:
    """The narrow layout: names and findings are never broken to fit a column."""
    from rich.padding import Padding
    from rich.text import Text

    name_w = max(len("function"), *(len(r[0]) for r in rows))
    status_w = max(len("status"), *(len(str(r[1])) for r in rows))
    head = f"{'function':<{name_w}}  {'status':<{status_w}}  checks"
    console.print(Text(head, style="bold"), crop=False, overflow="ignore")
    for name, status, counts, lines in rows:
        line = Text(f"{name:<{name_w}}  ")
        line.append_text(status)
        line.append(" " * (status_w - len(str(status))) + f"  {counts}")
        console.print(line, crop=False, overflow="ignore")
        if lines:
            console.print(Padding(lines, (0, 0, 0, 4)))


def counts_line(report: Report) -> str:
    """Results by weight: failures (blocking), warnings (not), suppressed
    findings, checks that could not run, passes and skips, never a warning
    counted as a failure."""
    rs = report.results
    live = [r for r in rs if r.suppressed is None]
    failed = sum(r.blocking and r.status == FAIL for r in live)
    warned = sum(r.status == FAIL and not r.blocking for r in live)
    sup = sum(r.bad and r.suppressed is not None for r in rs)
    tool = sum(r.status == ERROR for r in live)
    parts = [
        f"{sum(r.status == PASS for r in rs)} passed",
        f"{failed} failed",
        f"{warned} warning(s)",
    ]
    if sup:
        parts.append(f"{sup} suppressed")
    if tool:
        parts.append(f"{tool} could not run")
    parts.append(f"{sum(r.status == SKIP for r in rs)} skipped")
    return ", ".join(parts)


def _cause_and_fix(console: Console, r: Result) -> None:
    """Under a finding's reproducer: the library's own last words (its stderr
    before the crash, already bounded and sanitized) and the check's fix."""
    from rich.text import Text

    if r.output:
        tail = r.output.splitlines()[-OUTPUT_LINES:]
        console.print(Text("      library output:", style="dim"))
        for line in tail:
            console.print(Text(f"        {text.one_line(line)}", style="dim"), soft_wrap=True)
    console.print(Text.assemble(("      fix: ", "bold"), text.one_line(r.fix)), soft_wrap=True)


#: Lines of library output shown per finding (--json has up to 12).
OUTPUT_LINES = 4
#: How many reproducer commands the people's report lists.
REPRODUCE_SHOWN = 20
