"""Layouts of the object types a library registers while loading (child
side of the type-layout check): for each new type index, the reflected
fields (name, offset, size, alignment), those of its ancestors, and the
object's size when the type registered one (TVMFFITypeMetadata.total_size).
Facts only; checks_types.py judges them."""

from __future__ import annotations

from typing import Any

from ..abi import structs as abi
from .messages import FieldLayout, TypeLayout

#: At most this many types are described (a library registering more is
#: described in part; the check says so).
LIMIT = 4096


def type_end(p: Any) -> int | None:
    """One past the largest type index allocated so far (our runtime only)."""
    f = p._rt("tvmffi_rt_type_index_end")
    return None if f is None else int(f())


def _fields(info: abi.TVMFFITypeInfo) -> list[FieldLayout]:
    out = []
    for j in range(max(0, min(info.num_fields, 1024))):
        f = info.fields[j]
        name = abi.byte_array_bytes(f.name)[:200].decode("utf-8", "replace")
        out.append(FieldLayout(name, int(f.offset), int(f.size), int(f.alignment)))
    return out


def layouts(p: Any, begin: int, end: int) -> list[TypeLayout]:
    out = []
    for idx in range(begin, min(end, begin + LIMIT)):
        info = p.rt.type_info(idx)
        if info is None:
            continue
        inherited: list[FieldLayout] = []
        for d in range(max(0, min(info.type_depth, 64))):
            anc = info.type_ancestors[d] if info.type_ancestors else None
            if anc:
                inherited.extend(_fields(anc.contents))
        total = None
        if info.metadata:
            total = int(info.metadata.contents.total_size) or None
        key = abi.byte_array_bytes(info.type_key)[:200].decode("utf-8", "replace")
        out.append(TypeLayout(key, total, tuple(_fields(info)), tuple(inherited)))
    return out
