"""The child side of sandbox/process.py: `python -m tvmffi_cli.sandbox.worker`.

Requests arrive on stdin, one JSON object per line:
    {"task": "<name>", "request": {...}}
and each gets one reply line on the reply pipe (the process's original
stdout):
    {"ok": true, "result": <what tvmffi_cli.<name>.run(request) returned>}
    {"ok": false, "error": {"type": "InputError"|..., "message": str,
                            "exit_code": int, "traceback": str|null}}
Before anything runs, fd 1 is pointed at stderr, so whatever the library
prints (printf, std::cout, Python print) can never corrupt the replies.

`--serve TASK` hands the two pipes to tvmffi_cli.<TASK>.serve(fd_in, fd_out)
instead, for tasks that speak their own streaming protocol.
"""

import importlib
import json
import os
import re
import sys
import traceback

# A task is a module named by its dotted path under tvmffi_cli ("call.task",
# "inspect.task", "conform.probe_task", "sandbox.selftest") that defines
# `run(request: dict) -> dict` (JSON values) and, for a streaming protocol,
# `serve(fd_in, fd_out)`. Library code runs only in tasks, never in the parent.
_TASK_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")


def _isolate_stdout():
    """Return a private fd for replies and send fd 1 (and sys.stdout) to stderr."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return reply_fd


def _quiet_crashes():
    # A crashing library should not leave core files behind or spend seconds
    # writing them; the parent reports the signal.
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    try:
        import faulthandler

        faulthandler.enable(file=sys.stderr)  # Python stack on stderr, then the signal
    except Exception:
        pass


def load_task(name):
    if not isinstance(name, str) or not _TASK_NAME.match(name):
        raise ValueError(f"bad task name {name!r}")
    mod = importlib.import_module(f"tvmffi_cli.{name}")
    if not (hasattr(mod, "run") or hasattr(mod, "serve")):
        raise ValueError(f"{name!r} is not a task module")
    return mod


def handle(line):
    """One request line -> one reply dict (never raises)."""
    try:
        msg = json.loads(line)
        mod = load_task(msg.get("task"))
        return {"ok": True, "result": mod.run(msg.get("request") or {})}
    except Exception as e:  # every failure becomes a reply; the parent re-raises it
        from ..errors import TvmffiError

        known = isinstance(e, TvmffiError)
        return {"ok": False, "error": {
            "type": type(e).__name__,
            "message": str(e),
            "exit_code": getattr(e, "exit_code", 3),
            "known": known,
            "traceback": None if known else traceback.format_exc(),
        }}


def _encode(reply):
    try:
        return json.dumps(reply, separators=(",", ":")) + "\n"
    except (TypeError, ValueError) as e:
        return json.dumps({"ok": False, "error": {
            "type": "InternalError", "message": f"task reply is not JSON: {e}",
            "exit_code": 3, "known": False, "traceback": None}}) + "\n"


def serve_requests(fd_in, fd_out):
    with os.fdopen(fd_in, "rb", buffering=0) as fin:
        buf = b""
        while True:
            chunk = fin.read(1 << 16)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                data = _encode(handle(line)).encode()
                view = memoryview(data)
                while view:
                    n = os.write(fd_out, view)
                    view = view[n:]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    reply_fd = _isolate_stdout()
    _quiet_crashes()
    in_fd = os.dup(0)
    if len(argv) == 2 and argv[0] == "--serve":
        load_task(argv[1]).serve(in_fd, reply_fd)
    else:
        serve_requests(in_fd, reply_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
