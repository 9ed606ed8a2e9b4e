"""Diagnostic task for the sandbox itself (used by tests/test_sandbox.py).

request {"op": "echo", ...}          -> the request back, plus the child's pid and a
                                        token unique to the process ("boot")
request {"op": "call", "path", "func", "args": [JSON values]}
                                     -> {"result": repr of the call's result}
request {"op": "print", "text"}      -> prints text to stdout (must not reach the reply pipe)
request {"op": "raise", "kind": "InputError"|"bug", "message"}
"""

import os
from typing import Any

#: One value per worker process (in a PID namespace every worker is pid 2).
_BOOT = os.urandom(8).hex()


def run(request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "echo":
        return dict(request, pid=os.getpid(), boot=_BOOT)
    if op == "call":
        from ..ffi.library import load

        lib = load(request["path"], runtime=request.get("runtime"))
        return {"result": repr(lib[request["func"]](*request.get("args", [])))}
    if op == "print":
        print(request.get("text", ""), flush=True)
        os.write(1, b"raw fd 1 write\n")
        return {"printed": True}
    if op == "raise":
        if request.get("kind") == "InputError":
            from ..errors import InputError

            raise InputError(request.get("message", "bad input"))
        raise RuntimeError(request.get("message", "boom"))
    raise ValueError(f"unknown op {op!r}")
