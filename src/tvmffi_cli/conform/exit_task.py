"""Child side of the `exit-clean` check: load the library, release it, return.

Runs in a fresh sandbox worker (task "conform.exit_task"); the parent then
closes the worker's input so the process exits, and judges the exit status.
Everything the library runs at exit (destructors, atexit handlers, deleters
of the globals it registered) runs after this returns.
"""

from __future__ import annotations

import gc
from typing import Any

from ..sandbox.messages import JsonDict
from .messages import ExitLoaded, ExitRequest


def run(obj: object) -> JsonDict:
    request = ExitRequest.from_json(obj)
    if request.path is None:  # the control run: the runtime alone
        from ..ffi import runtime

        get: Any = runtime.get_runtime
        get()
        return ExitLoaded(False, ()).to_json()
    from ..ffi import library

    load: Any = library.load  # (ffi.library is not annotated yet)
    lib = load(request.path)
    names = tuple(sorted(getattr(lib, "globals", None) or ()))
    del lib
    gc.collect()
    return ExitLoaded(True, names).to_json()
