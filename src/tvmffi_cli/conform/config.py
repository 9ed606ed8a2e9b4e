"""`[tool.tvmffi.conform]` settings: what to run and which findings to accept.

    [tool.tvmffi.conform]
    select = ["..."]              # check ids (default: all)
    ignore = ["thread-safety"]
    threads = 8                   # as --threads
    min-runtime = "0.1.8"         # as --min-runtime
    max-runtime = "0.1.15"        # as --max-runtime
    timeout = 5.0                 # as --timeout
    require-sandbox = true        # as --require-sandbox (sandbox options:
    env = ["HF_HOME"]             #   --env, --allow-read, --allow-write,
    allow-write = [".cache"]      #   --scratch-limit; paths relative to
    scratch-limit = "2G"          #   this file; lists add to the options)

    [[tool.tvmffi.conform.suppress]]
    check = "no-leak"             # required, a check id
    function = "fill_cache"       # optional: a function or global name, or a
                                  # glob ("xgr.*"); omitted = the whole library
    reason = "keeps a process-wide cache by design"   # required

Read from `pyproject.toml` in the current directory or its nearest parent that
has one, or from the file given with `--config` (a pyproject.toml, or a TOML
file whose top level is this table). Options on the command line win.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..sandbox.policy import Confinement
from . import registry
from .results import Result


@dataclass(frozen=True)
class Suppression:
    check: str
    function: str | None
    reason: str

    def matches(self, r: Result) -> bool:
        if r.check != self.check:
            return False
        if self.function is None:
            return True
        return r.function is not None and fnmatch.fnmatchcase(r.function, self.function)


@dataclass(frozen=True)
class Config:
    source: str | None = None
    select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    threads: int | None = None
    min_runtime: str | None = None
    timeout: float | None = None
    suppress: tuple[Suppression, ...] = field(default_factory=tuple)
    max_runtime: str | None = None
    #: The table's sandbox options (the command line's go over them).
    sandbox: Confinement = Confinement()

    def apply(self, results: list[Result]) -> list[Result]:
        """Mark the findings a suppression covers (they stay in the report)."""
        out = []
        for r in results:
            if r.bad:
                for s in self.suppress:
                    if s.matches(r):
                        r = replace(r, suppressed=s.reason)
                        break
            out.append(r)
        return out


def find_pyproject(start: Path) -> Path | None:
    for d in (start, *start.parents):
        p = d / "pyproject.toml"
        if p.is_file():
            return p
    return None


def load(path: str | None = None, cwd: Path | None = None) -> Config:
    """The configuration from --config PATH, else the nearest pyproject.toml
    (an empty Config when there is none or it has no table)."""
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"--config {path}: no such file")
    else:
        found = find_pyproject((cwd or Path.cwd()).resolve())
        if found is None:
            return Config()
        p = found
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{p}: cannot read: {e}") from None
    if path is None and "tvmffi.conform" not in text:
        return Config()  # a pyproject.toml without our table: nothing to parse
    toml = _toml()
    try:
        doc = toml.loads(text)
    except toml.TOMLDecodeError as e:
        raise InputError(f"{p}: not valid TOML: {e}") from None
    table = doc.get("tool", {}).get("tvmffi", {}).get("conform")
    if table is None and path is not None and p.name != "pyproject.toml":
        table = doc
    if table is None:
        return Config()
    return parse(table, str(p))


def _toml() -> Any:
    """tomllib (Python 3.11+) or the tomli backport."""
    try:
        import tomllib  # type: ignore[import-not-found, unused-ignore]

        return tomllib
    except ImportError:
        try:
            import tomli  # type: ignore[import-not-found, unused-ignore]

            return tomli
        except ImportError:
            raise InputError(
                "reading the conform configuration needs Python 3.11 or the "
                "tomli package (pip install tomli)"
            ) from None


def _ids(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: expected a list of check ids")
    return frozenset(registry.parse_ids(value))


def parse(table: dict[str, Any], source: str) -> Config:
    # `table`: the TOML table as the toml reader gives it (free-form, checked here)
    where = f"{source} [tool.tvmffi.conform]"
    known = {
        "select",
        "ignore",
        "threads",
        "min-runtime",
        "max-runtime",
        "timeout",
        "suppress",
        *SANDBOX_KEYS,
    }
    extra = set(table) - known
    if extra:
        raise InputError(
            f"{where}: unknown key(s) {', '.join(sorted(extra))} "
            f"(known: {', '.join(sorted(known))})"
        )
    threads = table.get("threads")
    if threads is not None and (not isinstance(threads, int) or threads < 2):
        raise InputError(f"{where}: threads must be an integer >= 2")
    timeout = table.get("timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InputError(f"{where}: timeout must be a positive number")
    minrt = table.get("min-runtime")
    if minrt is not None:
        minrt = check_version(str(minrt), f"{where}: min-runtime")
    maxrt = table.get("max-runtime")
    if maxrt is not None:
        maxrt = check_version(str(maxrt), f"{where}: max-runtime")
    sups = []
    raw = table.get("suppress", [])
    if not isinstance(raw, list):
        raise InputError(f"{where}: suppress must be an array of tables")
    for i, s in enumerate(raw):
        at = f"{where} suppress[{i}]"
        if not isinstance(s, dict):
            raise InputError(f"{at}: expected a table with check, function and reason")
        bad = set(s) - {"check", "function", "reason"}
        if bad:
            raise InputError(f"{at}: unknown key(s) {', '.join(sorted(bad))}")
        check = s.get("check")
        if not isinstance(check, str) or check not in registry.BY_ID:
            raise InputError(f"{at}: check must be one of the check ids, got {check!r}")
        reason = s.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"{at}: every suppression needs a reason")
        fn = s.get("function")
        if fn is not None and (not isinstance(fn, str) or not fn):
            raise InputError(f"{at}: function must be a non-empty string")
        sups.append(Suppression(check, fn, reason.strip()))
    return Config(
        source,
        _ids(table.get("select", []), f"{where} select"),
        _ids(table.get("ignore", []), f"{where} ignore"),
        threads,
        minrt,
        None if timeout is None else float(timeout),
        tuple(sups),
        max_runtime=maxrt,
        sandbox=_sandbox(table, where, Path(source).parent),
    )


SANDBOX_KEYS = ("require-sandbox", "env", "allow-read", "allow-write", "scratch-limit")


def _sandbox(table: dict[str, Any], where: str, base: Path) -> Confinement:
    """The sandbox options of the table (the toml reader's free-form value),
    checked; paths made absolute."""
    req = table.get("require-sandbox", False)
    if not isinstance(req, bool):
        raise InputError(f"{where}: require-sandbox must be true or false")
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("env", "allow-read", "allow-write"):
        v = table.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise InputError(f"{where}: {key} must be a list of strings")
        lists[key] = tuple(v) if key == "env" else tuple(str(base / x) for x in v)
    lim = table.get("scratch-limit")
    if lim is not None and not isinstance(lim, str):
        raise InputError(f'{where}: scratch-limit must be a size like "2G"')
    return Confinement(lists["env"], lim, req, lists["allow-read"], lists["allow-write"])


def check_version(text: str, where: str) -> str:
    from ..abi.versions import parse_version

    try:
        parse_version(text)
    except ValueError:
        raise InputError(f"{where}: {text!r} is not a version (like 0.1.8)") from None
    return text.strip().lstrip("v")
