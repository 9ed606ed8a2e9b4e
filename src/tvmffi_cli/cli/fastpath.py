"""What the click-free start of the plain commands shares with the click path.

`inspect`, `call` and `bench` parse their arguments by hand, so their plain
forms skip click (importing and running it costs about as much as the rest
of a `tvmffi call`). They print and exit exactly as the click path does:
one stderr line per error and the documented exit codes.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, NoReturn

from ..errors import EXIT_INTERNAL, EXIT_USAGE, TvmffiError

#: What a Ctrl-C ends a command with, on either path (exit EXIT_USAGE).
ABORTED = "tvmffi: aborted"
#: What a SIGTERM ends a command with, on either path (then the signal's own end).
TERMINATED = "tvmffi: terminated"


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (see on_sigterm). Not an Exception,
    as KeyboardInterrupt is not: it passes every `except Exception` and runs
    the cleanups on its way out (the worker and what it started killed, temp
    dirs removed), and click lets it through untouched."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def on_sigterm() -> None:
    """Turn SIGTERM (a cancelled CI job, timeout(1)) into Terminated, unless
    whoever started us ignores it (kept ignored, as for SIGINT)."""
    import signal

    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_terminated)


def end_terminated() -> NoReturn:
    """After the cleanup: one line, then end by SIGTERM itself, so the caller
    sees a terminated process (wait status), not an exit code of ours."""
    import signal

    echo(TERMINATED, err=True)
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    os._exit(128 + signal.SIGTERM)  # not reached: the signal ended us


def echo(line: str = "", err: bool = False) -> None:
    """Print one line (flushed, so stdout and stderr keep their order)."""
    stream = sys.stderr if err else sys.stdout
    stream.write(line + "\n")
    stream.flush()


def debugging() -> bool:
    return os.environ.get("TVMFFI_DEBUG") == "1"


def unknown_option_line(command: str, option: str, closest: str | None, hint: str = "") -> str:
    """The one line of an unknown option, the same on every command and on
    both paths (click's parser and the hand-written ones of the fast path)."""
    from ..text import one_line

    where = f"tvmffi {command}".rstrip()
    if closest:
        said = f"did you mean {closest}?"
    else:
        said = f"see {where} --help" + (f"; {hint}" if hint else "")
    return f"{where}: error: unknown option {one_line(option)} ({said})"


def error_line(e: BaseException, command: str = "") -> tuple[str, int]:
    """(the one stderr line, the exit code) for an error that ended a command."""
    from ..text import one_line

    if isinstance(e, TvmffiError) and hasattr(e, "closest") and hasattr(e, "option"):
        # call.argv.UnknownOption (duck-typed: no import of call/ here)
        line = unknown_option_line(command, e.option, e.closest, getattr(e, "hint", ""))
        return line, e.exit_code
    if isinstance(e, TvmffiError):
        # Messages may quote library text (loader errors, names): one line, inert.
        return f"tvmffi: error: {one_line(str(e))}", e.exit_code
    msg = one_line(f"{type(e).__name__}: {e}")
    return f"tvmffi: internal error: {msg} (rerun with --debug)", EXIT_INTERNAL


def run(command: Callable[[list[str]], int | None], argv: list[str], name: str = "") -> int | None:
    """command(argv) with the CLI's error handling: its exit code, or None when
    it leaves the arguments to the click command (--help, unusual forms).
    `name`: the command's name, for the lines that say it."""
    try:
        return command(argv)
    except KeyboardInterrupt:
        echo(ABORTED, err=True)
        return EXIT_USAGE
    except Terminated:
        end_terminated()
    except BrokenPipeError:
        return 0
    except Exception as e:
        if debugging():
            import traceback

            traceback.print_exc()
        line, code = error_line(e, name)
        echo(line, err=True)
        return code


def exit_now(code: int) -> None:
    """End the process with `code` once the output is flushed, skipping the
    interpreter's teardown (freeing every module and object: 20-40 ms, a
    tenth of a `tvmffi call`). Only for a command that has finished: its
    worker ended, its files closed; nothing registers exit handlers."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: nothing more can be said on it
    os._exit(code)
