"""The inspect engine: what a library exports, embeds and imports (no click).

Static facts come from the file's bytes (binary readers, libbin, modformats);
by default the library is also loaded in a child process (tvmffi_cli.sandbox,
task "inspect.task") for metadata, docs, globals and types. `static=True` never
runs any code of the library.

    run(path, static=False, timeout=30.0, runtime=None) -> Report (inspect/report.py)
    static_report(binary) -> Report of an opened Binary
Problems found in the file are collected in report["errors"]; a file that
cannot be read as a library raises InputError/FormatError (from open_binary).
"""

from __future__ import annotations

import os
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

from ..abi.capi import C_API_NAMES as C_API  # (no ctypes: the fast path imports this)
from ..abi.symbols import (
    C_API_PREFIX,
    CTX_PREFIX,
    CUBIN_PREFIX,
    DOC_PREFIX,
    FUNC_PREFIX,
    LIBRARY_BIN,
    LIBRARY_CTX,
    MAIN,
    METADATA_PREFIX,
    RUNTIME_LIBS,
    SPECIAL_PREFIX,
)
from ..abi.versions import BASELINE, builtin_missing, runtime_range
from .report import (
    ContextSymbol,
    Cubin,
    FieldEntry,
    Function,
    GlobalInfo,
    MethodEntry,
    Problem,
    Report,
    TypeEntry,
)

if TYPE_CHECKING:
    from ..binary.cudaarch import DeviceVerdict, SupportJson
    from ..binary.model import Binary, Symbol
    from .messages import CudaDevices, Introspected, TypeInfo

CUBIN_PREVIEW = 4096  # enough of a payload to identify it


def _err(report: Report, where: str, message: str, offset: int | None = None) -> None:
    e: Problem = {"where": where, "message": message}
    if offset is not None:
        e["offset"] = offset
    report["errors"].append(e)


