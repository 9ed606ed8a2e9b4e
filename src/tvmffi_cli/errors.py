"""The project's own error types, and the exit codes they map to.

Exit codes: 0 success; 1 the checked thing failed (a call raised, conformance
failed, a file was read but is malformed); 2 usage or input error (bad flags,
missing or unreadable file); 3 internal error (a bug in tvmffi).
"""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class TvmffiError(Exception):
    """Base of every error tvmffi raises on purpose; printed as one line."""

    exit_code = EXIT_USAGE


class InputError(TvmffiError):
    """The input (file, literal, flag value) cannot be used."""

    exit_code = EXIT_USAGE


class FormatError(InputError):
    """A binary file or embedded blob is not in the expected format."""


class CheckFailed(TvmffiError):
    """The thing being checked failed (call raised, conformance failed)."""

    exit_code = EXIT_FAILED
