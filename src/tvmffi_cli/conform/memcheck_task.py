"""Child side of `conform --sanitizer memcheck`: in a worker started under
compute-sanitizer (conform/sanitizer.py), load the library and make one
function's CUDA call (conform/probe_gpu.py's gpu:valid step).

request: {"path", "name", "getters": [...], "global": bool}
reply:   {"obs": {...}} or {"skipped": why}
"""

from __future__ import annotations

from typing import Any


def run(request: dict[str, Any]) -> dict[str, Any]:
    from .probe_gpu import VALID
    from .probe_task import Prober

    p = Prober(lambda _msg: None)
    info = p.load(request["path"])
    if not info.get("ok"):
        return {"skipped": f"the library did not load: {info.get('error')}"}
    name, is_global = request["name"], bool(request.get("global"))
    _steps, sig, _note = p.plan(name, set(request.get("getters") or ()), is_global)
    if not p.gpu.ready(p):
        return {"skipped": p.gpu.why}
    return {"obs": p.gpu.run_step(p, name, VALID, sig, is_global)}
