"""A library's API as frozen dataclasses, built from an `inspect` report.

`stubs` and `diff` both look at the same things: the `__tvm_ffi_<name>`
exports, the global functions and object types the library registers while
loading, its embedded modules and kernels and the runtime functions it
imports. This module turns the inspect report (a JSON-able dict, static or
loaded) into that model once, with every type schema parsed by the schema
parser into a `TypeRef` tree, so neither command re-reads symbols or JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..abi import typeschema as _schema
from ..abi.structs import STATIC_TYPE_NAMES, kTVMFFIFieldFlagBitMaskWritable
from ..abi.versions import release_of_label
from ..errors import FormatError
from .hosting import LOAD_FAILED  # the inspect engine's words (engine.dynamic_part)
from .report import Report

#: One node of a parsed type schema: the one model of abi/typeschema.py (the
#: same for every release's format), under the name stubs and diff use.
TypeRef = _schema.TypeSpec


def parse_metadata_type(raw: object) -> TypeRef | None:
    """The `type_schema` of a metadata JSON string/object as a TypeRef, or
    None when there is none. FormatError when the metadata is malformed."""
    if raw is None or raw == "":
        return None
    return _schema.parse_metadata(raw)[1]


def _metadata_doc(raw: object) -> str | None:
    try:
        md = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except ValueError:
        return None
    doc = md.get("doc") if isinstance(md, dict) else None
    return doc if isinstance(doc, str) and doc else None


def _arg_names(raw: object) -> tuple[str, ...]:
    """Parameter names when the metadata carries them ("arg_names")."""
    try:
        md = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except ValueError:
        return ()
    names = md.get("arg_names") if isinstance(md, dict) else None
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return tuple(names)
    return ()


@dataclass(frozen=True)
class Func:
    """An export (`__tvm_ffi_<name>`) or a registered global function.
    `type` is its function type (params/ret) when its metadata has one."""

    name: str
    type: TypeRef | None = None
    doc: str | None = None
    arg_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Field:
    name: str
    type: TypeRef | None
    writable: bool
    doc: str | None


@dataclass(frozen=True)
class Method:
    name: str
    type: TypeRef | None
    is_static: bool
    doc: str | None


@dataclass(frozen=True)
class ObjectType:
    key: str
    parent: str | None
    fields: tuple[Field, ...]  # its own, not its ancestors' (see members())
    methods: tuple[Method, ...]
    doc: str | None = None
    #: Members it has as type attributes (abi/symbols.py MEMBER_ATTRS: the
    #: constructor and copy that 0.1.10+ headers register outside the method table).
    attrs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Members:
    """What a caller can use on an object type: its own fields and methods and
    those of its ancestors the library registered (the nearest definition
    wins), and the member type attributes of the type itself."""

    fields: dict[str, Field]
    methods: dict[str, Method]
    attrs: frozenset[str]
    #: name -> the ancestor that defines an inherited field/method
    inherited_from: dict[str, str]


def members(by_key: Mapping[str, ObjectType], key: str) -> Members:
    """The Members of type `key` among `by_key` (an Api's types by key).
    Ancestors outside the library (ffi.Object, a runtime type) add nothing:
    their members are the runtime's."""
    chain: list[ObjectType] = []
    k: str | None = key
    while k is not None and k in by_key and by_key[k] not in chain:
        chain.append(by_key[k])
        k = by_key[k].parent
    fields: dict[str, Field] = {}
    methods: dict[str, Method] = {}
    origin: dict[str, str] = {}
    for t in reversed(chain):  # the root first, so the nearest definition wins
        for f in t.fields:
            fields[f.name] = f
            origin[f"field {f.name}"] = t.key
        for m in t.methods:
            methods[m.name] = m
            origin[f"method {m.name}"] = t.key
    return Members(
        fields,
        methods,
        frozenset(chain[0].attrs) if chain else frozenset(),
        {n: o for n, o in origin.items() if o != key},
    )


@dataclass(frozen=True)
class Kernel:
    """A kernel of an embedded GPU module (name and argument dtypes)."""

    name: str
    arg_types: tuple[str, ...]


@dataclass(frozen=True)
class EmbeddedModule:
    """A module of `__tvm_ffi__library_bin`; `ident` is stable across builds:
    the kind and its occurrence among modules of that kind (cuda#0)."""

    ident: str
    index: int
    kind: str
    kernels: tuple[Kernel, ...]
    payload_type: str | None


@dataclass(frozen=True)
class Api:
    path: str
    mode: str  # "static" | "loaded"
    exports: tuple[Func, ...]
    globals: tuple[Func, ...]
    types: tuple[ObjectType, ...]
    modules: tuple[EmbeddedModule, ...]
    cubins: tuple[str, ...]  # names of __tvm_ffi__cubin_<name> blobs
    runtime_imports: tuple[str, ...]
    unsupported_imports: tuple[str, ...]
    problems: tuple[str, ...]  # type schemas that could not be parsed
    #: The releases it runs on, by symbols (runtime_releases) or, after
    #: --verify-range, by loading too; what that rests on; the releases of the
    #: symbol range where loading failed, with what it said.
    runtime_releases: tuple[str, ...] = ()
    range_basis: str = "symbols"
    range_failures: tuple[tuple[str, str], ...] = ()
    #: Why the loaded view is missing (loading failed), None when it is not.
    load_error: str | None = None
    #: The runtime that hosted it (RuntimeChoice.to_json()), None when not loaded.
    runtime: Mapping[str, Any] | None = None


def _type_or_problem(raw: object, where: str, problems: list[str]) -> TypeRef | None:
    try:
        return parse_metadata_type(raw)
    except FormatError as e:
        problems.append(f"{where}: {e}")
        return None


def _field_type(f: Mapping[str, Any], where: str, problems: list[str]) -> TypeRef | None:
    t = _type_or_problem(f.get("metadata"), where, problems)
    if t is not None:
        return t
    idx = f.get("static_type_index")
    if isinstance(idx, int) and idx in STATIC_TYPE_NAMES and idx != -1:
        return TypeRef(STATIC_TYPE_NAMES[idx])
    return None  # Any, or a dynamic (registered) type without a schema


def _types(rep: Report, problems: list[str]) -> tuple[ObjectType, ...]:
    out = []
    for t in rep.get("types") or ():
        key = str(t.get("type_key"))
        fields = tuple(
            Field(
                str(f.get("name")),
                _field_type(f, f"{key}.{f.get('name')}", problems),
                bool(int(f.get("flags") or 0) & kTVMFFIFieldFlagBitMaskWritable),
                f.get("doc") or None,
            )
            for f in t.get("fields") or ()
        )
        methods = tuple(
            Method(
                str(m.get("name")),
                _type_or_problem(m.get("metadata"), f"{key}.{m.get('name')}", problems),
                bool(m.get("is_static")),
                m.get("doc") or None,
            )
            for m in t.get("methods") or ()
        )
        attrs = tuple(str(a) for a in t.get("attrs") or ())
        out.append(
            ObjectType(key, t.get("parent_type_key"), fields, methods, t.get("doc") or None, attrs)
        )
    return tuple(sorted(out, key=lambda o: o.key))


def _modules(rep: Report) -> tuple[EmbeddedModule, ...]:
    seen: dict[str, int] = {}
    out = []
    for m in rep.get("modules") or ():
        kind = str(m.get("kind"))
        if kind == "_lib":
            continue
        n = seen.get(kind, 0)
        seen[kind] = n + 1
        details = m.get("details")
        kernels: tuple[Kernel, ...] = ()
        payload: str | None = None
        if details is not None and "format" in details:  # a GPU module's
            kernels = tuple(Kernel(f["name"], tuple(f["arg_types"])) for f in details["functions"])
            payload = details.get("payload", {}).get("type")
        out.append(EmbeddedModule(f"{kind}#{n}", int(m.get("index", 0)), kind, kernels, payload))
    return tuple(out)


def load_failure(rep: Report) -> str | None:
    """The message when the report asked for the loaded view but loading failed."""
    for e in rep.get("errors") or ():
        if (
            isinstance(e, Mapping)
            and e.get("where") == "load"
            and str(e.get("message", "")).startswith(LOAD_FAILED)
        ):
            return str(e["message"])
    return None


def from_report(rep: Report) -> Api:
    """The API model of an inspect report (static or loaded). A report whose
    loading failed counts as static: it knows no globals or types."""
    problems: list[str] = []
    exports = []
    for f in rep.get("functions") or ():
        t = TypeRef.from_json(f["type"]) if isinstance(f.get("type"), Mapping) else None
        md = f.get("metadata")
        exports.append(Func(str(f["name"]), t, f.get("doc") or None, _arg_names(md)))
    ginfo: Mapping[str, Any] = rep.get("global_info") or {}
    globals_ = []
    for g in rep.get("globals") or ():
        info = ginfo.get(g) or {}
        raw = info.get("metadata")
        globals_.append(
            Func(
                str(g),
                _type_or_problem(raw, f"global {g}", problems),
                info.get("doc") or _metadata_doc(raw),
                _arg_names(raw),
            )
        )
    check = rep.get("runtime_range_check")
    runs_on = list(check["runs_on"] if check else rep.get("runtime_releases", []))
    failures = [
        (x["release"], x["message"])
        for x in (check["loads"] if check else ())
        if x["status"] == "fails"
    ]
    # Releases auto tried while loading it, and that failed, are known too.
    rt = rep.get("runtime")
    for tried in rt.get("tried", []) if rt else ():
        release = release_of_label(tried["runtime"])
        if release is not None and release in runs_on:
            runs_on.remove(release)
            failures.append((release, tried["error"]))
    basis = str(rep.get("runtime_range_basis") or "symbols")
    if basis == "symbols" and failures:
        basis = "loading and symbols"
    return Api(
        path=str(rep.get("path")),
        mode="static" if load_failure(rep) else str(rep.get("mode")),
        exports=tuple(sorted(exports, key=lambda f: f.name)),
        globals=tuple(sorted(globals_, key=lambda f: f.name)),
        types=_types(rep, problems),
        modules=_modules(rep),
        cubins=tuple(sorted(str(c["name"]) for c in rep.get("cubins") or ())),
        runtime_imports=tuple(rep.get("runtime_imports") or ()),
        unsupported_imports=tuple(rep.get("unsupported_imports") or ()),
        problems=tuple(problems),
        runtime_releases=tuple(str(r) for r in runs_on),
        range_basis=basis,
        range_failures=tuple(failures),
        load_error=load_failure(rep),
        runtime=rep.get("runtime") if not load_failure(rep) else None,
    )


def inspect_library(
    path: str,
    static: bool = False,
    timeout: float = 30.0,
    runtime: str | None = None,
    verify_range: bool = False,
) -> Report:
    """The inspect report of `path` (the one place stubs/diff ask for it)."""
    from .engine import run

    return run(path, static=static, timeout=timeout, runtime=runtime, verify_range=verify_range)


def load_api(
    path: str,
    static: bool = False,
    timeout: float = 30.0,
    runtime: str | None = None,
    verify_range: bool = False,
) -> tuple[Api, Report]:
    rep = inspect_library(
        path, static=static, timeout=timeout, runtime=runtime, verify_range=verify_range
    )
    return from_report(rep), rep


__all__ = [
    "Api",
    "EmbeddedModule",
    "Field",
    "Func",
    "Kernel",
    "Members",
    "Method",
    "ObjectType",
    "TypeRef",
    "from_report",
    "inspect_library",
    "load_api",
    "load_failure",
    "members",
    "parse_metadata_type",
]
