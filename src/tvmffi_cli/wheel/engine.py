"""`inspect`, `conform`, `stubs` and `extract` over a bundle (a wheel or a
directory): the command's own engine on every TVM-FFI library, one result per
library, and the bundle's summary (no click).

Results name libraries as `<wheel file>/<member>`; a wheel's temporary
directory never shows in them (reproducers say the wheel instead).
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, is_dataclass, replace
from typing import Any, Optional

from .. import text
from ..errors import InputError, TvmffiError
from .bundle import Bundle
from .libraries import LibraryFile


@dataclass(frozen=True)
class LibraryOutcome:
    library: str  # <wheel file>/<member>
    member: str
    exit_code: int  # the command's exit code on this library alone
    report: Any = None  # the command's own result (report dict, conform Report, ...)
    error: str | None = None  # why there is no report (exit 2 on this library)
    note: str | None = None  # why the library was left out (--function), exit 0
    #: abi.versions.RuntimeRange of what its runtime must provide
    range: Any = None

    def report_json(self) -> Any:
        r = self.report
        if hasattr(r, "to_json"):
            return r.to_json()
        if is_dataclass(r) and not isinstance(r, type):  # a StubResult: its summary
            return {k: v for k, v in asdict(r).items() if k != "text"}
        return r


@dataclass(frozen=True)
class BundleResult:
    command: str
    bundle: Bundle
    outcomes: tuple[LibraryOutcome, ...]
    elapsed: float
    #: wheel-level conform results (declared-runtime), conform.results.Result
    checks: tuple[Any, ...] = ()
    #: stubs into a directory: each member's .pyi written (member -> path)
    written: Optional[Mapping[str, str]] = None

    @property
    def exit_code(self) -> int:
        codes = [o.exit_code for o in self.outcomes]
        codes += [1 for c in self.checks if c.blocking]
        return max(codes or [0])

    def combined_range(self) -> Any:
        """The releases every TVM-FFI library of the bundle runs on."""
        from ..abi.versions import runtime_range

        return runtime_range(n for lib in self.bundle.libraries for n in lib.runtime_imports)

    def summary_line(self) -> str:
        bad = sum(o.exit_code != 0 for o in self.outcomes) + sum(c.blocking for c in self.checks)
        verdict = "PASSED" if self.exit_code == 0 else "FAILED"
        name = os.path.basename(self.bundle.source.rstrip(os.sep))
        return (
            f"tvmffi {self.command} {verdict} {name}: {len(self.outcomes)} TVM-FFI "
            f"librar{'y' if len(self.outcomes) == 1 else 'ies'}, {bad} failing "
            f"({self.elapsed:.2f} s)"
        )

    def to_json(self) -> dict[str, Any]:
        """The --json document of a bundle (the JSON boundary)."""
        doc: dict[str, Any] = {
            # The JSON contract of every command: library (the path given),
            # runtime (null here: each library's report names its own).
            "library": self.bundle.source,
            "runtime": None,
            "command": self.command,
            "input": self.bundle.to_json(),
            "libraries": [
                {
                    "library": o.library,
                    "member": o.member,
                    "exit_code": o.exit_code,
                    "report": o.report_json(),
                    "error": o.error,
                    "note": o.note,
                    "runtime_range": None if o.range is None else o.range.to_json(),
                }
                for o in self.outcomes
            ],
            "runtime_range": self.combined_range().to_json(),
            "checks": [c.to_json() for c in self.checks],
            "passed": self.exit_code == 0,
            "exit_code": self.exit_code,
            "summary_line": self.summary_line(),
            "elapsed_s": round(self.elapsed, 3),
            "errors": [f"{o.library}: {o.error}" for o in self.outcomes if o.error],
        }
        if self.written is not None:
            doc["written"] = dict(self.written)
        return doc


def _relocator(b: Bundle) -> Callable[[str], str]:
    """A string with the temporary root shown as the wheel's name."""
    name = os.path.basename(b.source) + "/"
    root = b.root + os.sep
    if b.root == b.source:
        return lambda s: s
    return lambda s: s.replace(root, name) if root in s else s


