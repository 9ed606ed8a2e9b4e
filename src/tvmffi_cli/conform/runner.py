"""Run the selected checks on one library.

Static checks read the file here. Everything that executes library code runs
in worker processes (conform/probe_task.py, conform/workers.py): each worker
loads the library once and probes many functions, each in a probe child it
forks where it may (a function then starts from the state the load left),
else itself (see Report.isolation). Workers stream one event per step, so
after a crash the parent knows the step that died, records it, and resumes
that function in a fresh probe child or worker after the failed step
(conform/prober.py).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Collection, Iterable

from ..abi.symbols import CTX_PREFIX
from ..sandbox.threads import leave_interrupts_to_main
from . import registry
from .reproduce import DEFAULT_THREADS, DEFAULT_TIMEOUT, Options, _finish
from .results import ERROR, FAIL, PASS, SKIP, Report, Result
from .workers import Event, Spares, Worker, WorkerDied

if TYPE_CHECKING:
    from . import checks_crash, checks_static

# The checks are imported in run(), once the probe workers are starting: they
# load while the checks load (a tenth of a second saved on every run).

#: progress(done, total, running), called as functions start and finish;
#: running names the functions being probed now ("" when none).
Progress = Callable[[int, int, str], object]

#: Library-level checks that load the library (not run per function).
LIBRARY_DYNAMIC = frozenset({"library-load", "exit-clean", "type-layout"})
#: Seconds the probers have, once interrupted, to end their workers.
CANCEL_GRACE = 10.0


def _load_result(ev: Event, died: WorkerDied | None) -> Result:
    if died is not None:
        what = (
            "hangs (no return within the timeout)"
            if died.hang
            else f"crashes the process ({died.signal_name})"
        )
        said = _last_words(died.detail)
        return Result(
            "library-load",
            None,
            FAIL,
            f"loading the library {what}" + (f": {said}" if said else ""),
            output=died.detail or None,
        )
    if not ev.get("ok"):
        return Result("library-load", None, FAIL, f"loading failed: {ev.get('error')}")
    desc = ev.get("describe") or {}
    # Loader diagnostics are reported, not failed: the static checks own the
    # rules behind them (library-bin, context-symbols), and a module kind
    # without a loader on this machine (no CUDA here) is not the library's fault.
    notes: list[str] = []
    if desc.get("missing_loaders"):
        notes.append(
            "no loader here for embedded module kind(s) "
            + ", ".join(map(str, desc["missing_loaders"]))
        )
    notes.extend(str(e) for e in desc.get("errors") or ())
    note = "" if ev.get("instrumented") else " (runtime without instrumentation)"
    msg = f"loaded through {ev.get('runtime')}{note}"
    if notes:
        msg += "; the loader noted: " + "; ".join(notes)
    return Result("library-load", None, PASS, msg, {"describe": desc} if desc else None)


def _last_words(output: str) -> str:
    """The line of the library's output that says why it died: what an
    uncaught exception said, else its last line (bounded)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    said = next((ln for ln in reversed(lines) if "what():" in ln), lines[-1] if lines else "")
    said = said.split("what():", 1)[-1].strip()
    return said[:300]


