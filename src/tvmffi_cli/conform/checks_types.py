"""type-layout: the reflected fields of the object types a library registers
while loading lie inside the object, aligned, without overlapping each other
or the fields of the ancestors (facts from probe_types.py, reported by the
probe worker's load)."""

from __future__ import annotations

from ..abi.structs import OBJECT_HEADER_SIZE
from ..sandbox.messages import MessageError
from .messages import TypeLayout, decode_type_layouts
from .results import ERROR, FAIL, PASS, SKIP, Result


def problems(t: TypeLayout) -> list[str]:
    """What is wrong with one type's field layout."""
    out: list[str] = []
    total = t.total_size
    spans: list[tuple[int, int, str]] = []
    for a in t.inherited:
        spans.append((a.offset, a.offset + max(a.size, 0), a.name))
    inherited = {(s, e, n) for s, e, n in spans}
    for f in t.fields:
        name, off, size, align = f.name, f.offset, f.size, f.alignment
        where = f"field {name} (offset {off}, size {size})"
        if size <= 0:
            out.append(f"{where}: size must be positive")
        if align <= 0 or align & (align - 1):
            out.append(f"{where}: alignment {align} is not a power of two")
        elif off % align:
            out.append(f"{where}: offset is not a multiple of its alignment {align}")
        if off < OBJECT_HEADER_SIZE:
            out.append(f"{where}: inside the {OBJECT_HEADER_SIZE}-byte object header")
        if total and off + size > total:
            out.append(f"{where}: ends at {off + size}, past the object's {total} bytes")
        for s, e, other in spans:
            if (s, e, other) in inherited and (s, e, other) == (off, off + size, name):
                continue  # an inherited field registered again under the child type
            if off < e and s < off + size:
                out.append(f"{where}: overlaps field {other} [{s}, {e})")
        spans.append((off, off + size, name))
    return out


def check_type_layout(raw: object, loaded: bool) -> Result:
    """`raw`: the probe's type layouts as its event stream carried them
    (decoded here: the parent refuses what does not decode)."""
    if not loaded:
        return Result("type-layout", None, SKIP, "the library did not load")
    if raw is None:
        return Result(
            "type-layout",
            None,
            SKIP,
            "the runtime cannot list the types a library registers (needs tvmffi's runtime)",
        )
    try:
        types = decode_type_layouts(raw)
    except MessageError as e:
        return Result("type-layout", None, ERROR, f"the probe's type layouts: {e}")
    bad = {t.key: p for t in types if (p := problems(t))}
    if bad:
        parts = [f"{k}: {'; '.join(p[:3])}" for k, p in bad.items()]
        return Result(
            "type-layout",
            None,
            FAIL,
            " | ".join(parts[:5]) + (f" (+{len(parts) - 5} more types)" if len(parts) > 5 else ""),
            {"types": {k: list(p) for k, p in bad.items()}},
        )
    with_fields = sum(1 for t in types if t.fields)
    return Result(
        "type-layout",
        None,
        PASS,
        f"{len(types)} type(s) registered at load, {with_fields} with fields: every field "
        "inside its object, aligned, not overlapping another",
    )
