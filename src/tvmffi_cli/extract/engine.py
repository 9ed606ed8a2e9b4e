"""`tvmffi extract LIB -o DIR`: write a library's embedded modules and GPU
binaries to files, without running any of its code.

What is written (names are built from the library's own strings, sanitized):

* every module blob of `__tvm_ffi__library_bin`, as serialized:
  `module<index>-<kind>.bin`;
* the payload of every GPU module (cuda, rocm, opencl, ...), its kernels
  listed in the manifest: `module<index>-<kind>.<cubin|fatbin|ptx|...>`;
* for kinds with one payload per kernel (metal, vulkan, webgpu):
  `module<index>-<kind>-<kernel>.<metal|spv|wgsl|...>`;
* every `__tvm_ffi__cubin_<name>` blob: `cubin-<name>.<cubin|fatbin|ptx|...>`;
* every entry of the CUDA fat binaries nvcc linked in (`.nv_fatbin`,
  `__nv_relfatbin`), named as `cuobjdump -xelf/-xptx all` names it
  (`<lib>.1.sm_80.cubin`, `<lib>.1.sm_90.ptx`), decompressed when the optional
  lz4/zstandard package can (else its payload as stored: `.lz4`, `.zst`);
* `manifest.json`: one entry per file, and the module tree of
  `__tvm_ffi__library_bin`: every module (`_lib`, which has no blob, too) with
  its kind, index and imports, so the tree can be rebuilt from the manifest
  alone (see schemas/extract.schema.json).

Safety: names keep only [A-Za-z0-9._-] (no separators, no leading dot, so
never `..`), are at most MAX_NAME characters, and are unique; nothing that
exists in DIR is replaced unless `force`; each file is written to a temporary
name and renamed into place. Every byte comes from the file and is bounded
by the symbol that holds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..abi.symbols import LIBRARY_BIN
from ..errors import FormatError, InputError

if TYPE_CHECKING:
    from ..binary.fatbin_model import CudaJson

MAX_NAME = 96
MANIFEST = "manifest.json"
EXT = {
    "cubin": "cubin",
    "fatbin": "fatbin",
    "ptx": "ptx",
    "elf": "elf",
    "text": "txt",
    "binary": "bin",
}
SOURCE_EXT = {"opencl": "cl", "metal": "metal"}
# (module kind, format) -> extension of one kernel's payload
PART_EXT = {
    ("metal", "text"): "metal",
    ("webgpu", "text"): "wgsl",
    ("vulkan", "binary"): "spv",
    ("webgpu", "binary"): "spv",
    ("vulkan", "text"): "txt",
}


@dataclass(frozen=True)
class Entry:
    file: str  # name inside DIR
    kind: (
        str  # "module" (a serialized module blob) | "payload" (its GPU binary) | "cubin" | "fatbin"
    )
    module_kind: str | None  # cuda, opencl, ... (None for cubin symbols)
    module_index: int | None
    format: str  # cubin, fatbin, ptx, text, binary, module
    size: int
    architecture: str | None  # sm_86, ... when the payload says
    symbol: str  # the symbol the bytes come from
    offset: int  # byte offset within that symbol
    sha256: str
    kernels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:  # extract's --json (a JSON boundary)
        return {
            "file": self.file,
            "kind": self.kind,
            "module_kind": self.module_kind,
            "module_index": self.module_index,
            "format": self.format,
            "size": self.size,
            "architecture": self.architecture,
            "symbol": self.symbol,
            "offset": self.offset,
            "sha256": self.sha256,
            "kernels": list(self.kernels),
        }


@dataclass(frozen=True)
class ModuleNode:
    """One module of `__tvm_ffi__library_bin`'s tree, as the decoder read it."""

    index: int
    kind: str  # "_lib" is the library itself (no blob)
    imports: tuple[int, ...]  # indices of the modules it imports, in order
    blob_size: int | None  # None for _lib
    blob_offset: int | None  # within the symbol; None for _lib
    file: str | None = None  # the module<index>-<kind>.bin written for it (None for _lib)

    def to_json(self) -> dict[str, Any]:  # extract's --json (a JSON boundary)
        return {
            "index": self.index,
            "kind": self.kind,
            "imports": list(self.imports),
            "blob_size": self.blob_size,
            "blob_offset": self.blob_offset,
            "file": self.file,
        }


@dataclass(frozen=True)
class ExtractResult:
    library: str
    directory: str
    entries: tuple[Entry, ...]
    errors: tuple[str, ...]  # malformations found while reading (files still written)
    modules: tuple[ModuleNode, ...] = ()
    root: int | None = None  # index of the root module (the loader returns module 0)

    def to_json(self) -> dict[str, Any]:  # extract's --json (a JSON boundary)
        return {
            "library": self.library,
            "directory": self.directory,
            "manifest": MANIFEST,
            "files": [e.to_json() for e in self.entries],
            "modules": [m.to_json() for m in self.modules],
            "root": self.root,
            "errors": list(self.errors),
        }

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0


