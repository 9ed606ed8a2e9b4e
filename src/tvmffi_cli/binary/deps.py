"""What the loader may read to load a library: the file itself and the
directories its RUNPATH/RPATH names ($ORIGIN expanded), plus those of
LD_LIBRARY_PATH. The sandbox grants reads to these (and to the system
library directories) and to nothing else of the user's."""

from __future__ import annotations

import os


def load_read_paths(path: str | os.PathLike[str]) -> list[str]:
    from . import open_binary

    p = os.path.abspath(os.fspath(path))
    out = [p]
    origin = os.path.dirname(p)
    try:
        b = open_binary(p)
    except Exception:  # unreadable here: the worker will report it
        return out
    try:
        entries = list(b.extra.get("runpath", ()))
    finally:
        b.close()
    for entry in entries:
        for d in str(entry).split(":"):
            d = d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
            if d and os.path.isabs(d) and os.path.isdir(d):
                out.append(os.path.realpath(d))
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d and os.path.isabs(d) and os.path.isdir(d):
            out.append(os.path.realpath(d))
    return out
