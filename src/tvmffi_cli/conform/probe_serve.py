"""The probe worker's loop (child side of `tvmffi conform`): requests in,
events out (conform/probe_task.py says what they are).

The worker loads the library. Where it may (sandbox/zygote.py) it then
becomes a zygote: it warms the probe's own code on stand-ins
(probe_warm.py), and forks a probe child per order; each child serves one
request and exits, timing its steps with an interval timer (SIGALRM ends
it). Otherwise the worker serves every request itself, under a watchdog
thread.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

from ..sandbox import zygote
from . import probe_gpu
from .probe_proc import OWNER, end_forks, ours
from .probe_task import Msg, Prober


def serve(chan: Any) -> None:
    """Worker loop: one request message in, event messages out, over the
    worker's authenticated channel (sandbox/protocol.py)."""
    from ..sandbox.protocol import ChannelClosed

    lock = threading.Lock()
    OWNER[0] = os.getpid()  # the process that speaks on the channel

    def emit(obj: Msg) -> None:
        ours()  # (a thread of a process the library forked: not for us)
        with lock:
            chan.send(obj)

    prober = Prober(emit)
    stop = threading.Event()
    dog = threading.Thread(target=prober.watchdog, args=(stop,), daemon=True)
    dog.start()
    while True:
        ours()  # nor take a request meant for us
        try:
            req = chan.recv()
        except ChannelClosed:
            return
        op = req.get("op")
        if op == "load":
            prober.timeout = float(req.get("timeout", prober.timeout))
            prober.step, prober.step_started = "load", time.monotonic()
            try:
                info = prober.load(req["path"])
            except Exception as e:  # reported, the parent decides
                info = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            prober.step = None
            info["event"] = "loaded"
            if not (info.get("ok") and req.get("zygote")):
                if info.get("ok"):
                    end_forks()  # this worker probes: the library's forks end in fork
                emit(info)
                continue
            # Become a zygote (sandbox/zygote.py): fork a probe child per
            # order, alone in this process (the watchdog stops for the fork).
            stop.set()
            dog.join()
            why = zygote.refusal() or probe_gpu.fork_refusal()
            if why is None:
                import gc

                from .probe_warm import warm_up

                warm_up(prober)
                # What the zygote built stays out of every probe child's
                # collections: fewer pages copied on write per child.
                gc.freeze()
            info["zygote"], info["zygote_refused"] = why is None, why
            emit(info)
            if why is None:

                def start_child() -> None:
                    # A probe child, before its order: SIGALRM ends it after
                    # a step's timeout.
                    end_forks()
                    OWNER[0] = os.getpid()
                    signal.signal(signal.SIGALRM, signal.SIG_DFL)
                    prober.alarm = True

                if not zygote.serve_orders(chan, start_child):
                    return  # the orders ended: the worker exits
                continue
            end_forks()  # a worker refused to be a zygote: it probes
            stop = threading.Event()  # refused: a new watchdog
            dog = threading.Thread(target=prober.watchdog, args=(stop,), daemon=True)
            dog.start()
        elif op == "probe":
            prober.probe(req)
            if req.get("once"):
                # A zygote's probe child serves one request: what the
                # function left behind (state, threads) ends with it. No
                # teardown: exit-clean judges the zygote's own exit.
                os._exit(0)
        elif op == "exit":
            return


def run(request: Msg) -> Msg:
    """One request in this process, events collected in a list (for callers
    that run tasks through tvmffi_cli.sandbox.worker rather than conform's pool)."""
    events: list[Msg] = []
    prober = Prober(events.append)
    info = prober.load(request["path"])
    events.append(dict(info, event="loaded"))
    if info.get("ok"):
        for name, getters in request.get("functions", {}).items():
            prober.probe({"name": name, "getters": getters})
    return {"events": events}