def _relocate(b: Bundle, obj: Any) -> Any:
    return text.map_strings(obj, _relocator(b))


def _each(b: Bundle, command: str, one: Callable[[LibraryFile], tuple[int, Any]]) -> BundleResult:
    from ..abi.versions import runtime_range

    out: list[LibraryOutcome] = []
    for lib in b.libraries:
        rr = runtime_range(lib.runtime_imports)
        try:
            code, rep = one(lib)
            out.append(LibraryOutcome(b.display(lib), lib.member, code, rep, range=rr))
        except TvmffiError as e:
            msg = str(e).replace(lib.path, lib.member)
            out.append(LibraryOutcome(b.display(lib), lib.member, e.exit_code, error=msg, range=rr))
    return BundleResult(command, b, tuple(out), time.monotonic() - b.started)


def inspect_bundle(b: Bundle, static: bool, timeout: float, runtime: str | None) -> BundleResult:
    from ..inspect.engine import run

    def one(lib: LibraryFile) -> tuple[int, Any]:
        rep = run(lib.path, static=static, timeout=timeout, runtime=runtime)
        rep = _relocate(b, dict(rep, path=b.display(lib)))
        return (1 if rep["errors"] else 0), rep

    return _each(b, "inspect", one)


def stubs_bundle(
    b: Bundle, static: bool, timeout: float, runtime: str | None, directory: str | None
) -> BundleResult:
    """One .pyi per library: written to `directory` as `<member with / as _>.pyi`
    (never replacing a directory), or kept in the results for stdout."""
    from ..stubs.engine import generate, write

    if directory is not None:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise InputError(f"{directory}: cannot create ({e.strerror or e})") from None
    written: dict[str, str] = {}

    def one(lib: LibraryFile) -> tuple[int, Any]:
        r = generate(lib.path, static=static, timeout=timeout, runtime=runtime)
        if directory is not None:
            target = os.path.join(directory, stub_name(lib.member))
            try:
                write(r, target)
            except OSError as e:
                raise InputError(f"{target}: cannot write ({e.strerror or e})") from None
            written[lib.member] = target
        return 0, r

    res = _each(b, "stubs", one)
    return replace(res, written=written)


def stub_name(member: str) -> str:
    """libs/libfoo.so.1 -> libs_libfoo.pyi (one flat directory of stubs)."""
    stem = member.split("/")
    last = stem[-1].split(".")[0] or "_"
    return "_".join([*stem[:-1], last]).replace("-", "_") + ".pyi"


def extract_bundle(b: Bundle, directory: str, force: bool) -> BundleResult:
    """Every library's embedded modules into `directory/<member with / as _>/`."""
    from ..extract.engine import run

    def one(lib: LibraryFile) -> tuple[int, Any]:
        sub = os.path.join(directory, lib.member.replace("/", "_"))
        r = run(lib.path, sub, force=force)
        return r.exit_code, r

    return _each(b, "extract", one)


def conform_bundle(
    b: Bundle,
    options_for: Callable[[str], Any],
    declared: bool = True,
    progress: Callable[[int, int, str], object] | None = None,
) -> BundleResult:
    """`options_for(library path)` gives the conform runner's Options of one
    library (the CLI resolves --runtime per library). With --function, a
    library holding none of the names is left out with a note; InputError
    when no library holds them. Then, with `declared` (the check is selected)
    and a wheel, the wheel's declared-runtime check."""
    from ..conform import runner
    from ..conform.checks_wheel import declared_runtime

    def one(lib: LibraryFile) -> tuple[int, Any]:
        o = options_for(lib.path)
        rep = runner.run(lib.path, progress=progress, options=o)
        return rep.exit_code(), _conform_report(b, lib, rep)

    res = _each(b, "conform", one)
    outcomes = []
    for o in res.outcomes:
        if o.error and o.error.startswith("--function "):
            o = replace(o, exit_code=0, error=None, note=o.error)
        outcomes.append(o)
    if outcomes and all(o.note for o in outcomes):
        raise InputError(outcomes[0].note or "")
    checks: tuple[Any, ...] = ()
    if b.metadata is not None and declared:
        checks = (
            declared_runtime(
                b.metadata.runtime_specifier,
                [(b.display(lib), lib.runtime_imports) for lib in b.libraries],
                [b.display(r) for r in b.runtimes],
                _admitted_loads(b, b.metadata.runtime_specifier),
            ),
        )
    return replace(
        res, outcomes=tuple(outcomes), checks=checks, elapsed=time.monotonic() - b.started
    )


