"""Python exceptions for errors raised by TVM-FFI functions (ffi.Error objects).

Each error kind the ABI names after a Python built-in ("ValueError",
"TypeError", ...) maps to a class deriving from both FFIErrorBase and that
built-in; every other kind becomes FFIError (a RuntimeError).
"""

from __future__ import annotations

from typing import Any

from ..abi import structs as abi


class FFIErrorBase(Exception):
    """An error raised by (or returned from) a TVM-FFI function.

    kind: the error kind string ("ValueError", "RuntimeError", custom kinds);
    message: the library's message; backtrace: as recorded by the runtime.
    str(e) is the message alone, so `f"{e.kind}: {e}"` renders it."""

    def __init__(self, kind: str, message: str, backtrace: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.backtrace = backtrace

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, tuple[str, str, str]]:
        return (error_class(self.kind), (self.kind, self.message, self.backtrace))


class FFIError(FFIErrorBase, RuntimeError):
    """RuntimeError and every kind without a matching Python exception."""


class BadResult(TypeError):
    """A function returned a value no type describes (a type index nothing
    registered): the library failed, not the caller's arguments."""


def _make(name: str, base: type[BaseException]) -> type[FFIErrorBase]:
    cls = type(name, (FFIErrorBase, base), {"__doc__": f"Library-raised {base.__name__}."})
    cls.__module__ = __name__
    return cls


FFIValueError = _make("FFIValueError", ValueError)
FFITypeError = _make("FFITypeError", TypeError)
FFIIndexError = _make("FFIIndexError", IndexError)
FFIKeyError = _make("FFIKeyError", KeyError)
FFIAttributeError = _make("FFIAttributeError", AttributeError)
FFINotImplementedError = _make("FFINotImplementedError", NotImplementedError)
FFIMemoryError = _make("FFIMemoryError", MemoryError)
FFIOverflowError = _make("FFIOverflowError", OverflowError)
FFIZeroDivisionError = _make("FFIZeroDivisionError", ZeroDivisionError)
FFIAssertionError = _make("FFIAssertionError", AssertionError)
FFITimeoutError = _make("FFITimeoutError", TimeoutError)

ERROR_CLASSES: dict[str, type[FFIErrorBase]] = {
    "ValueError": FFIValueError,
    "TypeError": FFITypeError,
    "IndexError": FFIIndexError,
    "KeyError": FFIKeyError,
    "AttributeError": FFIAttributeError,
    "NotImplementedError": FFINotImplementedError,
    "MemoryError": FFIMemoryError,
    "OverflowError": FFIOverflowError,
    "ZeroDivisionError": FFIZeroDivisionError,
    "AssertionError": FFIAssertionError,
    "TimeoutError": FFITimeoutError,
    "RuntimeError": FFIError,
}


def error_class(kind: str) -> type[FFIErrorBase]:
    return ERROR_CLASSES.get(kind, FFIError)


def error_from_handle(rt: object, handle: int, _depth: int = 0) -> FFIErrorBase:
    """Exception for an ffi.Error object (borrowed: no reference is taken)."""
    cell = abi.TVMFFIErrorCell.from_address(abi.cell_address(handle))
    kind = abi.byte_array_str(cell.kind)
    exc = error_class(kind)(
        kind, abi.byte_array_str(cell.message), abi.byte_array_str(cell.backtrace)
    )
    if cell.cause_chain and _depth < 32:
        cause_tindex = abi.TVMFFIObject.from_address(cell.cause_chain).type_index
        if cause_tindex == abi.kTVMFFIError:
            exc.__cause__ = error_from_handle(rt, cell.cause_chain, _depth + 1)
    return exc


def _kind_of(exc: BaseException) -> str:
    if isinstance(exc, FFIErrorBase):
        return exc.kind
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return "RuntimeError"
