"""Registered types as JSON-able descriptions (for introspection)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..abi import structs as abi

if TYPE_CHECKING:
    from .runtime import Runtime


def type_info_dict(rt: Runtime, type_index: int) -> Optional[dict[str, Any]]:
    """JSON-able description of a registered type (for introspection)."""
    info = rt.type_info(type_index)
    if info is None:
        return None
    parent = None
    if info.type_depth > 0 and info.type_ancestors:
        p = info.type_ancestors[info.type_depth - 1]
        if p:
            parent = abi.byte_array_str(p.contents.type_key)
    fields = []
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
    methods = []
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