def static_report(binary: Binary) -> Report:
    """Everything `inspect` learns from the bytes of an opened Binary."""
    b = binary
    rep: Report = {
        "path": b.path,
        "format": b.format,
        "arch": b.arch,
        "bits": b.bits,
        "kind": b.kind,
        "soname": b.soname,
        "needed": list(b.needed),
        "mode": "static",
        "functions": [],
        "modules": [],
        "library_bin": None,
        "library_ctx": None,
        "context_symbols": [],
        "cubins": [],
        "cuda": None,
        "globals": [],
        "types": [],
        "runtime_imports": [],
        "unsupported_imports": [],
        "needs_runtime": False,
        "min_runtime_version": BASELINE,
        "min_runtime_reasons": [],
        "max_runtime_version": None,
        "max_runtime_reasons": [],
        "runtime_releases": [],
        # what the range rests on: the exports of each release ("symbols"), or
        # loading the library on them too (--verify-range, inspect/ranges.py)
        "runtime_range_basis": "symbols",
        "errors": [],
        "warnings": list(b.warnings),
    }
    _extra(rep, b)

    syms = b.find_symbols((FUNC_PREFIX, CTX_PREFIX))
    # One pass over the matches: functions, special symbols, getters, context.
    by_name: dict[str, Symbol] = {}
    funcs: list[Symbol] = []
    meta: set[str] = set()
    docs: set[str] = set()
    ctx_syms: list[Symbol] = []
    cubins: list[Symbol] = []
    nf, nm_, nd = len(FUNC_PREFIX), len(METADATA_PREFIX), len(DOC_PREFIX)
    for s in syms:
        n = s.name
        if n in by_name:
            continue
        by_name[n] = s
        if n.startswith(SPECIAL_PREFIX):
            if n.startswith(METADATA_PREFIX):
                meta.add(n[nm_:])
            elif n.startswith(DOC_PREFIX):
                docs.add(n[nd:])
            elif n.startswith(CUBIN_PREFIX):
                cubins.append(s)
        elif n.startswith(FUNC_PREFIX):
            funcs.append(s)
        else:
            ctx_syms.append(s)
    funcs.sort(key=attrgetter("name"))
    main = by_name.get(MAIN)
    add_function = rep["functions"].append
    for s in funcs:
        name = s.name[nf:]
        f: Function = {
            "name": name,
            "symbol": s.name,
            "address": s.value,
            "size": s.size,
            "kind": s.kind,
            "binding": s.binding,
            "has_metadata": name in meta,
            "has_doc": name in docs,
        }
        if s is main:
            f["aliases"] = sorted(
                o.name[len(FUNC_PREFIX) :]
                for o in funcs
                if o is not s and o.value == s.value and o.section == s.section
            )
        if s.kind != "code":
            rep["warnings"].append(f"{s.name} is not in a code section ({s.section})")
        add_function(f)
    getters = meta | docs
    for n in sorted(getters - {s.name[nf:] for s in funcs} if getters else ()):
        rep["warnings"].append(f"metadata/doc getter for {n} but no {FUNC_PREFIX}{n} function")

    # Imports: what the hosting libtvm_ffi.so must provide (C functions and
    # tvm::ffi C++ symbols no sibling library defines), and which of them the
    # builtin runtime lacks (abi/release_exports.py, one table for every verdict).
    # Loading it loads its siblings (DT_NEEDED found next to it or on its
    # RUNPATH): their runtime imports count for hosting it and for its range.
    from ..binary.deps import runtime_needs

    needs = runtime_needs(b)
    rt_imports = list(needs.closure)
    rep["runtime_imports"] = [n for n in needs.own if n.startswith(C_API_PREFIX)]
    rep["unsupported_imports"] = list(builtin_missing(rt_imports))
    rep["needs_runtime"] = bool(
        rt_imports or any(n.rsplit("/", 1)[-1].lower().startswith(RUNTIME_LIBS) for n in b.needed)
    )
    if needs.siblings:
        rep["siblings"] = [os.path.basename(p) for p in needs.siblings]

    # Context symbols: writable pointers the loader fills with C API entries.
    for s in sorted(ctx_syms, key=lambda s: s.name):
        api = s.name[2:]
        c: ContextSymbol = {
            "name": s.name,
            "api": api,
            "known": api in C_API,
            "address": s.value,
            "size": s.size,
            "section": s.section,
            "writable": s.writable,
        }
        rep["context_symbols"].append(c)
        if not s.writable and b.kind != "object":
            _err(
                rep,
                s.name,
                f"context symbol {s.name} is in read-only section {s.section}; "
                f"the loader cannot store {api} there",
            )
        if not c["known"]:
            rep["warnings"].append(f"context symbol {s.name} names no C API function")

    # The releases whose runtime exports every import (and context symbol's API).
    rr = runtime_range(rt_imports + [c["api"] for c in rep["context_symbols"]])
    rep["min_runtime_version"] = rr.min_version
    rep["min_runtime_reasons"] = [f"{n} needs {rr.min_version}" for n in rr.min_because]
    rep["max_runtime_version"] = rr.max_version
    rep["max_runtime_reasons"] = [f"{n} is gone after {rr.max_version}" for n in rr.max_because]
    rep["runtime_releases"] = list(rr.ok_releases)

    # __tvm_ffi__library_ctx: a writable void* the loader points at the module.
    ctx = by_name.get(LIBRARY_CTX)
    if ctx is not None:
        rep["library_ctx"] = {
            "address": ctx.value,
            "size": ctx.size,
            "section": ctx.section,
            "writable": ctx.writable,
        }
        if not ctx.writable and b.kind != "object":
            _err(rep, LIBRARY_CTX, f"{LIBRARY_CTX} is in read-only section {ctx.section}")
        if ctx.size and ctx.size != b.bits // 8:
            _err(
                rep,
                LIBRARY_CTX,
                f"{LIBRARY_CTX} is {ctx.size} bytes, expected a {b.bits // 8}-byte pointer",
            )

    # Embedded CUDA binaries between __tvm_ffi__cubin_<name> and ..._end.
    _cubins(b, by_name, rep, cubins)

    # __tvm_ffi__library_bin: modules and their import tree.
    lbs = by_name.get(LIBRARY_BIN)
    if lbs is not None:
        from ..binary import libbin

        try:
            data = b.read_symbol_bytes(lbs)
        except Exception as e:  # FormatError: e.g. in .bss
            _err(rep, LIBRARY_BIN, str(e))
            data = None
        if data is not None:
            lb = libbin.decode(data, detail_limit=libbin.detail_limit())
            summary = lb.summary()
            rep["library_bin"] = {
                "address": lbs.value,
                "symbol_size": lb.symbol_size,
                "nbytes": lb.nbytes,
                "root": lb.root,
                "section": lbs.section,
                "module_count": summary["module_count"],
                "modules_listed": summary["modules_listed"],
                "truncated": summary["truncated"],
                "kinds": summary["kinds"],
            }
            rep["modules"] = [m.to_json() for m in lb.modules]
            for problem in lb.errors:
                _err(rep, LIBRARY_BIN, problem["message"], problem["offset"])
            if lb.module_count and "_lib" not in lb.kinds:
                rep["warnings"].append(
                    "library_bin has no _lib entry: the library's own "
                    "functions are not part of its module tree"
                )
    # CUDA code nvcc linked in: the fat binaries of .nv_fatbin / __nv_relfatbin.
    from ..binary import fatbin

    code = fatbin.read(b)
    rep["cuda"] = None if code is None else code.to_json()
    for fault in code.problems if code is not None else ():
        _err(rep, fault.where, fault.message, fault.offset)
    # Last: readers note some problems only while reading symbols.
    for p in b.problems:
        _err(rep, "binary", p)
    return rep


