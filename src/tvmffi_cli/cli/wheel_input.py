"""A wheel or a directory of libraries as the input of inspect, conform, stubs
and extract: open it (tvmffi_cli.wheel), run the command's engine on each
TVM-FFI library, print (rich table, or one JSON document) and return the exit
code. Each command calls in here when `is_bundle(path)`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from ..inspect.report import Runtime


def is_bundle(path: str) -> bool:
    # Cheap on purpose (the inspect fast path asks): os.path only.
    return os.path.isdir(path) or (path.lower().endswith(".whl") and os.path.isfile(path))


def _emit_json(res: Any, runtimes: Mapping[str, Optional[Runtime]] | None = None) -> None:
    """The wheel document; each library's report gets the contract keys of
    its own command's --json (its runtime: from `runtimes` by library path,
    else the report's own; None: none could be chosen)."""
    from ..inspect.report import as_json
    from . import jsonout

    doc = res.to_json()
    for entry in doc.get("libraries", ()):
        rep = entry.get("report")
        if isinstance(rep, dict):
            rt = (runtimes or {}).get(entry.get("library"), rep.get("runtime"))
            entry["report"] = jsonout.contract(
                rep, library=entry.get("library"), runtime=as_json(rt)
            )
    sys.stdout.write(jsonout.dumps(jsonout.contract(doc, library=doc.get("library"))) + "\n")


def _finish(
    res: Any, as_json: bool, runtimes: Mapping[str, Optional[Runtime]] | None = None
) -> int:
    if as_json:
        _emit_json(res, runtimes)
    else:
        from ..render.wheel import render_bundle

        render_bundle(res)
    for o in res.outcomes:
        if o.error:
            from .. import text

            sys.stdout.flush()
            sys.stderr.write(
                f"tvmffi: error: {text.one_line(o.library)}: {text.one_line(o.error)}\n"
            )
    return int(res.exit_code)


def inspect(path: str, static: bool, as_json: bool, timeout: float, runtime: str | None) -> int:
    from ..wheel import inspect_bundle, open_bundle

    with open_bundle(path) as b:
        res = inspect_bundle(b, static, timeout, runtime)
        return _finish(res, as_json)


def stubs(path: str, static: bool, timeout: float, runtime: str | None, output: str | None) -> int:
    from ..wheel import open_bundle, stubs_bundle

    if output is not None and os.path.exists(output) and not os.path.isdir(output):
        from ..errors import InputError

        raise InputError(
            f"{output}: exists and is not a directory (a wheel gives one stub per library)"
        )
    with open_bundle(path) as b:
        res = stubs_bundle(b, static, timeout, runtime, output)
    if output is None:
        for o in res.outcomes:
            if o.report is not None:
                sys.stdout.write(f"# ---- {o.library} ----\n{o.report.text}")
        for o in res.outcomes:
            if o.error:
                sys.stderr.write(f"tvmffi: error: {o.library}: {o.error}\n")
        return int(res.exit_code)
    return _finish(res, False)


def extract(path: str, directory: str, force: bool, as_json: bool) -> int:
    from ..wheel import extract_bundle, open_bundle

    with open_bundle(path) as b:
        res = extract_bundle(b, directory, force)
    return _finish(res, as_json)


def conform(
    path: str,
    options_for: Callable[[str], Any],
    declared: bool,
    as_json: bool,
    junit_xml: str | None,
    verbose: bool,
) -> int:
    from ..wheel import conform_bundle, open_bundle

    runtimes: dict[str, Runtime | None] = {}

    def recording(lib: str) -> Any:
        from .sandbox_opts import runtime_json

        o = options_for(lib)
        shown = next((b.display(f) for f in b.files if f.path == lib), lib)
        runtimes[shown] = runtime_json(o.runtime_arg, lib)
        return o

    with open_bundle(path) as b:
        res = conform_bundle(b, recording, declared)
    if junit_xml:
        from ..wheel.junit import write

        write(res, junit_xml)
    if not as_json:
        from ..render.common import make_console
        from ..render.conform import render

        con = make_console()
        for o in res.outcomes:
            # The summary table says enough of a clean library.
            if o.report is not None and (verbose or o.report.failures()):
                render(o.report, con, verbose=verbose)
    rc = _finish(res, as_json, runtimes)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from ..conform.results import Report, github_annotations

        reports = [o.report for o in res.outcomes if o.report is not None]
        if res.checks:  # the wheel's own findings, with file= the wheel
            reports.append(Report(path, list(res.checks), []))
        for rep in reports:
            for line in github_annotations(rep):
                print(line, file=sys.stderr if as_json else sys.stdout)
    return rc
