"""Child-side task of range verification: load the library on the worker's
runtime and say whether it loaded (nothing else is read from it).

request: messages.LoadOnly
reply:   messages.Loaded (how many globals and types it registered)
       | messages.LoadFailed (the loader refused it: a missing symbol or
         dependency, an error raised while registering)
A library that aborts while loading kills the worker: the parent sees that
as ChildCrashed, with what the library printed on stderr.
"""

from __future__ import annotations

from ..sandbox.messages import JsonDict
from .messages import Loaded, LoadFailed, decode_load_only, encode


def run(obj: object) -> JsonDict:
    from ..ffi import library

    request = decode_load_only(obj)
    try:
        lib = library.load(request.path, runtime=request.runtime)
    except library.LibraryLoadError as e:
        return encode(LoadFailed(str(e)))
    return encode(Loaded(len(lib.globals_registered), len(lib.types_registered)))
