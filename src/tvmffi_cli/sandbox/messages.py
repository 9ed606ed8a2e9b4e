"""The messages between tvmffi and its worker, typed (protocol.py carries them).

    parent -> worker   Config    once, right after the key
    worker -> parent   Hello     once, after confinement
    parent -> worker   Request   one per task
    worker -> parent   Reply     one per Request (ok + result, or a TaskError)

encode(msg) gives the JSON object sent on the channel; decode(Type, obj)
checks one against its type and raises MessageError for anything else (the
parent then treats the worker as tampered with). A streaming task (serve)
speaks its own messages over the same channel after Hello.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, Union, cast

from ..text import JsonDict as JsonDict  # re-exported: the tasks' modules
from ..text import JsonValue as JsonValue
from .kernel import Applied

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[type], type]:
        return lambda cls: cls


_F = TypeVar("_F", bound="Frozen")
#: Held while a Frozen subclass is made a dataclass (two threads may build its first).
_making = threading.Lock()


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class Frozen:
    """Base of the frozen dataclasses of task protocols (call/messages.py):
    a subclass is declared as a dataclass is (annotated fields, defaults,
    ClassVars) and mypy checks it as @dataclass(frozen=True).

    At run time dataclasses makes only its __init__, and only when the class
    is first constructed: it compiles each method it makes (six for a frozen
    class, about a millisecond a class on a loaded machine), and a `tvmffi
    call` defines some fifty message classes but builds a handful in each
    of its two processes (bench/bench_startup.py). The rest is shared: a
    field is set once (by __init__), equality and hash are over the fields,
    as a frozen dataclass's."""

    __slots__ = ()
    _field_names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__", {})
        cls._field_names = tuple(
            n for n, t in own.items() if not str(t).startswith(("ClassVar", "typing.ClassVar"))
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Reached by the first construction of a subclass only: dataclasses
        # gives it its own __init__, which this and every later one calls.
        cls = type(self)
        cls._made()
        cls.__init__(self, *args, **kwargs)

    @classmethod
    def _made(cls) -> None:
        """Make the class a dataclass (its __init__, fields() and replace())."""
        with _making:
            if "__dataclass_fields__" not in cls.__dict__:
                dataclasses.dataclass(cls, repr=False, eq=False)

    @classmethod
    def _of(cls: type[_F], *values: object) -> _F:
        """An instance of every field's value, in order, already checked:
        what a decoder builds by the hundred thousand (a description of a
        long Array), without __init__'s checks of each field set."""
        if len(values) != len(cls._field_names):
            raise TypeError(f"{cls.__name__}: {len(values)} values for {len(cls._field_names)}")
        if "__dataclass_fields__" not in cls.__dict__:
            cls._made()
        obj = object.__new__(cls)
        obj.__dict__.update(zip(cls._field_names, values))
        return obj

    def __setattr__(self, name: str, value: object) -> None:
        if name in self.__dict__ or name not in self._field_names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, n) for n in self._field_names)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Frozen)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((self.__class__, self._values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._field_names)
        return f"{self.__class__.__qualname__}({shown})"


class MessageError(ValueError):
    """An object on the channel is not the message expected there."""


class Fields:
    """One JSON object of a task's messages, read field by field with its type
    checked (call/messages.py): MessageError names the first field that is
    missing or of another type. `what` says whose object it is."""

    __slots__ = ("obj", "what")

    def __init__(self, obj: object, what: str) -> None:
        if not isinstance(obj, dict):
            raise MessageError(f"{what}: not a JSON object")
        self.obj: dict[str, object] = obj
        self.what = what

    def bad(self, key: str, expected: str) -> MessageError:
        got = type(self.obj[key]).__name__ if key in self.obj else "missing"
        return MessageError(f"{self.what}: field {key!r} is {got}, expected {expected}")

    def has(self, key: str) -> bool:
        return key in self.obj

    def text(self, key: str) -> str:
        v = self.obj.get(key)
        if not isinstance(v, str):
            raise self.bad(key, "a string")
        return v

    def text_or_none(self, key: str) -> str | None:
        return None if self.obj.get(key) is None else self.text(key)

    def integer(self, key: str) -> int:
        v = self.obj.get(key)
        # bool is an int to isinstance; an int field takes no bool
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.bad(key, "an integer")
        return v

    def integer_or_none(self, key: str) -> int | None:
        return None if self.obj.get(key) is None else self.integer(key)

    def count(self, key: str) -> int:
        v = self.integer(key)
        if v < 0:
            raise self.bad(key, "a count (>= 0)")
        return v

    def number(self, key: str) -> float:
        v = self.obj.get(key)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise self.bad(key, "a number")
        return v

    def flag(self, key: str, default: bool | None = None) -> bool:
        v = self.obj.get(key, default)
        if not isinstance(v, bool):
            raise self.bad(key, "true or false")
        return v

    def items(self, key: str) -> list[object]:
        v = self.obj.get(key)
        if not isinstance(v, list):
            raise self.bad(key, "a list")
        return v

    def texts(self, key: str) -> tuple[str, ...]:
        v = self.items(key)
        if not all(isinstance(s, str) for s in v):
            raise self.bad(key, "a list of strings")
        return tuple(s for s in v if isinstance(s, str))

    def integers(self, key: str) -> tuple[int, ...]:
        v = self.items(key)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise self.bad(key, "a list of integers")
        return tuple(x for x in v if isinstance(x, int))

    def fields(self, key: str) -> Fields:
        """The JSON object under `key`."""
        if not isinstance(self.obj.get(key), dict):
            raise self.bad(key, "a JSON object")
        return Fields(self.obj[key], f"{self.what}.{key}")


class Config(Frozen):
    """How the worker sets itself up (limits, confinement, scratch)."""

    sandbox: bool
    memory_limit: int | None
    cpu_limit: int | None
    scratch: str
    scratch_limit: int | None
    fault_fd: int
    read: tuple[str, ...]
    write: tuple[str, ...]
    ncpu: int
    #: The read end of the zygote's order pipe (-1: none; sandbox/zygote.py).
    order_fd: int = -1
    #: cgroup.procs of the cgroup v2 the worker's tree joins (-1: none; cgroup.py).
    cgroup_fd: int = -1


class Hello(Frozen):
    """The worker is confined and ready: its pid (in its namespace) and what applied."""

    pid: int
    sandbox: Applied


class Request(Frozen):
    """Run tvmffi_cli.<task>.run(request) in the worker."""

    task: str
    request: JsonDict = field(default_factory=dict)


class TaskError(Frozen):
    """What a task raised. known: a tvmffi error (type names its class)."""

    type: str
    message: str
    exit_code: int
    known: bool
    traceback: str | None = None


class Reply(Frozen):
    ok: bool
    result: Any = None
    error: TaskError | None = None


Message = Union[Config, Hello, Request, Reply]
M = TypeVar("M", Config, Hello, Request, Reply)


def encode(msg: Message) -> JsonDict:
    if isinstance(msg, Hello):
        return {"hello": 1, "pid": msg.pid, "sandbox": msg.sandbox.to_json()}
    if isinstance(msg, Reply):
        if msg.ok:
            return {"ok": True, "result": msg.result}
        err = msg.error or TaskError("InternalError", "no error given", 3, False)
        return {"ok": False, "error": dataclasses.asdict(err)}
    out = dataclasses.asdict(msg)
    if isinstance(msg, Config):
        out["read"], out["write"] = list(msg.read), list(msg.write)
    return out


def _get(obj: JsonDict, key: str, types: tuple[type, ...], what: str) -> Any:
    v = obj.get(key)
    # bool is an int to isinstance; a field typed int takes no bool
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
        raise MessageError(f"{what}: field {key!r} is {type(v).__name__}")
    return v


def _strings(obj: JsonDict, key: str, what: str) -> tuple[str, ...]:
    v = _get(obj, key, (list,), what)
    if not all(isinstance(s, str) for s in v):
        raise MessageError(f"{what}: field {key!r} holds a non-string")
    return tuple(v)


_INT = (int,)
_OPT_INT = (int, type(None))


def _config(obj: JsonDict, what: str) -> Config:
    return Config(
        sandbox=_get(obj, "sandbox", (bool,), what),
        memory_limit=_get(obj, "memory_limit", _OPT_INT, what),
        cpu_limit=_get(obj, "cpu_limit", _OPT_INT, what),
        scratch=_get(obj, "scratch", (str,), what),
        scratch_limit=_get(obj, "scratch_limit", _OPT_INT, what),
        fault_fd=_get(obj, "fault_fd", _INT, what),
        read=_strings(obj, "read", what),
        write=_strings(obj, "write", what),
        ncpu=_get(obj, "ncpu", _INT, what),
        order_fd=_get(obj, "order_fd", _INT, what),
        cgroup_fd=_get(obj, "cgroup_fd", _INT, what),
    )


def _hello(obj: JsonDict, what: str) -> Hello:
    if obj.get("hello") != 1:
        raise MessageError("the worker's first message is not its greeting")
    sb = _get(obj, "sandbox", (dict,), what)
    return Hello(pid=_get(obj, "pid", _INT, what), sandbox=Applied.from_json(sb))


def _request(obj: JsonDict, what: str) -> Request:
    req = _get(obj, "request", (dict, type(None)), what) or {}
    return Request(task=_get(obj, "task", (str,), what), request=req)


def _reply(obj: JsonDict, what: str) -> Reply:
    if _get(obj, "ok", (bool,), what):
        return Reply(ok=True, result=obj.get("result"))
    e = _get(obj, "error", (dict,), what)
    return Reply(
        ok=False,
        error=TaskError(
            type=_get(e, "type", (str,), what),
            message=_get(e, "message", (str,), what),
            exit_code=_get(e, "exit_code", _INT, what),
            known=_get(e, "known", (bool,), what),
            traceback=_get(e, "traceback", (str, type(None)), what),
        ),
    )


_DECODERS: dict[type, Callable[[JsonDict, str], Message]] = {
    Config: _config,
    Hello: _hello,
    Request: _request,
    Reply: _reply,
}


def decode(kind: type[M], obj: object) -> M:
    """obj as a `kind` message; MessageError when it is not one."""
    what = kind.__name__
    if not isinstance(obj, dict):
        raise MessageError(f"{what}: not a JSON object")
    return cast(M, _DECODERS[kind](obj, what))
