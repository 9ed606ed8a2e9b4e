"""Child side of the `exit-clean` check: load the library, release it, return.

Runs in a fresh sandbox worker (task "conform.exit_task"); the parent then
closes the worker's input so the process exits, and judges the exit status.
Everything the library runs at exit (destructors, atexit handlers, deleters
of the globals it registered) runs after this returns.
"""

from __future__ import annotations

import gc
from typing import Any


def run(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("path") is None:  # the control run: the runtime alone
        from ..ffi import runtime

        get: Any = runtime.get_runtime
        get()
        return {"loaded": False, "globals": []}
    from ..ffi import library

    load: Any = library.load  # (ffi.library is not annotated yet)
    lib = load(str(request["path"]))
    names = sorted(getattr(lib, "globals", None) or ())
    del lib
    gc.collect()
    return {"loaded": True, "globals": names}