def run(
    path: str | os.PathLike[str],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int | None = None,
    progress: Progress | None = None,
    options: Options | None = None,
) -> Report:
    """Run the checks; returns a Report. `progress(done, total, name)` is
    called as functions finish."""
    from ..binary import open_binary, require_library

    o = options or Options(frozenset(select or ()), frozenset(ignore or ()), timeout, jobs)
    timeout, jobs = o.timeout, o.jobs
    t0 = time.monotonic()
    path = os.path.abspath(os.fspath(path))
    ids = set(registry.selected(o.select, o.ignore))
    dynamic = {c.id for c in registry.CHECKS if c.stage != registry.STATIC} & ids
    fn_checks = dynamic - LIBRARY_DYNAMIC
    binary = open_binary(path)  # InputError/FormatError -> exit 2
    first: Worker | None = None
    spares: Spares | None = None
    try:
        require_library(binary)  # a program or object file -> exit 2
        from . import checks_static

        inv = checks_static.inventory(binary)
        exports = [n for n in inv.probe_targets() if not o.only or n in o.only]
        if dynamic:
            from pathlib import Path

            from ..ffi import paths

            # A missing or bad runtime (TVMFFI_RUNTIME, --runtime) is exit 2, before any load.
            if o.runtime is None:
                paths.runtime_library()
            elif os.path.isfile(o.runtime):
                paths.check_runtime_file(Path(o.runtime), f"--runtime {o.runtime}")
            # The probe workers start and load while this process runs the
            # static checks; the other workers while the first one loads
            # (each takes ~0.1 s: waiting for one before starting the next
            # was a fixed cost of every run).
            first = Worker(path, timeout, o.runtime)
            n_spare = min(jobs or os.cpu_count() or 1, len(exports)) - 1 if fn_checks else 0
            spares = Spares(path, timeout, o.runtime, n_spare)
            spares.start()
            first.start_in_background()
        from . import checks_gpu, checks_version

        results = checks_static.run(binary, inv, ids)
        req = checks_version.needed(
            binary, [n[len(CTX_PREFIX) :] for n in inv.symbols if n.startswith(CTX_PREFIX)]
        )
        if "min-runtime" in ids:
            results.append(checks_version.check_min_runtime(req, o.min_runtime))
        if "max-runtime" in ids:
            results.append(checks_version.check_max_runtime(req, o.max_runtime))
        if o.gpu is None:
            o = replace(o, gpu=checks_gpu.looks_cuda(binary))
    except BaseException:
        # e.g. --require-sandbox refused: the workers being started must not
        # outlive the run (their scratch dirs neither).
        for w in ([first] if first is not None else []) + (spares.take() if spares else []):
            w.kill()
        raise
    finally:
        binary.close()

    from . import checks_probe, checks_types, exit_check

    per_function: dict[str, list[Result]] = {}
    globals_: list[str] = []
    exits: list[int | str] = []  # how the probe workers ended (exit-clean)
    facts: dict[str, checks_crash.FunctionFacts] = {}
    shared: list[str] = []  # why functions shared a probe process, if they did
    loaded = False
    if first is not None and spares is not None:
        try:
            died: WorkerDied | None = None
            ev: Event = {}
            try:
                ev = first.load()
            except WorkerDied as e:
                died = e
            load = _load_result(ev, died)
            if load.status == FAIL:
                from ..ffi.hosts import hint_for_runtime

                # which --runtime may host it instead (ffi/hosts.py)
                load = replace(load, message=load.message + hint_for_runtime(path, o.runtime))
            if "library-load" in ids:
                results.append(load)
            loaded = died is None and bool(ev.get("ok"))
            if "type-layout" in ids:
                results.append(checks_types.check_type_layout(ev.get("types"), loaded))
            globals_ = sorted(set(ev.get("globals") or ()) - set(inv.functions)) if loaded else []
            targets = exports + [g for g in globals_ if not o.only or g in o.only]
            jobs = max(1, min(jobs or os.cpu_count() or 1, max(1, len(targets))))
            spare_workers = spares.take()
            if not loaded:
                first.kill()
                for w in spare_workers:
                    w.kill()
                for name in exports:
                    per_function[name] = checks_probe.skipped(
                        name, fn_checks, "the library did not load"
                    )
            elif fn_checks and targets:
                per_function = _probe_all(
                    path,
                    o,
                    jobs,
                    [first, *spare_workers],
                    targets,
                    set(globals_),
                    inv,
                    fn_checks,
                    progress,
                    exits,
                    facts,
                    shared,
                )
                if o.sanitizer and "memcheck" in fn_checks:
                    from . import sanitizer

                    per_function = sanitizer.run(path, o, facts, per_function)
            else:
                for w in [first, *spare_workers]:
                    status = w.stop(timeout)
                    if status is not None:
                        exits.append(status)
        except BaseException:
            # Ctrl-C or SIGTERM from the load to the end of the probes: no
            # worker outlives the run (_probe_all's probers ended theirs).
            for w in [first, *spares.take()]:
                w.kill()
            raise
        for name in inv.functions:
            if name not in inv.code and (not o.only or name in o.only):
                per_function[name] = checks_probe.skipped(
                    name, fn_checks, "not probed: the symbol is not code (see symbol-kind)"
                )
        if "exit-clean" in ids:
            if loaded:
                verdict = exit_check.from_workers(exits, timeout) or exit_check.run(
                    path, timeout, o.runtime
                )
                results.append(exit_check.blame_runtime(verdict, timeout, o.runtime))
            else:
                results.append(Result("exit-clean", None, SKIP, "the library did not load"))
    if o.only:
        known = set(inv.functions) | set(inv.getters) | set(globals_)
        unknown = sorted(o.only - known)
        if unknown and (loaded or not dynamic):
            import difflib

            from ..errors import InputError

            close = difflib.get_close_matches(unknown[0], sorted(known), n=3, cutoff=0.5)
            raise InputError(
                f"--function {unknown[0]}: the library has no such exported or registered function"
                + (f"; closest: {', '.join(close)}" if close else "")
            )
        results = [r for r in results if r.function is None or r.function in o.only]
    if dynamic and not loaded:
        # Without exports, the functions a library registers while loading
        # are unknown when the load failed: library-load is the one finding.
        results = [
            Result(
                "has-functions",
                None,
                SKIP,
                "no exported function; what the library registers while loading is "
                "unknown, as it did not load (see library-load)",
            )
            if r.check == "has-functions" and r.status == FAIL
            else r
            for r in results
        ]
    if globals_:
        # Functions registered at load count too (has-functions is static otherwise).
        results = [
            Result(
                "has-functions",
                None,
                PASS,
                f"{len(inv.functions)} exported, {len(globals_)} registered at load",
            )
            if r.check == "has-functions"
            else r
            for r in results
        ]
    results = _order(results, per_function, inv)
    results = o.config.apply([_finish(r, path, o) for r in results])
    chosen = {n: f for n, f in facts.items() if not o.only or n in o.only}
    return Report(  # --function: the summary counts the functions checked
        path,
        results,
        [f for f in inv.functions if not o.only or f in o.only],
        time.monotonic() - t0,
        jobs or 1,
        globals=[g for g in globals_ if not o.only or g in o.only],
        min_runtime=req.min_version,
        max_runtime=req.max_version,
        not_exercised=checks_gpu.not_exercised(chosen),
        not_run=checks_gpu.not_run(chosen),
        shared_process=shared[0] if shared else None,
    )


