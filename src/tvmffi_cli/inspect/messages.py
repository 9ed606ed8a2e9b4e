"""The protocol of `tvmffi inspect` between the parent and its sandboxed
worker (tasks inspect.task and inspect.load_task), typed:

    parent -> worker   Introspect    load the library, report what it provides
    worker -> parent   Introspected  its functions' getters, globals, types, module
    parent -> worker   LoadOnly      load it only (range verification, inspect/loads.py)
    worker -> parent   Loaded | LoadFailed

encode(msg) gives the JSON object of any of them; decode_introspect,
decode_introspected, decode_load_only and decode_load_reply read one back
and raise MessageError for anything else: the worker is not trusted, so the
parent refuses a reply that does not decode (the engine reports it as a
failed load) rather than reading what it can of it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional, Tuple, Union, cast, final

from ..sandbox.messages import Fields, Frozen, JsonDict, JsonValue, MessageError

# ---------------------------------------------------------------------------
# requests


class Introspect(Frozen):
    """Load `path` on `runtime` (None: tvmffi's) and report what it provides;
    cuda_devices: also list the GPUs, asked before the library loads."""

    path: str
    runtime: Optional[str] = None
    cuda_devices: bool = False


class LoadOnly(Frozen):
    """Load `path` on `runtime` and say whether it loaded, nothing more."""

    path: str
    runtime: Optional[str] = None


# ---------------------------------------------------------------------------
# replies


class FunctionInfo(Frozen):
    """What the getters of one exported function returned (capped, task.py):
    metadata_raw is None when there is none or it was cut; metadata is that
    text parsed (None when it is not JSON): any JSON value the library chose."""

    name: str
    metadata_raw: Optional[str]
    metadata: JsonValue
    doc: Optional[str]


class GlobalMeta(Frozen):
    """ffi.GetGlobalFuncMetadata's text for one registered global (None: none)."""

    name: str
    metadata: Optional[str]


class CudaDevice(Frozen):
    ordinal: int
    name: str
    compute_capability: Tuple[int, int]


class CudaDevices(Frozen):
    """The GPUs the worker sees, or why there are none (`unavailable`)."""

    devices: Tuple[CudaDevice, ...] = ()
    unavailable: Optional[str] = None


class FieldInfo(Frozen):
    """A field of a registered type (ffi/typeinfo.py): metadata is its text."""

    name: str
    static_type_index: int
    flags: int
    doc: Optional[str]
    metadata: Optional[str]


class MethodInfo(Frozen):
    name: str
    doc: Optional[str]
    is_static: bool
    metadata: Optional[str]


class TypeInfo(Frozen):
    """A type the library registered (ffi/typeinfo.py), and which of
    abi.symbols.MEMBER_ATTRS it has as type attributes."""

    type_key: str
    type_index: int
    parent_type_key: Optional[str]
    fields: Tuple[FieldInfo, ...]
    methods: Tuple[MethodInfo, ...]
    doc: Optional[str]
    attrs: Tuple[str, ...]


@final
class Introspected(Frozen):
    """The reply to Introspect. module is the runtime's own JSON
    (tvmffi_rt_module_describe), which the report carries as it is: a
    free-form object, a JSON boundary."""

    functions: Tuple[FunctionInfo, ...]
    globals: Tuple[str, ...]
    types: Tuple[TypeInfo, ...]
    global_info: Tuple[GlobalMeta, ...]
    module: Optional[dict[str, Any]]  # free-form: the runtime's module JSON
    errors: Tuple[str, ...]
    warnings: Tuple[str, ...]
    cuda_devices: Optional[CudaDevices] = None


@final
class Loaded(Frozen):
    """The library loaded: how many globals and types it registered."""

    globals: int
    types: int
    status: ClassVar[str] = "loaded"


@final
class LoadFailed(Frozen):
    """The loader refused it: a missing symbol or dependency, an error raised
    while registering."""

    message: str
    status: ClassVar[str] = "load_failed"


Message = Union[Introspect, LoadOnly, Introspected, Loaded, LoadFailed]

# ---------------------------------------------------------------------------
# the encoder


def encode(msg: Message) -> JsonDict:
    """The JSON object of a message (the decoders below read it)."""
    if isinstance(msg, Introspect):
        return {"path": msg.path, "runtime": msg.runtime, "cuda_devices": msg.cuda_devices}
    if isinstance(msg, LoadOnly):
        return {"path": msg.path, "runtime": msg.runtime}
    if isinstance(msg, Loaded):
        return {"status": msg.status, "globals": msg.globals, "types": msg.types}
    if isinstance(msg, LoadFailed):
        return {"status": msg.status, "message": msg.message}
    cuda = msg.cuda_devices
    return {
        "functions": [
            {"name": f.name, "metadata_raw": f.metadata_raw, "metadata": f.metadata, "doc": f.doc}
            for f in msg.functions
        ],
        "globals": list(msg.globals),
        "types": [_type_json(t) for t in msg.types],
        "global_info": [{"name": g.name, "metadata": g.metadata} for g in msg.global_info],
        "module": msg.module,
        "errors": list(msg.errors),
        "warnings": list(msg.warnings),
        "cuda_devices": None
        if cuda is None
        else {
            "devices": [
                {
                    "ordinal": d.ordinal,
                    "name": d.name,
                    "compute_capability": list(d.compute_capability),
                }
                for d in cuda.devices
            ],
            "unavailable": cuda.unavailable,
        },
    }


def _type_json(t: TypeInfo) -> JsonDict:
    return {
        "type_key": t.type_key,
        "type_index": t.type_index,
        "parent_type_key": t.parent_type_key,
        "fields": [
            {
                "name": f.name,
                "static_type_index": f.static_type_index,
                "flags": f.flags,
                "doc": f.doc,
                "metadata": f.metadata,
            }
            for f in t.fields
        ],
        "methods": [
            {"name": m.name, "doc": m.doc, "is_static": m.is_static, "metadata": m.metadata}
            for m in t.methods
        ],
        "doc": t.doc,
        "attrs": list(t.attrs),
    }


# ---------------------------------------------------------------------------
# the decoders


def _type_info(t: Fields) -> TypeInfo:
    return TypeInfo(
        t.text("type_key"),
        t.integer("type_index"),
        t.text_or_none("parent_type_key"),
        tuple(
            FieldInfo(
                f.text("name"),
                f.integer("static_type_index"),
                f.integer("flags"),
                f.text_or_none("doc"),
                f.text_or_none("metadata"),
            )
            for f in _objects(t, "fields")
        ),
        tuple(
            MethodInfo(
                m.text("name"),
                m.text_or_none("doc"),
                m.flag("is_static"),
                m.text_or_none("metadata"),
            )
            for m in _objects(t, "methods")
        ),
        t.text_or_none("doc"),
        t.texts("attrs"),
    )


def decode_introspect(obj: object) -> Introspect:
    f = Fields(obj, "request")
    return Introspect(f.text("path"), f.text_or_none("runtime"), f.flag("cuda_devices", False))


def decode_load_only(obj: object) -> LoadOnly:
    f = Fields(obj, "request")
    return LoadOnly(f.text("path"), f.text_or_none("runtime"))


def decode_load_reply(obj: object) -> Union[Loaded, LoadFailed]:
    f = Fields(obj, "reply")
    status = f.text("status")
    if status == "loaded":
        return Loaded(f.count("globals"), f.count("types"))
    if status == "load_failed":
        return LoadFailed(f.text("message"))
    raise MessageError(f"reply: status {status[:40]!r} is not a reply to a load")


def _objects(f: Fields, key: str) -> Tuple[Fields, ...]:
    return tuple(Fields(x, f"{f.what}.{key}[{i}]") for i, x in enumerate(f.items(key)))


def decode_introspected(obj: object) -> Introspected:
    """The worker's reply to Introspect; MessageError names what is wrong."""
    f = Fields(obj, "reply")
    functions = tuple(
        FunctionInfo(
            e.text("name"),
            e.text_or_none("metadata_raw"),
            cast(JsonValue, e.obj.get("metadata")),  # decoded JSON: a JSON value
            e.text_or_none("doc"),
        )
        for e in _objects(f, "functions")
    )
    types = tuple(_type_info(t) for t in _objects(f, "types"))
    info = tuple(
        GlobalMeta(g.text("name"), g.text_or_none("metadata")) for g in _objects(f, "global_info")
    )
    module = None if f.obj.get("module") is None else f.fields("module").obj
    cuda = None
    if f.obj.get("cuda_devices") is not None:
        c = f.fields("cuda_devices")
        devices = []
        for d in _objects(c, "devices"):
            cc = d.integers("compute_capability")
            if len(cc) != 2:
                raise d.bad("compute_capability", "[major, minor]")
            devices.append(CudaDevice(d.integer("ordinal"), d.text("name"), (cc[0], cc[1])))
        cuda = CudaDevices(tuple(devices), c.text_or_none("unavailable"))
    return Introspected(
        functions,
        f.texts("globals"),
        types,
        info,
        module,
        f.texts("errors"),
        f.texts("warnings"),
        cuda,
    )
