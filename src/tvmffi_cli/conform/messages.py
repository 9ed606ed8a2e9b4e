"""The messages of conform's one-shot worker tasks, typed (sandbox/messages.py
shows the pattern): exit_task (the exit-clean check) and memcheck_task
(--sanitizer memcheck). The probe lane (probe_serve) speaks its own."""

from __future__ import annotations

from typing import Union

from ..sandbox.messages import Fields, Frozen, JsonDict


class ExitRequest(Frozen):
    """Load the library at `path` and release it (None: the runtime alone,
    the control run of exit_check.blame_runtime)."""

    path: str | None

    def to_json(self) -> JsonDict:
        return {"path": self.path}

    @classmethod
    def from_json(cls, obj: object) -> ExitRequest:
        return cls(Fields(obj, "ExitRequest").text_or_none("path"))


class ExitLoaded(Frozen):
    """exit_task's reply: loaded (False: the control run) and the globals
    the library registered."""

    loaded: bool
    globals: tuple[str, ...]

    def to_json(self) -> JsonDict:
        return {"loaded": self.loaded, "globals": list(self.globals)}


class MemcheckRequest(Frozen):
    """Load the library and make function `name`'s CUDA call once."""

    path: str
    name: str
    getters: tuple[str, ...]
    is_global: bool

    def to_json(self) -> JsonDict:
        return {
            "path": self.path,
            "name": self.name,
            "getters": list(self.getters),
            "global": self.is_global,
        }

    @classmethod
    def from_json(cls, obj: object) -> MemcheckRequest:
        f = Fields(obj, "MemcheckRequest")
        return cls(f.text("path"), f.text("name"), f.texts("getters"), f.flag("global"))


class MemcheckSkipped(Frozen):
    """memcheck_task made no call: why (the library did not load, no GPU)."""

    why: str

    def to_json(self) -> JsonDict:
        return {"skipped": self.why}


class MemcheckCalled(Frozen):
    """memcheck_task made the call; the sanitizer's log (the parent reads
    it) says what it found, not the child."""

    def to_json(self) -> JsonDict:
        return {"called": True}


MemcheckReply = Union[MemcheckSkipped, MemcheckCalled]


def decode_memcheck_reply(obj: object) -> MemcheckReply:
    f = Fields(obj, "MemcheckReply")
    if f.has("skipped"):
        return MemcheckSkipped(f.text("skipped"))
    if not f.flag("called"):
        raise f.bad("called", "true")
    return MemcheckCalled()


class Memcheck(Frozen):
    """What --sanitizer memcheck says of one function: `skipped` (why no
    sanitized call ran), `error` (the sanitizer's run failed), else the
    number of errors in its logs, the first one, and the log's head."""

    skipped: str | None = None
    error: str | None = None
    errors: int = 0
    first: str = ""
    report: str = ""
