"""Child-side task of range verification: load the library on the worker's
runtime and say whether it loaded (nothing else is read from it).

request: {"path": str, "runtime": str|None}
reply:   {"status": "loaded", "globals": int, "types": int}
       | {"status": "load_failed", "message": str}   (the loader refused it:
         a missing symbol or dependency, an error raised while registering)
A library that aborts while loading kills the worker: the parent sees that
as ChildCrashed, with what the library printed on stderr.
"""

from __future__ import annotations

from typing import Any


def run(request: dict[str, Any]) -> dict[str, Any]:
    from ..ffi import library

    try:
        lib = library.load(request["path"], runtime=request.get("runtime"))
    except library.LibraryLoadError as e:
        return {"status": "load_failed", "message": str(e)}
    return {
        "status": "loaded",
        "globals": len(lib.globals_registered),
        "types": len(lib.types_registered),
    }
