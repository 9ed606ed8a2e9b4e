"""Child side of `conform --sanitizer memcheck`: in a worker started under
compute-sanitizer (conform/sanitizer.py), load the library and make one
function's CUDA call (conform/probe_gpu.py's gpu:valid step).

request: MemcheckRequest; reply: MemcheckSkipped or MemcheckCalled
(conform/messages.py).
"""

from __future__ import annotations

from ..sandbox.messages import JsonDict
from .messages import MemcheckCalled, MemcheckRequest, MemcheckSkipped


def run(obj: object) -> JsonDict:
    from .probe_gpu import VALID
    from .probe_task import Prober

    request = MemcheckRequest.from_json(obj)
    p = Prober(lambda _msg: None)
    info = p.load(request.path)
    if not info.get("ok"):
        return MemcheckSkipped(f"the library did not load: {info.get('error')}").to_json()
    name = request.name
    _steps, sig, _note = p.plan(name, set(request.getters), request.is_global)
    if not p.gpu.ready(p):
        return MemcheckSkipped(str(p.gpu.why)).to_json()
    p.gpu.run_step(p, name, VALID, sig, request.is_global)
    return MemcheckCalled().to_json()
