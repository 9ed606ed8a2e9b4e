"""The report of `tvmffi inspect`, typed: the --json document itself
(schemas/inspect.schema.json), key by key, so that mypy checks every reader
(render/inspect.py, inspect/api.py, extract, wheel, api.py) against what the
engine writes. It stays a JSON object, not a dataclass: the engine builds it
in the order of the document's keys, and every --json prints it as it is.

Keys the schema makes optional are in the `total=False` halves. Objects whose
content is the library's or the runtime's own (metadata, type info, the
module description) stay free-form JSON objects.
"""

from __future__ import annotations

from typing import Any, Optional, TypedDict, cast

from ..binary.fatbin_model import CudaJson
from ..binary.libbin import ModuleJson, Summary
from ..text import JsonValue
from .ranges import RangeCheckJson


class _ProblemKeys(TypedDict):
    where: str
    message: str


class Problem(_ProblemKeys, total=False):
    """One problem found in the file or while loading it (report["errors"])."""

    offset: int


class _FunctionKeys(TypedDict):
    name: str
    symbol: str
    address: int
    size: Optional[int]
    kind: str
    binding: str
    has_metadata: bool
    has_doc: bool


class Function(_FunctionKeys, total=False):
    """An exported __tvm_ffi_<name>; loading adds doc, metadata, signature, type."""

    aliases: list[str]
    doc: str
    metadata: dict[str, Any]  # free-form: the library's metadata JSON
    signature: str
    type: dict[str, Any]  # abi/typeschema.TypeSpec.to_json()


class ContextSymbol(TypedDict):
    name: str
    api: str
    known: bool
    address: int
    size: Optional[int]
    section: Optional[str]
    writable: bool


class LibraryCtx(TypedDict):
    address: int
    size: Optional[int]
    section: Optional[str]
    writable: bool


class LibraryBin(Summary):
    """__tvm_ffi__library_bin: where it is, its size, and LibraryBin.summary()."""

    address: int
    symbol_size: int
    nbytes: Optional[int]
    root: Optional[int]
    section: Optional[str]


class _CubinKeys(TypedDict):
    name: str
    symbol: str
    address: int
    size: Optional[int]


class Cubin(_CubinKeys, total=False):
    """__tvm_ffi__cubin_<name>, and what its payload is (modformats.Payload)."""

    type: str
    e_machine: int
    arch: str


class _GlobalInfoKeys(TypedDict):
    metadata: Optional[dict[str, Any]]  # free-form: the library's metadata JSON


class GlobalInfo(_GlobalInfoKeys, total=False):
    """The metadata of a global (report["global_info"]), a field or a
    method, and the type schema it holds."""

    type: dict[str, Any]  # abi/typeschema.TypeSpec.to_json()


class FieldEntry(GlobalInfo):
    name: str
    static_type_index: int
    flags: int
    doc: Optional[str]


class MethodEntry(GlobalInfo):
    name: str
    doc: Optional[str]
    is_static: bool


class TypeEntry(TypedDict):
    """A type the library registered while loading (report["types"])."""

    type_key: str
    type_index: int
    parent_type_key: Optional[str]
    fields: list[FieldEntry]
    methods: list[MethodEntry]
    doc: Optional[str]
    attrs: list[str]


class TriedRuntime(TypedDict):
    runtime: str
    error: str


class _RuntimeKeys(TypedDict):
    kind: str
    path: str
    requested: str
    instrumented: bool
    reason: str
    missing_in_builtin: list[str]
    version: Optional[str]
    release: Optional[str]
    missing: list[str]


class Runtime(_RuntimeKeys, total=False):
    """ffi/hosts.RuntimeChoice.to_json(): the libtvm_ffi.so that hosted it."""

    tried: list[TriedRuntime]


class FatSlice(TypedDict):
    """One architecture of a Mach-O universal binary (binary/macho.py)."""

    arch: str
    offset: int
    size: int


class _ReportKeys(TypedDict):
    path: str
    format: str
    arch: str
    bits: int
    kind: str
    soname: Optional[str]
    needed: list[str]
    mode: str
    functions: list[Function]
    modules: list[ModuleJson]
    library_bin: Optional[LibraryBin]
    library_ctx: Optional[LibraryCtx]
    context_symbols: list[ContextSymbol]
    cubins: list[Cubin]
    cuda: Optional[CudaJson]
    globals: list[str]
    types: list[TypeEntry]
    runtime_imports: list[str]
    unsupported_imports: list[str]
    needs_runtime: bool
    min_runtime_version: str
    min_runtime_reasons: list[str]
    max_runtime_version: Optional[str]
    max_runtime_reasons: list[str]
    runtime_releases: list[str]
    runtime_range_basis: str
    errors: list[Problem]
    warnings: list[str]


class Report(_ReportKeys, total=False):
    """The --json document of `tvmffi inspect` (less the keys every command
    has, cli/jsonout.py). The format's own keys (runpath, rpath, fat_slices,
    imports_by_dll: Binary.extra) follow the common ones."""

    runpath: list[str]
    rpath: list[str]
    fat_slices: list[FatSlice]
    imports_by_dll: dict[str, list[str]]
    siblings: list[str]
    runtime: Optional[Runtime]
    runtime_range_check: RangeCheckJson
    global_info: dict[str, GlobalInfo]
    loaded_module: dict[str, Any]  # free-form: the runtime's module description


def as_json(doc: Report | Runtime | None) -> JsonValue:
    """The report (or its runtime object) as the JSON value it is: the
    TypedDicts above only name its keys, so no conversion is needed."""
    return cast(JsonValue, doc)