#: Releases each library is loaded on for declared-runtime (each load is a
#: worker: ~0.5 s), and the releases outside the declared range tried when it
#: loads on none of those (to tell a release-specific failure from one of the
#: host: a missing dependency or module loader fails on every release).
MAX_LOADS = 4
MAX_CONTROL_LOADS = 2


def _admitted_loads(b: Bundle, specifier: str | None) -> dict[str, list[tuple[str, str, str]]]:
    """Each TVM-FFI library loaded on the runtimes of the releases the wheel
    admits and its symbols allow that are at hand (inspect/ranges.py; nothing
    is fetched): the newest and the oldest first, MAX_LOADS in all. For
    declared-runtime: (release, status, message) per library."""
    from ..abi.versions import KNOWN_RELEASES, runtime_range
    from ..conform.checks_wheel import MISSING_DEPENDENCY, admits
    from ..inspect.ranges import NOT_CHECKED, at_hand, verify

    if b.runtimes and specifier is None:
        return {}  # it ships its own runtime: the releases are not its concern
    fix = _relocator(b)
    out: dict[str, list[tuple[str, str, str]]] = {}
    for lib in b.libraries:
        by_symbols = runtime_range(list(lib.runtime_imports)).ok_releases
        here = at_hand(by_symbols)
        wanted = [r for r in here if not specifier or admits(specifier, r)]
        order = [*wanted[-1:], *wanted[:1], *reversed(wanted[1:-1])]
        pick = list(dict.fromkeys(order))[:MAX_LOADS]
        loads: list[Any] = []
        for r in pick:
            loads += verify(lib.path, releases=[r], by_symbols=by_symbols).loads
            if MISSING_DEPENDENCY in loads[-1].message:
                break  # the same on every release: loading cannot tell them apart
        if loads and all(x.status != "loads" for x in loads) and len(loads) == len(pick):
            rest = [r for r in reversed(here) if r not in pick][:MAX_CONTROL_LOADS]
            loads += verify(lib.path, releases=rest, by_symbols=by_symbols).loads if rest else []
        pick = [x.release for x in loads]
        skipped = [
            r for r in by_symbols if r not in pick and (not specifier or admits(specifier, r))
        ]
        entries = [(x.release, x.status, fix(x.message)) for x in loads]
        entries += [
            (r, NOT_CHECKED, "not loaded (runtime not at hand, or past MAX_LOADS)") for r in skipped
        ]
        out[b.display(lib)] = sorted(entries, key=lambda e: KNOWN_RELEASES.index(e[0]))
    return out


def _conform_report(b: Bundle, lib: LibraryFile, rep: Any) -> Any:
    """The runner's Report with the library named as in the wheel and every
    reproducer pointed at the wheel (the temporary copy is gone afterwards;
    `tvmffi call` takes one library, so those become a narrowed conform)."""
    quoted = shlex.quote(rep.path)
    src = shlex.quote(b.source)
    fix = _relocator(b)

    def again(r: Any) -> str | None:
        if not r.reproduce:
            return None
        if r.reproduce.startswith("tvmffi call "):
            cmd = ["tvmffi", "conform", b.source, "--select", r.check]
            return " ".join(shlex.quote(c) for c in cmd + ["--function", r.function or ""])
        return str(r.reproduce).replace(quoted, src)

    results = [
        replace(
            r,
            message=fix(r.message),
            details=None if r.details is None else text.map_strings(r.details, fix),
            reproduce=again(r),
        )
        for r in rep.results
    ]
    return replace(rep, path=b.display(lib), results=results)