def _extra(rep: Report, b: Binary) -> None:
    """The format's own keys (Binary.extra), in the order the reader found them."""
    for key, value in b.extra.items():
        if key == "runpath":
            rep["runpath"] = value
        elif key == "rpath":
            rep["rpath"] = value
        elif key == "fat_slices":
            rep["fat_slices"] = value
        elif key == "imports_by_dll":
            rep["imports_by_dll"] = value


def _cubins(b: Binary, by_name: dict[str, Symbol], rep: Report, candidates: list[Symbol]) -> None:
    if not candidates:
        return
    from ..binary import modformats

    for s in sorted(candidates, key=lambda s: s.name):
        n = s.name
        if n.endswith("_end") and n[:-4] in by_name:
            continue
        name = n[len(CUBIN_PREFIX) :]
        end = by_name.get(n + "_end")
        c: Cubin = {"name": name, "symbol": n, "address": s.value, "size": None}
        if end is not None and end.section == s.section and end.value >= s.value:
            size = end.value - s.value
        elif end is not None:
            _err(rep, n, f"{n}_end is not after {n} in the same section")
            size = s.size or 0
        else:
            size = s.size or 0
            if not size:
                _err(rep, n, f"{n} has no size and no {n}_end symbol")
        c["size"] = size
        try:
            off = b.file_offset(s)
            if off is None:
                raise ValueError
            sec = s._sec or b.section_for(s.value)
            if sec is None:
                raise ValueError
            avail = min(sec.offset + sec.filesize, len(b.data)) - off
            if size > avail:
                _err(rep, n, f"{n} claims {size} bytes but its section holds only {avail}")
            head = bytes(b.data[off : off + max(0, min(size, avail, CUBIN_PREVIEW))])
            p = modformats.read_payload(head)
            # the keys of Payload.to_json(), in its order
            c["type"] = p.type
            if p.e_machine is not None:
                c["e_machine"] = p.e_machine
            if p.arch is not None:
                c["arch"] = p.arch
        except ValueError:
            _err(rep, n, f"{n} has no bytes in the file")
        rep["cubins"].append(c)


def cuda_support(rep: Report, cc: tuple[int, int]) -> SupportJson | None:
    """Whether a device of compute capability cc = (major, minor) runs the
    CUDA code of the report: stored as rep["cuda"]["device"] and returned
    (None when the library has no fat binary). Pure: the caller queries the
    device."""
    from ..binary import fatbin

    cuda = rep.get("cuda")
    if cuda is None:
        return None
    device = fatbin.support_from_json(cuda, cc).to_json()
    cuda["device"] = device
    return device


def _merge_cuda_devices(rep: Report, found: CudaDevices | None) -> None:
    """The worker's answer to Introspect.cuda_devices: each device gets the
    verdict of cuda_support; "device" is cuda:0's."""
    cuda = rep.get("cuda")
    if cuda is None or found is None:
        return
    verdicts: list[DeviceVerdict] = []
    for d in found.devices:
        # cuda_support also sets cuda["device"]: the key keeps its place in the document
        v = cuda_support(rep, d.compute_capability)
        assert v is not None  # rep has CUDA code
        verdicts.append(
            {
                "compute_capability": v["compute_capability"],
                "verdict": v["verdict"],
                "arch": v["arch"],
                "reason": v["reason"],
                "device": f"cuda:{d.ordinal}",
                "name": d.name[:256],
            }
        )
    cuda["devices"] = verdicts
    cuda["device"] = verdicts[0] if verdicts else None
    cuda["devices_note"] = None if verdicts else (found.unavailable or "no CUDA device")[:512]


