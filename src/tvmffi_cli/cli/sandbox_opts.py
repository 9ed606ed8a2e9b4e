"""--no-sandbox and --memory-limit, shared by every command that loads a
library, and the `sandbox` field / line that says what was applied."""

from __future__ import annotations

import sys
from typing import Any

from ..sandbox import process

NO_SANDBOX_HELP = (
    "Run the library without kernel confinement (Landlock, seccomp, network "
    "namespace); process lifetime and limits still apply. See docs/security.md."
)
MEMORY_HELP = (
    "Address-space limit of the worker, e.g. 512M, 2G (default "
    f"{process.format_size(process.DEFAULT_MEMORY_LIMIT)}); going over is a failure."
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
