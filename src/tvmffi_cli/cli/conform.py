"""`tvmffi conform LIB`: check a library against the TVM-FFI ABI rules."""

import os
import sys

import click


@click.command("conform")
@click.argument("library", type=click.Path(dir_okay=True, path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--junit-xml", "junit_xml", metavar="PATH",
              help="Also write a JUnit XML report (one testcase per check and function).")
@click.option("--select", "select", multiple=True, metavar="IDS",
              help="Run only these check ids (comma-separated, repeatable).")
@click.option("--ignore", "ignore", multiple=True, metavar="IDS",
              help="Do not run these check ids (comma-separated, repeatable).")
@click.option("--timeout", type=float, default=10.0, show_default=True, metavar="S",
              help="Seconds each probe call may take before it counts as a hang.")
@click.option("-j", "--jobs", type=int, default=None, metavar="N",
              help="Worker processes probing in parallel (default: number of CPUs).")
@click.option("-v", "--verbose", is_flag=True, help="List skipped checks with their reasons.")
def command(library, as_json, junit_xml, select, ignore, timeout, jobs, verbose):
    """Check LIBRARY against the TVM-FFI ABI rules (see docs/checks.md).

    Exit 0 when no error-severity check fails, 1 when one does, 2 when the
    file cannot be read.
    """
    from ..conform import registry, runner
    from ..conform.results import github_annotations
    from ..errors import InputError

    sel = registry.parse_ids(select)
    ign = registry.parse_ids(ignore)
    if timeout <= 0:
        raise InputError("--timeout must be positive")
    if jobs is not None and jobs < 1:
        raise InputError("-j must be at least 1")
    if os.path.isdir(library):
        raise InputError(f"{library}: is a directory")

    progress = None
    bar = None
    if not as_json and sys.stderr.isatty() and not os.environ.get("CI"):
        bar = _ProgressBar()
        progress = bar.update
    try:
        report = runner.run(library, select=sel, ignore=ign, timeout=timeout, jobs=jobs,
                            progress=progress)
    finally:
        if bar is not None:
            bar.close()

    if junit_xml:
        from ..conform import junit

        junit.write(report, junit_xml)
    if as_json:
        import json

        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        from ..render.common import make_console
        from ..render.conform import render

        render(report, make_console(), verbose=verbose)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(report):
            # Workflow commands are read from stdout; with --json keep stdout pure JSON.
            print(line, file=sys.stderr if as_json else sys.stdout)
    return report.exit_code()


class _ProgressBar:
    """A rich progress bar on stderr, created on the first update (static
    checks alone never show one)."""

    def __init__(self):
        self._p = None
        self._task = None

    def update(self, done, total, name):
        if self._p is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            from ..render.common import make_console

            self._p = Progress(TextColumn("probing"), BarColumn(), MofNCompleteColumn(),
                               TextColumn("{task.description}"),
                               console=make_console(stderr=True), transient=True)
            self._p.start()
            self._task = self._p.add_task("", total=total)
        self._p.update(self._task, completed=done, description=name)

    def close(self):
        if self._p is not None:
            self._p.stop()
