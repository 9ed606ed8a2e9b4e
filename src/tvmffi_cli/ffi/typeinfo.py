"""Registered types as JSON-able descriptions (for introspection)."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Optional

from ..abi import structs as abi
from ..abi.constants import kTVMFFINone
from ..text import JsonDict, JsonValue

if TYPE_CHECKING:
    from .runtime import Runtime


def type_info_dict(rt: Runtime, type_index: int) -> Optional[JsonDict]:
    """JSON-able description of a registered type (for introspection)."""
    info = rt.type_info(type_index)
    if info is None:
        return None
    parent = None
    if info.type_depth > 0 and info.type_ancestors:
        p = info.type_ancestors[info.type_depth - 1]
        if p:
            parent = abi.byte_array_str(p.contents.type_key)
    fields: list[JsonValue] = []
    for j in range(info.num_fields):
        f = info.fields[j]
        fields.append(
            {
                "name": abi.byte_array_str(f.name),
                "static_type_index": f.field_static_type_index,
                "flags": f.flags,
                "doc": abi.byte_array_str(f.doc) or None,
                "metadata": abi.byte_array_str(f.metadata) or None,
            }
        )
    methods: list[JsonValue] = []
    for j in range(info.num_methods):
        m = info.methods[j]
        methods.append(
            {
                "name": abi.byte_array_str(m.name),
                "doc": abi.byte_array_str(m.doc) or None,
                "is_static": bool(m.flags & abi.kTVMFFIFieldFlagBitMaskIsStaticMethod),
                "metadata": abi.byte_array_str(m.metadata) or None,
            }
        )
    doc = None
    if info.metadata:
        doc = abi.byte_array_str(info.metadata.contents.doc) or None
    return {
        "type_key": abi.byte_array_str(info.type_key),
        "type_index": info.type_index,
        "parent_type_key": parent,
        "fields": fields,
        "methods": methods,
        "doc": doc,
    }


def member_attrs(rt: Runtime, type_index: int, names: tuple[str, ...]) -> list[str]:
    """Which of the type attributes `names` type `type_index` has (an entry
    of the column that is not None). Every release's column starts with
    {data, size}: 0.1.0..0.1.6 declare `size_t size`, later ones `int32_t
    size; int32_t begin_index`, the same 8 bytes on a little-endian 64-bit
    host (begin_index reads 0 there, as those releases index from 0)."""
    out = []
    for name in names:
        from .runtime import byte_array

        ba, _keep = byte_array(name)
        col = rt.TVMFFIGetTypeAttrColumn(ctypes.byref(ba))
        if not col:
            continue
        c = col.contents
        i = type_index - c.begin_index
        if c.data and 0 <= i < c.size and c.data[i].type_index != kTVMFFINone:
            out.append(name)
    return out