def safe_name(name: str, taken: set[str]) -> str:
    """A file name made of [A-Za-z0-9._-], not starting with a dot, at most
    MAX_NAME characters, not in `taken` (which it is added to)."""
    s = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "_"
    s = re.sub(r"\.{2,}", ".", s)
    if len(s) > MAX_NAME:
        h = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        stem, dot, ext = s.rpartition(".")
        ext = ext if dot and len(ext) <= 8 else ""
        s = s[: MAX_NAME - 10 - len(ext)] + "-" + h + ("." + ext if ext else "")
    if s.lower() == MANIFEST:
        s = "_" + s
    base, n = s, 2
    while s.lower() in taken:
        stem, dot, ext = base.rpartition(".")
        s = f"{stem}-{n}.{ext}" if dot and stem else f"{base}-{n}"
        n += 1
    taken.add(s.lower())
    return s


@dataclass(frozen=True)
class _Item:
    name: str
    data: bytes
    kind: str
    module_kind: str | None
    module_index: int | None
    format: str
    architecture: str | None
    symbol: str
    offset: int
    kernels: tuple[str, ...]


def _payload_info(data: bytes) -> tuple[str, str | None]:
    from ..binary.modformats import read_payload

    info = read_payload(data[:4096])
    return info.type, info.arch


@dataclass(frozen=True)
class Collected:
    items: list[_Item]
    errors: list[str]
    modules: tuple[ModuleNode, ...]
    root: int | None


def collect(path: str) -> Collected:
    """Read what there is to extract (static only: the file's bytes)."""
    from ..binary import libbin, modformats, open_binary
    from ..inspect.engine import static_report

    items: list[_Item] = []
    errors: list[str] = []
    nodes: list[ModuleNode] = []
    root: int | None = None
    b = open_binary(path)
    try:
        rep = static_report(b)
        errors += [f"{e['where']}: {e['message']}" for e in rep["errors"]]
        sym = b.get(LIBRARY_BIN)
        if sym is not None and rep.get("library_bin") is not None:
            try:
                data = b.read_symbol_bytes(sym)
            except FormatError as e:  # no bytes in the file (.bss)
                data = b""
                errors.append(f"{LIBRARY_BIN}: {e}")
            lb = libbin.decode(data, decode_kinds=False)
            root = lb.root
            nodes = [
                ModuleNode(m.index, m.kind, tuple(m.imports), m.blob_size, m.blob_offset)
                for m in lb.modules
            ]
            for m in lb.modules:
                if m.blob is None:
                    continue
                blob = bytes(m.blob)
                kernels: tuple[str, ...] = ()
                payload: bytes | None = None
                payload_at = 0
                parts: tuple[modformats.Part, ...] = ()
                if m.kind in modformats.GPU_KINDS:
                    try:
                        details, payload = modformats.decode_gpu(m.kind, blob)
                        kernels = tuple(f.name for f in details.functions)
                        parts = details.tail.parts
                        if payload is not None:
                            payload_at = (m.blob_offset or 0) + (details.tail.payload_offset or 0)
                    except libbin.LibBinError as e:
                        errors.append(f"module {m.index} ({m.kind}): cannot decode: {e.message}")
                stem = f"module{m.index}-{m.kind}"
                items.append(
                    _Item(
                        f"{stem}.bin",
                        blob,
                        "module",
                        m.kind,
                        m.index,
                        "module",
                        None,
                        LIBRARY_BIN,
                        m.blob_offset or 0,
                        kernels,
                    )
                )
                for part in parts:  # one payload per kernel (metal, vulkan, webgpu)
                    key, at = part.key, part.offset
                    data = blob[at : at + part.size]
                    fmt, arch = _payload_info(data)
                    ext = PART_EXT.get((m.kind, fmt), EXT.get(fmt, "bin"))
                    items.append(
                        _Item(
                            f"{stem}-{key}.{ext}",
                            data,
                            "payload",
                            m.kind,
                            m.index,
                            fmt,
                            arch,
                            LIBRARY_BIN,
                            (m.blob_offset or 0) + at,
                            (key,),
                        )
                    )
                if payload is not None:
                    fmt, arch = _payload_info(payload)
                    ext = (
                        SOURCE_EXT.get(m.kind, EXT.get(fmt, "bin"))
                        if fmt == "text"
                        else EXT.get(fmt, "bin")
                    )
                    items.append(
                        _Item(
                            f"{stem}.{ext}",
                            payload,
                            "payload",
                            m.kind,
                            m.index,
                            fmt,
                            arch,
                            LIBRARY_BIN,
                            payload_at,
                            kernels,
                        )
                    )
        for c in rep["cubins"]:
            s = b.get(c["symbol"])
            off = b.file_offset(s) if s is not None else None
            if s is None or off is None:
                continue
            sec = s._sec or b.section_for(s.value)
            avail = min(sec.offset + sec.filesize, len(b.data)) - off if sec else 0
            n = max(0, min(int(c["size"] or 0), avail))
            data = bytes(b.data[off : off + n])
            fmt, arch = _payload_info(data)
            items.append(
                _Item(
                    f"cubin-{c['name']}.{EXT.get(fmt, 'bin')}",
                    data,
                    "cubin",
                    None,
                    None,
                    fmt,
                    arch,
                    str(c["symbol"]),
                    0,
                    (),
                )
            )
        items += _fatbin_items(b, rep.get("cuda"))
    finally:
        b.close()
    return Collected(items, errors, tuple(nodes), root)


