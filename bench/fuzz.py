#!/usr/bin/env python3
"""Fuzz campaign: every target of bench/fuzz_targets.py under two engines,
property-based (hypothesis) and coverage-guided (atheris, libFuzzer inside).

    bench/fuzz                          # every target, both engines, 100,000 execs each
    bench/fuzz --target libbin --engine atheris --execs 20000 --seconds 60
    bench/fuzz --repro FILE --target elf   # replay one saved input with its traceback

Prints per target and engine: executions, crashes (inputs that broke the
contract), distinct findings (deduplicated by exception type and the innermost
tvmffi_cli frame), "masked" (reader exceptions the project's FormatError safety
net caught: allowed, shown for follow-up) and time. Exits 1 when anything was
found, 2 on usage errors. Each finding's smallest input and traceback are
saved under --artifacts.

Each (target, engine) runs in its own child process with an address-space
limit (--memory-mb, 1 GiB by default; a child needs under 100 MB), so an
allocation by an untrusted size shows up as a MemoryError finding instead of a
swapping machine, and a per-input timer (--timeout) reports hangs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fuzz_targets  # noqa: E402

ENGINES = ("hypothesis", "atheris")
DEFAULT_EXECS = 100_000


class Stats:
    """What one (target, engine) run saw."""

    def __init__(self, target, engine, artifacts):
        self.target, self.engine = target, engine
        self.artifacts = Path(artifacts) if artifacts else None
        self.execs = self.crashes = self.errors = self.masked_count = 0
        self.findings = {}  # key -> dict
        self.masked = {}
        self.start = time.monotonic()
        self.seconds = 0.0

    def record(self, data, out):
        self.execs += 1
        if out.kind == "ok":
            return
        if out.kind == "error":
            self.errors += 1
            return
        table = self.findings if out.kind == "finding" else self.masked
        if out.kind == "finding":
            self.crashes += 1
        else:
            self.masked_count += 1
        ent = table.get(out.key)
        if ent is None:
            ent = table[out.key] = {
                "key": out.key,
                "type": out.exc_type,
                "frame": list(out.frame) if out.frame else None,
                "message": out.message,
                "count": 0,
                "size": None,
                "input": None,
            }
        ent["count"] += 1
        if ent["size"] is None or len(data) < ent["size"]:
            ent["size"] = len(data)
            ent["input_hex"] = bytes(data[:256]).hex()
            if self.artifacts is not None:
                self.artifacts.mkdir(parents=True, exist_ok=True)
                n = list(table).index(out.key)
                stem = self.artifacts / f"{self.target}-{self.engine}-{out.kind}{n}"
                stem.with_suffix(".bin").write_bytes(bytes(data))
                stem.with_suffix(".txt").write_text(f"{out.key}\n\n{out.trace}")
                ent["input"] = str(stem.with_suffix(".bin"))

    def to_json(self):
        return {
            "target": self.target,
            "engine": self.engine,
            "execs": self.execs,
            "crashes": self.crashes,
            "distinct": len(self.findings),
            "project_errors": self.errors,
            "masked": self.masked_count,
            "seconds": round(time.monotonic() - self.start, 2),
            "findings": list(self.findings.values()),
            "masked_kinds": list(self.masked.values()),
        }


def _limit_memory(mb):
    if not mb:
        return
    import resource

    lim = mb << 20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        lim = min(lim, hard)
    resource.setrlimit(resource.RLIMIT_AS, (lim, hard))


# ---------------------------------------------------------------------------
# engines (both run in the current process; `run` puts them in a child)


def run_hypothesis(target, execs, seconds=None, seed=0, artifacts=None, timeout=5.0, chunk=2000):
    """Property-based run: `execs` inputs drawn from the target's strategy."""
    try:
        return _run_hypothesis(target, execs, seconds, seed, artifacts, timeout, chunk)
    finally:
        target.close()  # its scratch directory, if it made one


def _run_hypothesis(target, execs, seconds, seed, artifacts, timeout, chunk):
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    stats = Stats(target.name, "hypothesis", artifacts)
    deadline = time.monotonic() + seconds if seconds else None
    strategy = target.strategy(st)
    for s in target.seeds():  # the valid inputs themselves come first
        stats.record(s, fuzz_targets.check(target, s, timeout))
    n_chunk = 0
    while stats.execs < execs and (deadline is None or time.monotonic() < deadline):
        todo = min(chunk, execs - stats.execs)

        # Fresh settings per chunk keep hypothesis' bookkeeping small and give
        # each chunk its own seed; failures never reach hypothesis (the contract
        # check records them), so nothing is shrunk or replayed.
        @hseed(seed * 1_000_003 + n_chunk)
        @settings(
            max_examples=todo,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            derandomize=False,
        )
        @given(strategy)
        def body(data):
            if stats.execs >= execs or (deadline is not None and time.monotonic() > deadline):
                return
            stats.record(data, fuzz_targets.check(target, data, timeout))

        before = stats.execs
        body()
        n_chunk += 1
        if stats.execs == before:  # the strategy is exhausted
            break
    return stats