def _host_loadable(binary: Binary) -> bool:
    import platform

    host = platform.machine().lower()
    host = {"amd64": "x86_64", "arm64": "aarch64"}.get(host, host)
    return binary.format == "elf" and binary.arch == host and binary.kind == "shared"


def merge_dynamic(rep: Report, result: Introspected) -> None:
    """Fold the child's Introspected reply into the static report."""
    from ..abi import typeschema as schema
    from ..errors import FormatError

    dyn = {d.name: d for d in result.functions}
    for f in rep["functions"]:
        d = dyn.get(f["name"])
        if d is None:
            continue
        if d.doc is not None:
            f["doc"] = d.doc
        raw = d.metadata_raw
        md = d.metadata
        if md is not None or raw is not None:
            try:
                parsed, spec = schema.parse_metadata(raw if raw is not None else md)
                f["metadata"] = parsed
                if spec is not None:
                    sig = spec.signature(f["name"])  # FormatError: not a function type
                    if spec.is_function:
                        f["signature"] = sig
                    f["type"] = spec.to_json()
            except FormatError as e:
                f["metadata"] = md if isinstance(md, dict) else {"raw": raw}
                _err(rep, f["symbol"], f"metadata of {f['name']}: {e}")
    rep["globals"] = list(result.globals)
    rep["types"] = [_type_entry(rep, t) for t in result.types]
    if result.global_info:
        infos: dict[str, GlobalInfo] = {}
        for g in result.global_info:
            where = f"global {g.name}"
            infos[g.name] = (
                {"metadata": None}
                if g.metadata is None
                else _decoded_metadata(rep, g.metadata, where)
            )
        rep["global_info"] = infos
    if result.module is not None:
        rep["loaded_module"] = result.module
    _merge_cuda_devices(rep, result.cuda_devices)
    for problem in result.errors:
        _err(rep, "load", problem)
    rep["warnings"].extend(result.warnings)


def _type_entry(rep: Report, t: TypeInfo) -> TypeEntry:
    """A registered type as the report shows it, its members' metadata
    decoded (fields first, then methods: the order of the errors)."""
    fields: list[FieldEntry] = []
    for f in t.fields:
        field: FieldEntry = {
            "name": f.name,
            "static_type_index": f.static_type_index,
            "flags": f.flags,
            "doc": f.doc,
            "metadata": None,
        }
        _member_metadata(rep, field, f.metadata, f"{t.type_key}.{f.name}")
        fields.append(field)
    methods: list[MethodEntry] = []
    for m in t.methods:
        method: MethodEntry = {
            "name": m.name,
            "doc": m.doc,
            "is_static": m.is_static,
            "metadata": None,
        }
        _member_metadata(rep, method, m.metadata, f"{t.type_key}.{m.name}")
        methods.append(method)
    return {
        "type_key": t.type_key,
        "type_index": t.type_index,
        "parent_type_key": t.parent_type_key,
        "fields": fields,
        "methods": methods,
        "doc": t.doc,
        "attrs": list(t.attrs),
    }


def _member_metadata(rep: Report, entry: GlobalInfo, raw: str | None, where: str) -> None:
    if raw is None:
        return
    decoded = _decoded_metadata(rep, raw, where)
    entry["metadata"] = decoded["metadata"]
    if "type" in decoded:
        entry["type"] = decoded["type"]


def _decoded_metadata(rep: Report, raw: str, where: str) -> GlobalInfo:
    """The metadata text of a global, field or method as the JSON object it
    holds (as for functions), plus "type": its type schema in the one model
    whichever release wrote it. Text that is not a JSON object stays as
    {"raw": text} and is reported."""
    from ..abi import typeschema as schema
    from ..errors import FormatError

    try:
        out: GlobalInfo = {"metadata": schema.decode_metadata(raw)}
    except FormatError as e:
        _err(rep, where, f"metadata: {e}")
        return {"metadata": {"raw": raw}}
    try:
        spec = schema.parse_metadata(out["metadata"])[1]
    except FormatError as e:
        _err(rep, where, f"type schema: {e}")
        return out
    if spec is not None:
        out["type"] = spec.to_json()
    return out