def _probe_all(
    path: str,
    o: Options,
    jobs: int,
    ready: list[Worker],
    targets: list[str],
    globals_: set[str],
    inv: checks_static.Inventory,
    ids: Collection[str],
    progress: Progress | None,
    exits: list[int | str],
    facts: dict[str, checks_crash.FunctionFacts] | None,
    shared: list[str],
) -> dict[str, list[Result]]:
    from . import checks_probe
    from .prober import Cancelled, Prober

    todo: queue.Queue[str] = queue.Queue()
    for name in targets:
        todo.put(name)
    out: dict[str, list[Result]] = {}
    lock = threading.Lock()
    done = [0]
    running: list[str] = []  # a hang shows the function that hangs, not the last one done

    def report() -> None:
        if progress:
            shown = ", ".join(running[:3]) + (f" +{len(running) - 3}" if len(running) > 3 else "")
            progress(done[0], len(targets), shown)

    def work(prober: Prober, ended: threading.Event) -> None:
        leave_interrupts_to_main()
        try:
            while not prober.cancelled:
                try:
                    name = todo.get_nowait()
                except queue.Empty:
                    return
                with lock:
                    running.append(name)
                    report()
                f = prober.probe(name, inv.getters.get(name, ()), name in globals_)
                res = checks_probe.evaluate(f, ids)
                with lock:
                    out[name] = res
                    if facts is not None:
                        facts[name] = f
                    done[0] += 1
                    running.remove(name)
                    report()
        except Cancelled:
            pass
        finally:
            prober.close(exits)
            ended.set()

    probers = [Prober(path, o.timeout, o.runtime, o.threads) for _ in range(jobs)]
    for p, w in zip(probers, ready):
        p.worker = w
    for p in probers:
        p.gpu = bool(o.gpu)
    for w in ready[len(probers) :]:  # more loaded workers than functions
        status = w.stop(o.timeout)
        if status is not None:
            exits.append(status)
    ended = [threading.Event() for _ in probers]
    threads = [
        threading.Thread(target=work, args=(p, e), daemon=True) for p, e in zip(probers, ended)
    ]
    started: list[threading.Event] = []  # (before start(): a Ctrl-C inside it leaves it running)
    try:
        for t, e in zip(threads, ended):
            started.append(e)
            t.start()
        # Events, not Thread.join: a join interrupted by a signal marks the
        # thread ended while it still runs (CPython 3.11's threading).
        for e in ended:
            e.wait()
    except BaseException:
        # Ctrl-C or SIGTERM (raised here, in the main thread): each prober
        # ends its worker and its scratch dir before the process exits.
        for p in probers:
            p.cancel()
        deadline = time.monotonic() + CANCEL_GRACE
        for e in started:
            e.wait(max(0.0, deadline - time.monotonic()))
        raise
    for t in threads:
        t.join()
    shared[:] = sorted({p.shared for p in probers if p.shared})
    return out


def _order(
    results: list[Result], per_function: dict[str, list[Result]], inv: checks_static.Inventory
) -> list[Result]:
    """Library-level results first, then per function in name order."""
    lib = [r for r in results if r.function is None]
    by_fn: dict[str, list[Result]] = {}
    for r in results:
        if r.function is not None:
            by_fn.setdefault(r.function, []).append(r)
    for name, rs in per_function.items():
        by_fn.setdefault(name, []).extend(rs)
    order = {cid: i for i, cid in enumerate(registry.BY_ID)}
    out = sorted(lib, key=lambda r: order[r.check])
    for name in sorted(by_fn):
        out.extend(sorted(by_fn[name], key=lambda r: order[r.check]))
    return out


__all__ = ["DEFAULT_THREADS", "DEFAULT_TIMEOUT", "ERROR", "FAIL", "PASS", "SKIP", "Options", "run"]
