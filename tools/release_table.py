"""Print, per official apache-tvm-ffi release, how tvmffi does on that
release's own test library (the checks of tests/test_releases_meta.py as a
table; the release's own tvm_ffi is the oracle, tests/release_meta.py).

    python tools/release_table.py [VERSION ...]

Columns: inspect exit on the builtin runtime / on the release's own
libtvm_ffi.so (--runtime PATH); globals and types equal to what the
release's runtime registers; typed stub signatures / signatures the metadata
declares; calls equal to the release's own results; conform exit; breaking
changes `diff` reports to the next release that the releases do not show.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import release_meta as meta
import releases


def row(version: str, nxt: str | None) -> list[str]:
    code, doc = meta.inspect_doc(version)
    own, _ = meta.inspect_doc(version, runtime="own")
    o = meta.oracle(version)
    same = (
        doc is not None
        and sorted(doc["globals"]) == sorted(o["globals"])
        and sorted(t["type_key"] for t in doc["types"]) == sorted(o["types"])
    )
    declared = meta.declared(version)
    calls = [
        meta.call_ours(version, name, argv)["result"] == o["calls"][name]
        for name, argv, _py in meta.CALLS
        if name in o["calls"]
    ]
    conform = meta.tvmffi("conform", str(releases.release_testing_lib(version)), "-q")
    diff = "-"
    if nxt is not None:
        diff = f"{len(meta.false_breaks(version, nxt))} ({len(meta.breaks(version, nxt))} breaks)"
    return [
        version,
        f"{code} / {own}",
        f"{len(o['globals'])}/{len(o['types'])} {'yes' if same else 'NO'}",
        f"{meta.stub_typed(version)} / {len(declared)}",
        f"{sum(calls)}/{len(calls)}",
        str(conform.returncode),
        diff,
    ]


def main(argv: list[str]) -> int:
    versions = argv or releases.RELEASES
    head = [
        "release",
        "inspect exit (builtin / own)",
        "globals/types equal",
        "typed / declared",
        "calls equal",
        "conform exit",
        "diff to next: false breaks",
    ]
    rows = [head]
    for v in versions:
        i = releases.RELEASES.index(v)
        nxt = releases.RELEASES[i + 1] if i + 1 < len(releases.RELEASES) else None
        rows.append(row(v, nxt))
    widths = [max(len(r[c]) for r in rows) for c in range(len(head))]
    for n, r in enumerate(rows):
        print(" | ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        if n == 0:
            print("-|-".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
