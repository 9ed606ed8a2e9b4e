"""Every command's --json goes out here: one layout, one sanitizer, one set
of top-level keys.

Layout: one line when stdout is not a terminal (pipes, files, CI logs: one
document per line, cheap to write), indented on a terminal, where people read
it; TVMFFI_JSON_INDENT=N forces N spaces (0: one line).

Contract: every command with --json (inspect, call, bench, conform, diff,
extract; config prints its values only) has the keys `library` (the path
given; call and bench: made absolute; extract: the base name, as in
manifest.json; diff: the new build, the old one stays in `old`), `runtime` (the libtvm_ffi.so that hosted
the library, null when none was loaded), `sandbox` (what confined the
worker), `elapsed_s` and `errors` (a list; empty when nothing went wrong).
tests/test_json_contract.py runs every command and checks them.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from ..text import JsonDict, JsonValue

#: When the command started (cli/main.py sets it): elapsed_s counts from here.
STARTED = time.perf_counter()


def indent() -> int | None:
    env = os.environ.get("TVMFFI_JSON_INDENT", "")
    if env.isdigit():
        return int(env) or None
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return 2 if isatty and isatty() else None
    except ValueError:
        return None


def dumps(doc: Any) -> str:
    """`doc` as JSON text in the uniform layout, inert on a terminal."""
    import json

    from .. import text

    n = indent()

    def encode(value: Any) -> str:
        return json.dumps(
            value,
            ensure_ascii=False,
            allow_nan=False,
            indent=n,
            separators=None if n else (",", ":"),
        )

    # Encoded once: json_clean() changes nothing unless a string holds a raw
    # byte, which the encoded text then shows as a lone surrogate.
    out = encode(doc)
    if text.has_raw_bytes(out):
        out = encode(text.json_clean(doc))
    return text.json_output(out)


def contract(
    doc: JsonDict,
    *,
    library: str | None,
    runtime: JsonValue = None,
    errors: list[JsonValue] | None = None,
) -> JsonDict:
    """`doc` with the top-level keys every command has (existing values win)."""
    from . import sandbox_opts

    out = dict(doc)
    out.setdefault("library", library)
    out.setdefault("runtime", runtime)
    out.setdefault("sandbox", sandbox_opts.field())
    out.setdefault("elapsed_s", round(time.perf_counter() - STARTED, 3))
    if not isinstance(out.get("errors"), list):
        out["errors"] = list(errors or [])
    return out


def emit(
    doc: JsonDict,
    *,
    library: str | None,
    runtime: JsonValue = None,
    errors: list[JsonValue] | None = None,
) -> None:
    sys.stdout.write(dumps(contract(doc, library=library, runtime=runtime, errors=errors)) + "\n")
