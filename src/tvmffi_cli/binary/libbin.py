"""Decoder of `__tvm_ffi__library_bin` (spec 002, ABI-NOTES "Embedded modules").

Layout (all integers little-endian u64):
    <nbytes> <indptr: vec<u64>> <child_indices: vec<u64>>
    then one entry per module, in index order: <kind: str> [<blob: bytes>]
    where kind "_lib" (the library itself) has no blob; str/bytes/vec are
    <count: u64> <items>.

The decoder works on the symbol's bytes only: `nbytes` is checked against
them, every count is checked against the bytes that remain before anything is
read, and nothing is allocated from a count alone. Problems are collected as
errors with byte offsets (from the start of the symbol) instead of raised, and
decoding keeps whatever it could read.
"""

from __future__ import annotations

import struct
from typing import Any, cast

from ..errors import FormatError
from . import modformats
from .reader import LibBinError, Reader

LIB_KIND = "_lib"


class Module:
    __slots__ = ("index", "kind", "imports", "blob_offset", "blob_size", "blob", "details")

    index: int
    kind: str
    imports: list[int]
    blob_offset: int | None
    blob_size: int | None
    blob: bytes | None
    details: dict[str, Any] | None

    def __init__(
        self,
        index: int,
        kind: str,
        blob_offset: int | None = None,
        blob_size: int | None = None,
        blob: bytes | None = None,
    ) -> None:
        self.index = index
        self.kind = kind
        self.imports = []
        self.blob_offset = blob_offset  # offset of the blob's first byte within the symbol
        self.blob_size = blob_size
        self.blob = blob  # bytes (bounded by the symbol) or None for _lib
        self.details = None  # filled by modformats

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index,
            "kind": self.kind,
            "imports": list(self.imports),
            "blob_size": self.blob_size,
            "blob_offset": self.blob_offset,
        }
        if self.details is not None:
            d["details"] = self.details
        return d


class LibraryBin:
    def __init__(self) -> None:
        self.symbol_size = 0
        self.nbytes: int | None = None
        self.modules: list[Module] = []
        self.root: int | None = None
        self.errors: list[dict[str, Any]] = []  # [{"offset": int, "message": str}]

    def error(self, offset: int, message: str) -> None:
        self.errors.append({"offset": offset, "message": message})

    def to_json(self) -> dict[str, Any]:
        return {
            "symbol_size": self.symbol_size,
            "nbytes": self.nbytes,
            "root": self.root,
            "modules": [m.to_json() for m in self.modules],
            "errors": list(self.errors),
        }


def decode(data: bytes | bytearray | memoryview, decode_kinds: bool = True) -> LibraryBin:
    """Decode the bytes of the `__tvm_ffi__library_bin` symbol (already bounded
    by the symbol's size). Never raises for bad content; see LibraryBin.errors."""
    lb = LibraryBin()
    data = bytes(data)
    lb.symbol_size = len(data)
    r = Reader(data)
    try:
        nbytes = r.u64("nbytes header")
    except LibBinError as e:
        lb.error(e.offset, f"symbol is {len(data)} bytes, too short for the nbytes header")
        return lb
    lb.nbytes = nbytes
    if nbytes > r.remaining:
        lb.error(
            0,
            f"nbytes says {nbytes} bytes follow the header but the symbol holds only "
            f"{r.remaining}; decoding within the symbol",
        )
    else:
        r.end = 8 + nbytes
    try:
        indptr_at = r.pos
        indptr = r.vec_u64("import tree indptr")
        child_at = r.pos + 8
        children = r.vec_u64("import tree child indices")
    except LibBinError as e:
        lb.error(e.offset, e.message)
        return lb
    if not indptr:
        lb.error(indptr_at, "import tree indptr is empty (needs one more entry than modules)")
        return lb
    nmod = len(indptr) - 1
    for i in range(nmod):
        try:
            kat = r.pos
            kind = r.str(f"kind of module {i}")
            if kind == LIB_KIND:
                m = Module(i, kind)
            else:
                at, blob = r.raw(f"blob of module {i} ({kind})")
                m = Module(i, kind, at, len(blob), blob)
            if not kind:
                lb.error(kat, f"module {i} has an empty kind")
        except LibBinError as e:
            lb.error(e.offset, e.message)
            break
        lb.modules.append(m)
    if len(lb.modules) == nmod and r.pos < r.end:
        lb.error(r.pos, f"{r.end - r.pos} bytes after the last module are not used")
    _check_tree(lb, indptr, indptr_at, children, child_at, nmod)
    if nmod:
        lb.root = 0  # the loader returns module 0 as the root
    if decode_kinds:
        for m in lb.modules:
            if m.blob is not None:
                m.details = modformats.decode(
                    m.kind, m.blob, cast(int, m.blob_offset), lb.errors, m.index
                )
    return lb