def run_atheris(target, execs, seconds=None, seed=0, artifacts=None, timeout=5.0):
    """Coverage-guided run in this process; never returns (libFuzzer owns the
    loop): writes the stats JSON to $TVMFFI_FUZZ_OUT and exits."""
    import atheris

    out_path = os.environ["TVMFFI_FUZZ_OUT"]
    with atheris.instrument_imports(include=["tvmffi_cli", "pefile"]):
        import pefile  # noqa: F401

        import tvmffi_cli.abi.symbols
        import tvmffi_cli.abi.typeschema
        import tvmffi_cli.binary
        import tvmffi_cli.binary.elf
        import tvmffi_cli.binary.libbin
        import tvmffi_cli.binary.macho
        import tvmffi_cli.binary.modformats
        import tvmffi_cli.binary.pe
        import tvmffi_cli.binary.reader
        import tvmffi_cli.call.literals
        import tvmffi_cli.cli.inspect
        import tvmffi_cli.inspect.engine  # noqa: F401

    stats = Stats(target.name, "atheris", artifacts)
    deadline = time.monotonic() + seconds if seconds else None
    corpus = tempfile.mkdtemp(prefix=f"tvmffi-fuzz-{target.name}-")
    for i, s in enumerate(target.seeds()):
        Path(corpus, f"seed{i}").write_bytes(s)

    def finish():
        Path(out_path).write_text(json.dumps(stats.to_json()))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def one(data):
        stats.record(data, fuzz_targets.check(target, data, timeout))
        if stats.execs >= execs or (
            deadline is not None and stats.execs % 64 == 0 and time.monotonic() > deadline
        ):
            finish()

    max_len = max([target.max_len] + [len(s) for s in target.seeds()])
    # -timeout=0 and no -runs: the per-input timer and the exec count above
    # decide; libFuzzer would otherwise abort the process and lose the stats.
    atheris.Setup(
        [
            sys.argv[0],
            f"-max_len={max_len}",
            f"-seed={seed + 1}",
            "-timeout=0",
            "-rss_limit_mb=0",
            "-print_final_stats=0",
            "-reload=0",
            corpus,
        ],
        one,
    )
    atheris.Fuzz()
    finish()  # the corpus and mutation budget ran out before the count


