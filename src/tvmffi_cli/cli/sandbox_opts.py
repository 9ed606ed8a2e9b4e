"""Options shared by every command that loads a library (--no-sandbox,
--memory-limit, --timeout for the load, --runtime), and the `sandbox` field /
line that says what was applied."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..sandbox import policy as sbpolicy  # light; sandbox.process is imported on use
from ..sandbox.policy import Confinement

if TYPE_CHECKING:
    from ..call.argv import ArgvSpec
    from ..text import JsonDict

NO_SANDBOX_HELP = (
    "Run the library without kernel confinement (Landlock, seccomp, network "
    "namespace); process lifetime and limits still apply. See security.md in "
    "the package's docs folder (`tvmffi conform --help` names it)."
)
MEMORY_HELP = (
    "Memory the library's processes may hold together, e.g. 512M, 2G (default "
    f"{sbpolicy.format_size(sbpolicy.DEFAULT_MEMORY_LIMIT)}); going over is a failure. "
    "A delegated cgroup v2 where there is one, else RLIMIT_DATA per process and a "
    "watch of the whole tree (the sandbox field's memory_mechanism)."
)


F = TypeVar("F", bound=Callable[..., Any])


def load_timeout(param: str = "timeout", what: str = "the library") -> Callable[[F], F]:
    """--timeout S: seconds allowed for loading in the child (30)."""
    import click  # here: inspect's click-free fast path imports this module

    return click.option(
        "--timeout",
        param,
        type=str,
        metavar="SECONDS",
        default="30",
        show_default=True,
        help=f"Seconds allowed for loading {what} in a child process.",
    )


def runtime(what: str = "the library") -> Callable[[F], F]:
    """--runtime auto|builtin|official|VERSION|PATH (auto)."""
    import click

    return click.option(
        "--runtime",
        default="auto",
        show_default=True,
        metavar="auto|builtin|official|VERSION|PATH",
        help=f"Runtime that hosts {what}: auto picks builtin when it provides "
        "every runtime symbol imported, else the official one or the newest "
        "official release of the library's range at hand, and tries the next "
        "one at hand when loading fails; VERSION (e.g. 0.1.12; 0.1.15 means "
        "0.1.15.post2) fetches that official release into the user cache.",
    )


def verify_range() -> Callable[[F], F]:
    """--verify-range: load the library on every release of its symbol range."""
    import click

    return click.option(
        "--verify-range",
        "verify_range",
        is_flag=True,
        help="Also load the library on the runtime of every official release its "
        "symbols allow (fetched into the user cache when missing) and report "
        "the releases where loading fails, with the library's message.",
    )


# -- confinement options (--env, --scratch-limit, --require-sandbox,
# --allow-read, --allow-write): call's raw parser, the click commands, apply().
REQUIRE_HELP = (
    "Refuse to run library code (exit 2, naming what is missing) unless every "
    f"confinement feature is applied; also {sbpolicy.REQUIRE_ENV}=1."
)
CONFINE_HELP: dict[str, tuple[str, str]] = {
    "--env": ("NAME", "Pass the variable NAME (or NAME=VALUE) to the library; repeatable."),
    "--scratch-limit": (
        "SIZE",
        "Disk the library may fill in its scratch directory, also per file "
        f"(default {sbpolicy.format_size(sbpolicy.DEFAULT_SCRATCH_LIMIT)}).",
    ),
    "--require-sandbox": ("", REQUIRE_HELP),
    "--allow-read": (
        "PATH",
        "Let the library read PATH (a directory: beneath it) too; repeatable.",
    ),
    "--allow-write": ("PATH", "Let the library write (and read) PATH too; repeatable."),
}
#: option -> takes a value? (for call's and bench's own parser)
CONFINE_OPTIONS = {k: bool(v[0]) for k, v in CONFINE_HELP.items()}
CONFINE_ROWS = [(f"{k} {m}".strip(), h) for k, (m, h) in CONFINE_HELP.items()]


def confine_options(f: F) -> F:
    """The confinement options as click options (inspect, conform)."""
    import click

    for name, (meta, help_) in reversed(CONFINE_HELP.items()):
        dest = "confine_" + name[2:].replace("-", "_")
        if meta:
            multiple = name != "--scratch-limit"
            f = click.option(name, dest, metavar=meta, multiple=multiple, help=help_)(f)
        else:
            f = click.option(name, dest, is_flag=True, help=help_)(f)
    return f


def _dirs(values: tuple[str, ...], option: str) -> tuple[str, ...]:
    import os

    from ..errors import InputError

    out = []
    for v in values:
        if not os.path.exists(v):
            raise InputError(f"{option} {v}: no such file or directory")
        out.append(os.path.abspath(v))
    return tuple(out)


def confine_given(**given: Any) -> Confinement:
    """The confinement options by click name (confine_env=...) or spelling
    ("--env": [...]) as one typed value; absent ones keep their defaults."""
    get = {
        k.removeprefix("confine_").removeprefix("--").replace("-", "_"): v for k, v in given.items()
    }
    scratch = get.get("scratch_limit")
    return Confinement(
        env=tuple(get.get("env") or ()),
        scratch_limit=None if scratch is None else str(scratch),
        require_sandbox=bool(get.get("require_sandbox")),
        allow_read=tuple(get.get("allow_read") or ()),
        allow_write=tuple(get.get("allow_write") or ()),
    )


def apply(
    no_sandbox: bool,
    memory_limit: str | None,
    confine: Confinement | None = None,
    **given: Any,
) -> None:
    """Set the policy every worker of this command starts with. `confine`:
    the confinement options (or, as before, `given` by click name or
    spelling: see confine_given()); absent ones keep their defaults."""
    import os

    from ..sandbox import environ

    c = confine if confine is not None else confine_given(**given)
    require = c.require_sandbox or os.environ.get(sbpolicy.REQUIRE_ENV) == "1"
    if require and no_sandbox:
        from ..errors import InputError

        raise InputError("--require-sandbox and --no-sandbox contradict each other")
    pol = sbpolicy.policy()
    sbpolicy.set_policy(
        sandbox=not no_sandbox,
        memory_limit=pol.memory_limit
        if memory_limit is None
        else sbpolicy.parse_size(memory_limit),
        scratch_limit=pol.scratch_limit
        if c.scratch_limit is None
        else sbpolicy.parse_size(c.scratch_limit, "--scratch-limit", 1 << 20),
        env=environ.check_names(c.env),
        allow_read=_dirs(c.allow_read, "--allow-read"),
        allow_write=_dirs(c.allow_write, "--allow-write"),
        require=require,
    )


def confine_from(parsed: ArgvSpec) -> Confinement:
    """The confinement options out of call's parsed command line."""
    opts = parsed.options
    return confine_given(**{k: opts[k] for k in CONFINE_OPTIONS if k in opts})