def _check_tree(
    lb: LibraryBin, indptr: list[int], indptr_at: int, children: list[int], child_at: int, nmod: int
) -> None:
    ok = True
    if indptr[0] != 0:
        lb.error(indptr_at + 8, f"import tree indptr[0] is {indptr[0]}, expected 0")
        ok = False
    for i in range(1, len(indptr)):
        if indptr[i] < indptr[i - 1]:
            lb.error(
                indptr_at + 8 + 8 * i,
                f"import tree indptr[{i}]={indptr[i]} is smaller "
                f"than indptr[{i - 1}]={indptr[i - 1]}",
            )
            ok = False
    if indptr[-1] != len(children):
        lb.error(
            indptr_at + 8 + 8 * (len(indptr) - 1),
            f"import tree indptr ends at {indptr[-1]} but there are {len(children)} child indices",
        )
        ok = False
    for j, c in enumerate(children):
        if c >= nmod:
            lb.error(
                child_at + 8 * j, f"child index {c} (entry {j}) is not a module (there are {nmod})"
            )
            ok = False
    if not ok:
        return
    for m in lb.modules:
        i = m.index
        m.imports = [int(c) for c in children[indptr[i] : indptr[i + 1]]]
        if i in m.imports:
            lb.error(indptr_at + 8 + 8 * i, f"module {i} imports itself")
    # A cycle would make the loader's module objects own each other.
    state: dict[int, int] = {}
    for start in range(len(lb.modules)):
        stack = [(start, iter(lb.modules[start].imports))]
        if state.get(start):
            continue
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif nxt < len(lb.modules) and nxt != node:
                s = state.get(nxt, 0)
                if s == 1:
                    lb.error(child_at, f"import tree has a cycle through modules {node} and {nxt}")
                    return
                if s == 0:
                    state[nxt] = 1
                    stack.append((nxt, iter(lb.modules[nxt].imports)))


def encode(modules: list[tuple[str, bytes | None]], tree: list[list[int]] | None = None) -> bytes:
    """Build a library_bin image (used by tests and fixtures): `modules` is a
    list of (kind, blob bytes or None for "_lib"), `tree` a list of child-index
    lists (default: module 0 imports all the others)."""
    if tree is None:
        tree = [list(range(1, len(modules)))] + [[] for _ in modules[1:]]
    indptr, kids = [0], []
    for t in tree:
        kids.extend(t)
        indptr.append(len(kids))

    def vec(xs: list[int]) -> bytes:
        return struct.pack(f"<Q{len(xs)}Q", len(xs), *xs)

    def blob(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b

    body = vec(indptr) + vec(kids)
    for kind, payload in modules:
        body += blob(kind.encode())
        if kind != LIB_KIND:
            body += blob(payload or b"")
    return struct.pack("<Q", len(body)) + body


__all__ = ["decode", "encode", "LibraryBin", "Module", "Reader", "LibBinError", "FormatError"]