def dynamic_part(
    rep: Report,
    binary: Binary,
    path: str | os.PathLike[str],
    timeout: float,
    runtime: str | os.PathLike[str] | None = None,
) -> None:
    from ..binary import require_library
    from ..errors import InputError

    require_library(binary)  # a program or object file: the user's mistake (exit 2)
    if not _host_loadable(binary):
        rep["warnings"].append(
            f"not loadable on this host ({binary.format} {binary.arch} "
            f"{binary.kind}); static results only"
        )
        return
    try:
        from ..sandbox import process as sandbox
    except ImportError:
        rep["warnings"].append(
            "loading is not available in this build (no sandbox); static results only"
        )
        return
    rep["mode"] = "loaded"
    from ..binary.deps import load_read_paths
    from .messages import Introspect, decode_introspected, encode

    try:
        reads = load_read_paths(path)
        # Which GPUs can run the library's CUDA code: asked in the worker
        # (CUDA never starts in tvmffi's own process).
        cuda_devices = rep.get("cuda") is not None
        if cuda_devices:
            from ..ffi.cuda import driver_read_paths

            reads += driver_read_paths()
        if runtime is None:
            from ..ffi import paths

            paths.runtime_library()  # a bad TVMFFI_RUNTIME is exit 2, judged before any load
        req = Introspect(str(path), None if runtime is None else str(runtime), cuda_devices)
        got = cast(Any, sandbox).run_task(
            "inspect.task", encode(req), timeout=timeout, runtime=runtime, read_paths=reads
        )
        # The worker is not trusted: a reply that does not decode is a failed
        # load (MessageError, reported below), never read in part.
        result = decode_introspected(got)
    except InputError:
        # The child could not load the file or the runtime it was given (not a
        # loadable library, bad --runtime/TVMFFI_RUNTIME): what the user gave
        # is wrong (exit 2), as in `call`; a crash or hang stays a failure (1).
        raise
    except sandbox.ChildCrashed as e:
        from ..ffi.hosts import library_message

        said = library_message(e.stderr or "")
        # Starts with the words of the other load failures (inspect/api.py's LOAD_FAILED).
        _err(
            rep,
            "load",
            f"loading the library failed: it crashed the worker process "
            f"({e.signal or f'exit status {e.returncode}'}) while loading"
            + (f": {said}" if said else ""),
        )
        return
    except Exception as e:  # ChildTimeout / task errors: report, keep static
        kind = type(e).__name__
        _err(rep, "load", f"loading the library failed ({kind}: {e})")
        return
    merge_dynamic(rep, result)


def run(
    path: str | os.PathLike[str],
    static: bool = False,
    timeout: float = 30.0,
    runtime: str | os.PathLike[str] | None = None,
    verify_range: bool = False,
) -> Report:
    """The report of `tvmffi inspect` (the --json document, schemas/inspect.schema.json):
    static facts, plus what loading in a child process shows unless static.
    runtime: a --runtime value (auto, builtin, official or a path; None is
    auto); when auto's runtime cannot load the library, the next one at hand
    is tried (inspect/hosting.py). The report's "runtime" says which runtime
    hosted the library (None when nothing was loaded). verify_range: also load
    it on every release of its symbol range (fetched when not at hand) and
    report where it fails (`runtime_range_check`)."""
    from ..binary import open_binary

    b = open_binary(path)
    try:
        rep = static_report(b)
    finally:
        b.close()
    rep["runtime"] = None
    if not static and _host_loadable(b):
        from ..ffi.hosts import choose_runtime
        from . import hosting

        choice = choose_runtime(None if runtime is None else os.fspath(runtime), path)
        rep = hosting.load(rep, b, path, timeout, choice, dynamic_part)
    elif not static:
        dynamic_part(rep, b, path, timeout, runtime)
    if verify_range and _host_loadable(b):
        from . import hosting

        hosting.check_range(rep, path, timeout, fetch_missing=True)
    return rep
