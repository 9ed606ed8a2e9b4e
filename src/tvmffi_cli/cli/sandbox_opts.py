"""Options shared by every command that loads a library (--no-sandbox,
--memory-limit, --timeout for the load, --runtime), and the `sandbox` field /
line that says what was applied."""

from __future__ import annotations

import sys
from typing import Any, Callable, TypeVar

from ..sandbox import process

NO_SANDBOX_HELP = (
    "Run the library without kernel confinement (Landlock, seccomp, network "
    "namespace); process lifetime and limits still apply. See docs/security.md."
)
MEMORY_HELP = (
    "Address-space limit of the worker, e.g. 512M, 2G (default "
    f"{process.format_size(process.DEFAULT_MEMORY_LIMIT)}); going over is a failure."
)


F = TypeVar("F", bound=Callable[..., Any])


def load_timeout(param: str = "timeout", what: str = "the library") -> Callable[[F], F]:
    """--timeout S: seconds allowed for loading in the child (30)."""
    import click  # here: inspect's click-free fast path imports this module

    return click.option(
        "--timeout",
        param,
        type=str,
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
        "every runtime symbol imported, else the official one; VERSION (e.g. "
        "0.1.12) fetches that official release into the user cache.",
    )


def apply(no_sandbox: bool, memory_limit: str | None) -> None:
    """Set the policy every worker of this command starts with."""
    changes: dict[str, Any] = {"sandbox": not no_sandbox}
    if memory_limit is not None:
        changes["memory_limit"] = process.parse_size(memory_limit)
    process.set_policy(**changes)


def field() -> dict[str, Any]:
    """The `sandbox` field of a --json output."""
    return process.sandbox_field()


def line() -> str | None:
    """One line for people: what was applied and what was not (None if no worker ran)."""
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


def report(verbose: bool) -> None:
    """Print the sandbox line on stderr when something is missing or off, or with -v."""
    info = process.last_sandbox()
    msg = line()
    if msg is None or info is None:
        return
    if verbose or info.missing or not info.enabled:
        sys.stderr.write(f"tvmffi: {msg}\n")
