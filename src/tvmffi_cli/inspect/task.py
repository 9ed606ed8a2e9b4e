"""Child-side task of `tvmffi inspect`: load the library and report what it
provides at run time.

request: messages.Introspect; reply: messages.Introspected:
  functions    each export's metadata and doc getters' text
  globals      names registered while loading, sorted
  global_info  each global's metadata text (when the runtime has
               ffi.GetGlobalFuncMetadata)
  types        [{"type_key", "type_index", "parent_type_key",
                 "fields": [{"name", "static_type_index", "flags", "doc"}],
                 "methods": [{"name", "doc", "is_static"}],
                 "attrs": [abi.symbols.MEMBER_ATTRS it has as type attributes]}]
  module       tvmffi_rt_module_describe JSON, or None
  errors, warnings

Text from the library is capped (METADATA_CAP, DOC_CAP, NAME_CAP characters)
with a warning naming the cap, so a 100 MiB metadata string costs the parent
nothing and the whole step stays within --timeout.
"""

from __future__ import annotations

import json
from typing import Any, cast

from ..sandbox.messages import JsonDict
from .messages import (
    CudaDevice,
    CudaDevices,
    FieldInfo,
    FunctionInfo,
    GlobalMeta,
    Introspected,
    MethodInfo,
    TypeInfo,
    decode_introspect,
    encode,
)

METADATA_CAP = 1 << 20
DOC_CAP = 64 << 10
NAME_CAP = 1024
LIST_CAP = 100_000


def _cap(text: Any, limit: int, what: str, warnings: list[str]) -> tuple[Any, bool]:
    if isinstance(text, str) and len(text) > limit:
        warnings.append(f"{what} of {len(text)} characters cut to the first {limit} (cap)")
        return text[:limit], True
    return text, False


def run(obj: object) -> JsonDict:
    """The task: an Introspect's JSON object in, the Introspected's out."""
    return encode(introspect(obj))


def introspect(obj: object) -> Introspected:
    from ..ffi import library, typeinfo

    request = decode_introspect(obj)

    type_info_dict = cast(Any, typeinfo).type_info_dict
    member_attrs = cast(Any, typeinfo).member_attrs
    from ..abi.symbols import MEMBER_ATTRS

    # Asked before the library loads, so its code cannot change the answer.
    cuda_devices = _cuda_devices() if request.cuda_devices else None
    lib = cast(Any, library).load(request.path, runtime=request.runtime)
    rt = lib.runtime
    errors: list[str] = []
    warnings: list[str] = []
    functions: list[FunctionInfo] = []
    for name in lib.function_names():
        metadata_raw = metadata = doc = None
        try:
            raw, cut = _cap(lib.metadata_raw(name), METADATA_CAP, f"{name}: metadata", warnings)
            metadata_raw = None if cut else raw  # half a JSON text is not shown
            if raw is not None and not cut:
                try:
                    metadata = json.loads(raw)
                except ValueError as e:
                    errors.append(f"{name}: metadata is not JSON: {e}")
        except Exception as e:  # a broken getter is a finding, not a failure
            errors.append(f"{name}: metadata getter failed: {_describe(e)}")
        try:
            doc, _ = _cap(lib.doc(name), DOC_CAP, f"{name}: doc", warnings)
        except Exception as e:
            errors.append(f"{name}: doc getter failed: {_describe(e)}")
        functions.append(FunctionInfo(name, metadata_raw, metadata, doc))
    types = []
    unlisted = library.types_unlisted_note(rt)
    if unlisted:
        warnings.append(unlisted)
    for key in lib.types_registered:
        index = rt.type_key_to_index(key)
        info = type_info_dict(rt, index) if index is not None else None
        if info is None:
            errors.append(f"type {key}: no type info")
        else:
            # The constructor and copy a type has as type attributes (0.1.10+
            # headers register them there, not in the method table).
            attrs = tuple(member_attrs(rt, index, MEMBER_ATTRS))
            types.append(_type_info(info, attrs))
    try:
        module = lib.describe()
        # tvmffi's runtime describes a module as a JSON object; anything else is none
        module = module if isinstance(module, dict) else None
    except Exception as e:
        module = None
        errors.append(f"module description failed: {_describe(e)}")
    names = sorted(lib.globals_registered)
    if len(names) > LIST_CAP:
        warnings.append(f"{len(names)} global names, the first {LIST_CAP} kept (cap)")
        names = names[:LIST_CAP]
    globals_ = [_cap(n, NAME_CAP, "a global name", warnings)[0] for n in names]
    info = _global_info(lib, names, errors)
    return Introspected(
        tuple(functions),
        tuple(globals_),
        tuple(types),
        info,
        module,
        tuple(errors),
        tuple(warnings),
        cuda_devices,
    )


def _type_info(info: Any, attrs: tuple[str, ...]) -> TypeInfo:
    """ffi/typeinfo.type_info_dict's description of a type, as the message's."""
    return TypeInfo(
        info["type_key"],
        info["type_index"],
        info["parent_type_key"],
        tuple(
            FieldInfo(f["name"], f["static_type_index"], f["flags"], f["doc"], f["metadata"])
            for f in info["fields"]
        ),
        tuple(
            MethodInfo(m["name"], m["doc"], m["is_static"], m["metadata"]) for m in info["methods"]
        ),
        info["doc"],
        attrs,
    )


def _cuda_devices() -> CudaDevices:
    """The GPUs here and their compute capabilities, or why there are none."""
    from ..ffi import cuda

    try:
        found = cuda.devices()
    except cuda.CudaUnavailable as e:
        return CudaDevices(unavailable=str(e))
    except cuda.CudaError as e:
        return CudaDevices(unavailable=f"the CUDA driver failed: {e}")
    return CudaDevices(tuple(CudaDevice(d.ordinal, d.name, d.compute_capability) for d in found))


def _global_info(lib: Any, names: list[str], errors: list[str]) -> tuple[GlobalMeta, ...]:
    """Metadata JSON of each registered global, from the runtime's
    ffi.GetGlobalFuncMetadata (absent in runtimes that do not keep it)."""
    getter = lib.get_global("ffi.GetGlobalFuncMetadata")
    if getter is None:
        return ()
    out: list[GlobalMeta] = []
    for name in sorted(names):
        try:
            raw = getter(name)
        except Exception as e:
            errors.append(f"global {name}: metadata lookup failed: {_describe(e)}")
            continue
        out.append(GlobalMeta(name, raw if isinstance(raw, str) and raw else None))
    return tuple(out)


def _describe(e: Exception) -> str:
    kind = getattr(e, "kind", None) or type(e).__name__
    return f"{kind}: {e}"