def run(
    target_name,
    engine,
    execs,
    seconds=None,
    seed=0,
    artifacts=None,
    memory_mb=1024,
    timeout=5.0,
    python=None,
):
    """Run one (target, engine) in a child process and return its stats dict."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stats.json"
        cmd = [
            python or sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            engine,
            "--target",
            target_name,
            "--execs",
            str(execs),
            "--seed",
            str(seed),
            "--timeout",
            str(timeout),
            "--memory-mb",
            str(memory_mb),
        ]
        if seconds:
            cmd += ["--seconds", str(seconds)]
        if artifacts:
            cmd += ["--artifacts", str(artifacts)]
        # The child's temporary files (its corpus, ...) go with `tmp`: libFuzzer
        # owns its loop and the child ends by os._exit, never cleaning up.
        env = dict(os.environ, TVMFFI_FUZZ_OUT=str(out), TMPDIR=tmp)
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        wall = time.monotonic() - t0
        if out.exists():
            st = json.loads(out.read_text())
            st["wall_seconds"] = round(wall, 2)
            return st
        # The child died (a signal, an abort in native code): that is a finding too.
        tail = p.stderr.decode("utf-8", "replace")[-2000:]
        return {
            "target": target_name,
            "engine": engine,
            "execs": 0,
            "crashes": 1,
            "distinct": 1,
            "project_errors": 0,
            "masked": 0,
            "seconds": round(wall, 2),
            "wall_seconds": round(wall, 2),
            "masked_kinds": [],
            "findings": [
                {
                    "key": f"child exited with {p.returncode}",
                    "type": "ChildDied",
                    "frame": None,
                    "message": tail,
                    "count": 1,
                    "size": None,
                    "input": None,
                }
            ],
        }


def child_main(args):
    _limit_memory(args.memory_mb)
    target = fuzz_targets.TARGETS[args.target[0]]
    kw = dict(
        execs=args.execs,
        seconds=args.seconds,
        seed=args.seed,
        artifacts=args.artifacts,
        timeout=args.timeout,
    )
    if args.child == "atheris":
        run_atheris(target, **kw)
        return 0
    stats = run_hypothesis(target, **kw)
    Path(os.environ["TVMFFI_FUZZ_OUT"]).write_text(json.dumps(stats.to_json()))
    return 0


def repro(args):
    _limit_memory(args.memory_mb)
    target = fuzz_targets.TARGETS[args.target[0]]
    data = Path(args.repro).read_bytes()
    try:
        out = fuzz_targets.check(target, data, args.timeout)
    finally:
        target.close()
    if out.kind in ("ok", "error"):
        print(f"{target.name}: {len(data)} bytes -> {out.kind} (contract holds)")
        return 0
    print(f"{target.name}: {len(data)} bytes -> {out.kind}: {out.key}\n{out.trace}")
    return 1 if out.kind == "finding" else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench/fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--execs",
        type=int,
        default=DEFAULT_EXECS,
        help="executions per target and engine (default 100,000)",
    )
    ap.add_argument(
        "--target",
        action="append",
        choices=sorted(fuzz_targets.TARGETS),
        help="target to run (repeatable; default: all)",
    )
    ap.add_argument("--engine", choices=ENGINES + ("both",), default="both")
    ap.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="time cap per target and engine (stops before --execs)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", "-j", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=5.0, help="per-input time limit (s)")
    ap.add_argument(
        "--memory-mb", type=int, default=1024, help="address-space limit of each child (0: none)"
    )
    ap.add_argument(
        "--artifacts",
        default=None,
        help="where finding inputs go (default: a new temporary directory)",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--list", action="store_true", help="list the targets and exit")
    ap.add_argument("--repro", metavar="FILE", help="replay one input against --target")
    ap.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.execs < 1:
        ap.error("--execs must be at least 1")
    if args.list:
        for t in fuzz_targets.TARGETS.values():
            print(f"{t.name:11} {t.doc}")
        return 0
    if args.child or args.repro:
        if not args.target or len(args.target) != 1:
            ap.error("--child/--repro need exactly one --target")
        return child_main(args) if args.child else repro(args)

    names = args.target or list(fuzz_targets.TARGETS)
    engines = ENGINES if args.engine == "both" else (args.engine,)
    if "atheris" in engines:
        try:
            import atheris  # noqa: F401
        except ImportError:
            print(
                "bench/fuzz: atheris is not installed (pip install '.[test]'); "
                "use --engine hypothesis",
                file=sys.stderr,
            )
            return 2
    artifacts = args.artifacts or tempfile.mkdtemp(prefix="tvmffi-fuzz-findings-")
    # Build the seed libraries once here, not in two children at the same time.
    for n in names:
        fuzz_targets.TARGETS[n].seeds()
    jobs = [(n, e) for n in names for e in engines]
    t0 = time.monotonic()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(
            pool.map(
                lambda job: run(
                    job[0],
                    job[1],
                    args.execs,
                    args.seconds,
                    args.seed,
                    artifacts,
                    args.memory_mb,
                    args.timeout,
                ),
                jobs,
            )
        )
    total = time.monotonic() - t0
    bad = any(r["crashes"] for r in results)
    if args.json:
        print(
            json.dumps(
                {
                    "execs_per_target": args.execs,
                    "seconds": round(total, 1),
                    "artifacts": artifacts,
                    "results": results,
                },
                indent=1,
            )
        )
        return 1 if bad else 0
    print(
        f"{'target':11} {'engine':10} {'execs':>8} {'crashes':>7} {'distinct':>8} "
        f"{'masked':>6} {'errors':>7} {'time':>8} {'execs/s':>8}"
    )
    for r in results:
        secs = r["seconds"]
        print(
            f"{r['target']:11} {r['engine']:10} {r['execs']:>8} {r['crashes']:>7} "
            f"{r['distinct']:>8} {r['masked']:>6} {r['project_errors']:>7} {secs:>7.1f}s "
            f"{(r['execs'] / secs if secs else 0):>8.0f}"
        )
    for r in results:
        for kind, items in (("FINDING", r["findings"]), ("masked", r["masked_kinds"])):
            for f in items:
                print(
                    f"{kind} {r['target']}/{r['engine']}: {f['key']} x{f['count']}: "
                    f"{(f['message'] or '')[:160]!r}"
                    + (f"\n    input: {f['input']}" if f.get("input") else "")
                )
    print(
        f"total {total:.1f}s; findings saved under {artifacts}"
        if bad
        else f"total {total:.1f}s; no findings"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
