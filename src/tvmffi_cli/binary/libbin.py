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

Bounded: past `detail_limit` modules (a library may hold hundreds of
thousands) only their kinds are counted, no Module objects are made and no
blob is decoded; at most ERROR_LIMIT problems are kept, the rest counted.
Time stays linear in the symbol's size and memory in the limit.
"""

from __future__ import annotations

import os
import struct
from typing import Any, TypedDict, cast

from ..errors import FormatError
from . import modformats
from .reader import LibBinError, Problem, Reader

LIB_KIND = "_lib"
#: Modules listed in detail by default (inspect); the rest are counted by kind.
DETAIL_LIMIT = 1000
DETAIL_LIMIT_ENV = "TVMFFI_MODULE_DETAIL_LIMIT"
#: Problems kept; more are counted in one closing message.
ERROR_LIMIT = 100
#: Distinct kinds counted by name; more are counted under OTHER_KINDS.
KIND_LIMIT = 256
OTHER_KINDS = "(other kinds)"


def detail_limit() -> int:
    """DETAIL_LIMIT, or the positive integer in $TVMFFI_MODULE_DETAIL_LIMIT."""
    v = os.environ.get(DETAIL_LIMIT_ENV, "")
    return int(v) if v.isdigit() and int(v) > 0 else DETAIL_LIMIT


class _ModuleJsonKeys(TypedDict):
    index: int
    kind: str
    imports: list[int]
    blob_size: int | None
    blob_offset: int | None


class ModuleJson(_ModuleJsonKeys, total=False):
    """Module.to_json() (inspect's --json "modules")."""

    import_count: int
    details: modformats.GpuModuleJson | modformats.OpaqueJson


class Module:
    __slots__ = (
        "index",
        "kind",
        "imports",
        "import_count",
        "blob_offset",
        "blob_size",
        "blob",
        "details",
    )

    index: int
    kind: str
    imports: list[int]
    import_count: int | None  # set when `imports` lists only the first entries
    blob_offset: int | None
    blob_size: int | None
    blob: bytes | None
    details: modformats.Details | None

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
        self.import_count = None
        self.blob_offset = blob_offset  # offset of the blob's first byte within the symbol
        self.blob_size = blob_size
        self.blob = blob  # bytes (bounded by the symbol) or None for _lib
        self.details = None  # filled by modformats

    def to_json(self) -> ModuleJson:
        if self.import_count is None:
            d: ModuleJson = {
                "index": self.index,
                "kind": self.kind,
                "imports": list(self.imports),
                "blob_size": self.blob_size,
                "blob_offset": self.blob_offset,
            }
        else:  # between imports and blob_size in the document
            d = {
                "index": self.index,
                "kind": self.kind,
                "imports": list(self.imports),
                "import_count": self.import_count,
                "blob_size": self.blob_size,
                "blob_offset": self.blob_offset,
            }
        if self.details is not None:
            d["details"] = self.details.to_json()
        return d


class Summary(TypedDict):
    """LibraryBin.summary(): inspect's --json "library_bin" counts."""

    module_count: int
    modules_listed: int
    truncated: bool
    kinds: dict[str, int]


class LibraryBin:
    def __init__(self) -> None:
        self.symbol_size = 0
        self.nbytes: int | None = None
        self.modules: list[Module] = []
        self.root: int | None = None
        self.errors: list[Problem] = []
        self.errors_dropped = 0
        #: every module read, listed or not; kind -> count over all of them
        self.module_count = 0
        self.kinds: dict[str, int] = {}

    @property
    def truncated(self) -> bool:
        """Whether modules were read past the ones listed in detail."""
        return self.module_count > len(self.modules)

    def error(self, offset: int, message: str) -> None:
        if len(self.errors) < ERROR_LIMIT:
            self.errors.append({"offset": offset, "message": message})
        else:
            self.errors_dropped += 1

    def summary(self) -> Summary:
        """Counts over every module: how many, how many listed, per kind."""
        return {
            "module_count": self.module_count,
            "modules_listed": len(self.modules),
            "truncated": self.truncated,
            "kinds": dict(sorted(self.kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        }

    def to_json(self) -> dict[str, Any]:  # a JSON boundary (tests, tools)
        return {
            "symbol_size": self.symbol_size,
            "nbytes": self.nbytes,
            "root": self.root,
            "modules": [m.to_json() for m in self.modules],
            "errors": list(self.errors),
            **self.summary(),
        }


def decode(
    data: bytes | bytearray | memoryview,
    decode_kinds: bool = True,
    detail_limit: int | None = None,
) -> LibraryBin:
    """Decode the bytes of the `__tvm_ffi__library_bin` symbol (already bounded
    by the symbol's size). Never raises for bad content; see LibraryBin.errors.
    detail_limit: list (and decode) only the first so many modules, count the
    rest by kind (None: list every module)."""
    lb = _decode(data, decode_kinds, detail_limit)
    if detail_limit is not None:
        for m in lb.modules:
            if len(m.imports) > detail_limit:
                m.import_count = len(m.imports)
                del m.imports[detail_limit:]
    if lb.errors_dropped:
        lb.errors.append({"offset": 0, "message": f"{lb.errors_dropped} more problems not listed"})
    return lb


def _decode(
    data: bytes | bytearray | memoryview, decode_kinds: bool, detail_limit: int | None
) -> LibraryBin:
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
    listed = nmod if detail_limit is None else min(nmod, detail_limit)
    kinds = lb.kinds
    for i in range(nmod):
        try:
            kat = r.pos
            kind = r.str(f"kind of module {i}")
            if kind == LIB_KIND:
                m = Module(i, kind) if i < listed else None
            elif i < listed:
                at, blob = r.raw(f"blob of module {i} ({kind})")
                m = Module(i, kind, at, len(blob), blob)
            else:
                size = r.count(f"blob of module {i} ({kind})", 1)
                r.pos += size  # skipped: counted by kind, not kept
                m = None
            if not kind:
                lb.error(kat, f"module {i} has an empty kind")
        except LibBinError as e:
            lb.error(e.offset, e.message)
            break
        if kind not in kinds and len(kinds) >= KIND_LIMIT:
            kind = OTHER_KINDS
        kinds[kind] = kinds.get(kind, 0) + 1
        lb.module_count += 1
        if m is not None:
            lb.modules.append(m)
    if lb.module_count == nmod and r.pos < r.end:
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
        m.imports = [int(c) for c in children[indptr[m.index] : indptr[m.index + 1]]]
    n = lb.module_count  # modules actually read (a truncated symbol has fewer)
    for i in range(n):
        if i in children[indptr[i] : indptr[i + 1]]:
            lb.error(indptr_at + 8 + 8 * i, f"module {i} imports itself")
    # A cycle would make the loader's module objects own each other. Iterative
    # depth-first search over the arrays: linear in modules + edges.
    state = bytearray(n)  # 0 new, 1 on the stack, 2 done
    for start in range(n):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, indptr[start])]
        while stack:
            node, pos = stack[-1]
            if pos >= indptr[node + 1]:
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, pos + 1)
            nxt = children[pos]
            if nxt < n and nxt != node:
                if state[nxt] == 1:
                    lb.error(child_at, f"import tree has a cycle through modules {node} and {nxt}")
                    return
                if state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, indptr[nxt]))


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