def field() -> JsonDict:
    """The `sandbox` field of a --json output."""
    if "tvmffi_cli.sandbox.process" not in sys.modules:
        # No worker can have run: skip importing the worker machinery
        # (inspect --static's fast path).
        return sbpolicy.no_worker_field()
    from ..sandbox import process

    return process.sandbox_field()


def line() -> str | None:
    """One line for people: what was applied and what was not (None if no worker ran)."""
    from ..sandbox import process

    info = process.last_sandbox()
    if info is None:
        return None
    if not info.enabled:
        return "sandbox: OFF (--no-sandbox); applied only: " + ", ".join(info.applied)
    text = "sandbox: " + ", ".join(info.applied)
    if info.missing:
        text += "; not applied: " + ", ".join(info.missing)
        if info.notes:
            text += " (" + "; ".join(info.notes) + ")"
    return text


#: How each memory mechanism reads in the -v line.
_MEMORY_WORDS = {
    "cgroup-v2": "a cgroup v2 of its own (memory.max, pids.max)",
    "rlimit-data+watch": "RLIMIT_DATA per process + the supervisor's watch of the tree",
    "rlimit-data": "RLIMIT_DATA per process only",
}


def memory_line() -> str | None:
    """How the last worker's memory was bounded, for -v (None: no worker ran)."""
    from ..sandbox import process

    info = process.last_sandbox()
    if info is None:
        return None
    if not info.memory_limit or info.memory_mechanism is None:
        return "memory: no limit"
    size = sbpolicy.format_size(info.memory_limit)
    return f"memory: {size}, {_MEMORY_WORDS.get(info.memory_mechanism, info.memory_mechanism)}"


def report(verbose: bool) -> None:
    """Print the sandbox line on stderr when something is missing or off, or with -v."""
    from ..sandbox import process

    info = process.last_sandbox()
    msg = line()
    if msg is None or info is None:
        return
    if verbose or info.missing or not info.enabled:
        sys.stderr.write(f"tvmffi: {msg}\n")
    mem = memory_line()
    if verbose and mem is not None:
        sys.stderr.write(f"tvmffi: {mem}\n")


#: The two options as rows of a hand-written help (call, bench).
HELP_ROWS = [("--no-sandbox", NO_SANDBOX_HELP), ("--memory-limit SIZE", MEMORY_HELP)]


def confinement() -> Callable[[F], F]:
    """--no-sandbox and --memory-limit SIZE for a click command (parameters
    no_sandbox, memory_limit; pass them to apply())."""
    import click

    def deco(f: F) -> F:
        f = click.option(
            "--memory-limit", "memory_limit", metavar="SIZE", default=None, help=MEMORY_HELP
        )(f)
        return click.option("--no-sandbox", "no_sandbox", is_flag=True, help=NO_SANDBOX_HELP)(f)

    return deco


def runtime_json(value: str | None, library: str) -> Any:
    """The `runtime` of a --json document: the libtvm_ffi.so that hosts `library`
    under --runtime `value` (None when it cannot be chosen)."""
    import os

    from ..errors import TvmffiError
    from ..ffi.hosts import choose_runtime

    try:
        return choose_runtime(value, library if os.path.isfile(library) else None).to_json()
    except TvmffiError:
        return None
