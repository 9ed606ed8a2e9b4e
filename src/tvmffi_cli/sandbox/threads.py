"""The parent's helper threads leave Ctrl-C to its main thread.

The kernel hands a signal sent to the process to any thread that does not
block it. A SIGINT taken by a helper thread (the library's output relay, the
scratch watch, conform's probers) wakes that thread, not the main one, and
Python runs its handler only when the main thread next runs bytecode: a main
thread asleep in a select() for a call's whole timeout sleeps on, and Ctrl-C
waits for the timeout. The kernel prefers the main thread, so it is rare;
each helper thread blocks SIGINT first thing, so it never happens. The same
for SIGTERM, which tvmffi turns into a clean exit (cli/fastpath.on_sigterm).
"""

from __future__ import annotations

import signal


def leave_interrupts_to_main() -> None:
    """Block SIGINT and SIGTERM (cli/fastpath.on_sigterm) in the calling
    (helper) thread."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
