"""Diagnostic task for the sandbox itself (used by tests/test_sandbox.py).

request {"op": "echo", ...}          -> the request back, plus the child's pid and a
                                        token unique to the process ("boot")
request {"op": "call", "path", "func", "args": [JSON values]}
                                     -> {"result": repr of the call's result}
request {"op": "print", "text"}      -> prints text to stdout (must not reach the reply pipe)
request {"op": "raise", "kind": "InputError"|"bug", "message"}
request {"op": "state"}              -> what the worker process holds: environment
                                        (os.environ and /proc/self/environ names),
                                        open fds, sys.path, cwd, session leader,
                                        whether the garbage collector runs
"""

import os
import signal
import sys

from ..text import JsonDict

#: One value per worker process (in a PID namespace every worker is pid 2).
_BOOT = os.urandom(8).hex()


def run(request: JsonDict) -> JsonDict:
    op = request.get("op")
    if op == "echo":
        return dict(request, pid=os.getpid(), boot=_BOOT)
    if op == "call":
        from ..ffi.library import load

        args = request.get("args") or []
        assert isinstance(args, list)
        rt = request.get("runtime")
        lib = load(str(request["path"]), runtime=None if rt is None else str(rt))
        return {"result": repr(lib[str(request["func"])](*args))}
    if op == "print":
        print(request.get("text", ""), flush=True)
        os.write(1, b"raw fd 1 write\n")
        return {"printed": True}
    if op == "raise":
        if request.get("kind") == "InputError":
            from ..errors import InputError

            raise InputError(str(request.get("message", "bad input")))
        raise RuntimeError(request.get("message", "boom"))
    if op == "state":
        with open("/proc/self/environ", "rb") as f:
            block = f.read()
        return {
            "environ": sorted(os.environ),
            "proc_environ": sorted(
                e.split(b"=", 1)[0].decode("utf-8", "replace") for e in block.split(b"\0") if e
            ),
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
            "path": list(sys.path),
            "cwd": os.getcwd(),
            "sid": os.getsid(0),
            "pgid": os.getpgid(0),
            "gc": __import__("gc").isenabled(),
            "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())),
        }
    raise ValueError(f"unknown op {op!r}")
