"""The messages of conform's one-shot worker tasks, typed (sandbox/messages.py
shows the pattern): exit_task (the exit-clean check) and memcheck_task
(--sanitizer memcheck). The probe lane (probe_serve) speaks its own."""

from __future__ import annotations

from typing import Union

from ..sandbox.messages import Fields, Frozen, JsonDict, JsonValue, MessageError


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


class FieldLayout(Frozen):
    """One reflected field of a registered type: [name, offset, size,
    alignment] on the probe's event stream."""

    name: str
    offset: int
    size: int
    alignment: int

    def to_json(self) -> JsonValue:
        return [self.name, self.offset, self.size, self.alignment]

    @classmethod
    def from_json(cls, obj: object, what: str) -> FieldLayout:
        if not (isinstance(obj, list) and len(obj) == 4 and isinstance(obj[0], str)):
            raise MessageError(f"{what}: not [name, offset, size, alignment]")
        nums = obj[1:]
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in nums):
            raise MessageError(f"{what}: offset, size and alignment must be integers")
        return cls(obj[0], *nums)


class TypeLayout(Frozen):
    """The layout of one object type a library registered while loading
    (probe_types.py, child side; checks_types.py judges it): its fields,
    its ancestors' and the object's size when it registered one."""

    key: str
    total_size: int | None
    fields: tuple[FieldLayout, ...]
    inherited: tuple[FieldLayout, ...]

    def to_json(self) -> JsonDict:
        return {
            "key": self.key,
            "total_size": self.total_size,
            "fields": [f.to_json() for f in self.fields],
            "inherited": [f.to_json() for f in self.inherited],
        }

    @classmethod
    def from_json(cls, obj: object) -> TypeLayout:
        f = Fields(obj, "TypeLayout")
        key = f.text("key")

        def spans(name: str) -> tuple[FieldLayout, ...]:
            return tuple(
                FieldLayout.from_json(x, f"type {key} {name}[{i}]")
                for i, x in enumerate(f.items(name))
            )

        return cls(key, f.integer_or_none("total_size"), spans("fields"), spans("inherited"))


def decode_type_layouts(obj: object) -> tuple[TypeLayout, ...]:
    """The probe's list of type layouts; MessageError for anything else."""
    if not isinstance(obj, list):
        raise MessageError("type layouts: not a list")
    return tuple(TypeLayout.from_json(t) for t in obj)