#: Decompressed bytes extract writes per library, all entries together.
EXTRACT_DECOMPRESS_LIMIT = 1 << 30
_PACKED_EXT = {"lz4": ".lz4", "zstd": ".zst"}


def _fatbin_items(b: Any, cuda: CudaJson | None) -> list[_Item]:
    """The entries of the library's fat binaries (report["cuda"])."""
    if not cuda:
        return []
    from ..binary import fatbin
    from ..binary.kernels import decompress

    code = fatbin.read(b, names=False)
    if code is None:
        return []
    starts = {s.name: s.offset for s in code.sections}
    budget = EXTRACT_DECOMPRESS_LIMIT
    out: list[_Item] = []
    for e, doc in zip(code.entries, cuda["entries"]):
        if e.arch is None:
            continue  # an unknown kind: nothing says what its bytes are
        data = bytes(b.data[e.offset : e.offset + e.stored])
        fmt, name = ("cubin" if e.kind == "sass" else "ptx"), e.name or f"entry{e.index}"
        if e.compression != "none":
            packed = data[: min(e.compressed_size or e.stored, e.stored)]
            want = e.uncompressed_size or 0
            try:
                if not 0 < want <= budget:
                    raise FormatError("over the decompression budget")
                data = decompress(e.compression, packed, want)
                budget -= want
            except FormatError:
                data, fmt = packed, e.compression
                name += _PACKED_EXT.get(e.compression, ".bin")
        if fmt == "ptx":
            data = data.rstrip(b"\0")  # the terminator and padding: cuobjdump -xptx leaves them out
        kernels = tuple(str(k) for k in doc.get("kernels") or ())
        at = e.offset - starts.get(e.section, e.offset)
        out.append(
            _Item(name, data, "fatbin", None, None, fmt, e.arch.name, e.section, at, kernels)
        )
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_atomic(directory: str, name: str, data: bytes, mode: int) -> None:
    try:
        _write_file(directory, name, data, mode)
    except OSError as e:
        raise InputError(
            f"{os.path.join(directory, name)}: cannot write ({e.strerror or e})"
        ) from None


def _write_file(directory: str, name: str, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tvmffi-extract-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if hasattr(os, "fchmod"):  # mkstemp makes 0600; give what open() would
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def run(path: str, directory: str, force: bool = False) -> ExtractResult:
    """Extract everything embedded in `path` into `directory` (created when
    missing). InputError (exit 2) when DIR is unusable or would be
    overwritten without `force`."""
    got = collect(path)
    items, errors = got.items, got.errors
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError(f"{directory}: exists and is not a directory")
    taken: set[str] = set()
    named = [(safe_name(it.name, taken), it) for it in items]
    dirs = [n for n, _ in named if os.path.isdir(os.path.join(directory, n))]
    if dirs:
        raise InputError(
            f"{os.path.join(directory, dirs[0])} is a directory; not replaced even with --force"
        )
    if not force:
        clash = [n for n, _ in named if os.path.lexists(os.path.join(directory, n))]
        if os.path.lexists(os.path.join(directory, MANIFEST)):
            clash.insert(0, MANIFEST)
        if clash:
            more = f" (and {len(clash) - 1} more)" if len(clash) > 1 else ""
            raise InputError(
                f"{os.path.join(directory, clash[0])} exists{more}; use --force to overwrite"
            )
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise InputError(f"{directory}: cannot create ({e.strerror or e})") from None
    entries = []
    mode = 0o666 & ~_umask()
    for n, it in named:
        _write_atomic(directory, n, it.data, mode)
        entries.append(
            Entry(
                n,
                it.kind,
                it.module_kind,
                it.module_index,
                it.format,
                len(it.data),
                it.architecture,
                it.symbol,
                it.offset,
                hashlib.sha256(it.data).hexdigest(),
                it.kernels,
            )
        )
    module_file = {
        e.module_index: e.file for e in entries if e.kind == "module" and e.module_index is not None
    }
    nodes = tuple(replace(m, file=module_file.get(m.index)) for m in got.modules)
    result = ExtractResult(
        os.path.basename(path), directory, tuple(entries), tuple(errors), nodes, got.root
    )
    text = json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"
    _write_atomic(directory, MANIFEST, text.encode("utf-8"), mode)
    return result
