"""Decoders of the module kinds found in `__tvm_ffi__library_bin`.

GPU kinds as TVM serialises them (ABI-NOTES "Embedded modules"):
    fmt: str, then a map (u64 count) of key: str -> FunctionInfo
      {name: str, arg_types: vec<DLDataType>, launch_param_tags: vec<str>,
       arg_extra_tags: vec<i32>}, then the payload.
TVM releases differ in small ways (older ones store arg types as dtype strings
and have no arg_extra_tags; metal and vulkan keep one payload per function), so
the decoder tries those variants and keeps the one that consumes the blob
exactly. Everything is bounded by the blob; counts are checked before reading.
Unknown kinds get their size and a short hex/ASCII preview.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from typing import Callable, Optional, TypedDict, Union, final

from ..abi.dtypes import format_dtype as dtype_str
from .fatbin_format import EM_CUDA, FATBIN_MAGIC
from .reader import LibBinError, Problem, Reader


class _FuncJsonKeys(TypedDict):
    name: str
    arg_types: list[str]
    launch_param_tags: list[str]


class FuncJson(_FuncJsonKeys, total=False):
    """FuncInfo.to_json() (inspect's --json modules[].details.functions)."""

    arg_extra_tags: list[int]
    key: str
    omitted: int


class PayloadJson(TypedDict, total=False):
    """Payload.to_json(): `type` always, the others when known."""

    type: str
    e_machine: int
    arch: str


class _GpuModuleJsonKeys(TypedDict):
    format: str
    functions: list[FuncJson]
    payload_size: int


@final  # (so that `"format" in details` tells it from OpaqueJson)
class GpuModuleJson(_GpuModuleJsonKeys, total=False):
    """GpuModule.to_json() (inspect's --json modules[].details)."""

    payload_offset: int
    sources: list[str]
    shaders: list[str]
    layout: str
    payload: PayloadJson


class Preview(TypedDict):
    hex: str
    ascii: str


@final
class OpaqueJson(TypedDict):
    """Opaque.to_json() (inspect's --json modules[].details)."""

    size: int
    preview: Preview


@dataclass(frozen=True)
class FuncInfo:
    """One entry of a GPU module's function map. arg_extra_tags is None in
    the layouts that have none; key is the map's key when it is not the
    name; a placeholder for `omitted` functions not decoded has no types."""

    name: str
    arg_types: tuple[str, ...]
    launch_param_tags: tuple[str, ...]
    arg_extra_tags: Optional[tuple[int, ...]] = None
    key: Optional[str] = None
    omitted: Optional[int] = None

    def to_json(self) -> FuncJson:
        d: FuncJson = {
            "name": self.name,
            "arg_types": list(self.arg_types),
            "launch_param_tags": list(self.launch_param_tags),
        }
        if self.arg_extra_tags is not None:
            d["arg_extra_tags"] = list(self.arg_extra_tags)
        if self.key is not None:
            d["key"] = self.key
        if self.omitted is not None:
            d["omitted"] = self.omitted
        return d


@dataclass(frozen=True)
class Part:
    """One function's own payload (metal, vulkan, webgpu): its key, offset in
    the blob and size."""

    key: str
    offset: int
    size: int


@dataclass(frozen=True)
class Payload:
    """What a GPU payload is (read_payload): type elf | cubin | fatbin |
    ptx | text | binary; e_machine of an ELF; arch (sm_XX) of a cubin or PTX."""

    type: str
    e_machine: Optional[int] = None
    arch: Optional[str] = None

    def to_json(self) -> PayloadJson:
        d: PayloadJson = {"type": self.type}
        if self.e_machine is not None:
            d["e_machine"] = self.e_machine
        if self.arch is not None:
            d["arch"] = self.arch
        return d


@dataclass(frozen=True)
class Tail:
    """What follows a GPU module's function map: one payload (its size and
    offset in the blob), or one per function (their names, parts)."""

    payload_size: int
    payload_offset: Optional[int] = None
    sources: Optional[tuple[str, ...]] = None
    shaders: Optional[tuple[str, ...]] = None
    parts: tuple[Part, ...] = ()


@dataclass(frozen=True)
class GpuModule:
    """A decoded GPU module (cuda, rocm, metal, ...). payload_offset is in
    the blob from decode_gpu, in the symbol from decode(); layout names a
    variant other than the newest; payload: what the one payload is."""

    format: str
    functions: tuple[FuncInfo, ...]
    tail: Tail
    layout: Optional[str] = None
    payload: Optional[Payload] = None

    def to_json(self) -> GpuModuleJson:
        t = self.tail
        d: GpuModuleJson = {
            "format": self.format,
            "functions": [f.to_json() for f in self.functions],
            "payload_size": t.payload_size,
        }
        if t.payload_offset is not None:
            d["payload_offset"] = t.payload_offset
        if t.sources is not None:
            d["sources"] = list(t.sources)
        if t.shaders is not None:
            d["shaders"] = list(t.shaders)
        if self.layout is not None:
            d["layout"] = self.layout
        if self.payload is not None:
            d["payload"] = self.payload.to_json()
        return d


@dataclass(frozen=True)
class Opaque:
    """A blob of a kind not decoded (or that failed to): its size and first bytes."""

    size: int
    hex: str
    ascii: str

    def to_json(self) -> OpaqueJson:
        return {"size": self.size, "preview": {"hex": self.hex, "ascii": self.ascii}}


#: What inspect says of one module's blob.
Details = Union[GpuModule, Opaque]
# A payload reader: what follows the function map, and the payload bytes or None.
TailReader = Callable[[Reader], tuple[Tail, Optional[bytes]]]

GPU_KINDS = ("cuda", "rocm", "hip", "opencl", "metal", "vulkan", "webgpu", "sdaccel", "aocl")

PREVIEW = 32


def _vec_str(r: Reader, what: str) -> list[str]:
    n = r.count(what, 8)
    return [r.str(f"{what}[{k}]") for k in range(n)]


def _func_info(r: Reader, dtype_as_str: bool, extra_tags: bool, key: str) -> FuncInfo:
    name = r.str("function name")
    args: list[str]
    if dtype_as_str:
        args = _vec_str(r, "arg types")
    else:
        n = r.count("arg types", 4)
        args = []
        for _ in range(n):
            code, bits, lanes = struct.unpack_from("<BBH", r.data, r.pos)
            r.pos += 4
            args.append(dtype_str(code, bits, lanes))
    tags = _vec_str(r, "launch param tags")
    extra: Optional[tuple[int, ...]] = None
    if extra_tags:
        n = r.count("arg extra tags", 4)
        extra = tuple(struct.unpack_from(f"<{n}i", r.data, r.pos)) if n else ()
        r.pos += 4 * n
    return FuncInfo(name, tuple(args), tuple(tags), extra, None if key == name else key)


#: Functions of one module decoded in full; the rest are walked (bounds
#: checked) and counted, so a map of 300,000 kernels stays linear and small.
FUNC_DETAIL_CAP = 1000


def _skip_funcs(r: Reader, n: int, dtype_as_str: bool, extra_tags: bool) -> None:
    """Walk n function-map entries without decoding them (bounds checked)."""
    data, pos, end = r.data, r.pos, r.end
    unpack = struct.unpack_from

    def u64(at: int) -> int:
        if end - at < 8:
            raise LibBinError(at, f"function map: needs 8 bytes at offset {at}")
        return int(unpack("<Q", data, at)[0])

    for _ in range(n):
        for _s in range(2):  # key, name
            k = u64(pos)
            pos += 8
            if k > end - pos:
                raise LibBinError(
                    pos - 8,
                    f"function map: string of {k} bytes at offset {pos - 8} runs past the end",
                )
            pos += k
        for vec in (0, 1, 2):  # arg types, launch param tags, arg extra tags
            if vec == 2 and not extra_tags:
                break
            k = u64(pos)
            pos += 8
            if vec == 0 and not dtype_as_str or vec == 2:
                if 4 * k > end - pos:
                    raise LibBinError(
                        pos - 8, f"function map: count {k} at offset {pos - 8} runs past the end"
                    )
                pos += 4 * k
                continue
            if k > (end - pos) // 8:
                raise LibBinError(
                    pos - 8, f"function map: count {k} at offset {pos - 8} runs past the end"
                )
            for _t in range(k):
                m = u64(pos)
                pos += 8
                if m > end - pos:
                    raise LibBinError(
                        pos - 8,
                        f"function map: string of {m} bytes at offset {pos - 8} runs past the end",
                    )
                pos += m
    r.pos = pos


def _fmap(r: Reader, dtype_as_str: bool, extra_tags: bool) -> list[FuncInfo]:
    n = r.count("function map", 16)
    funcs: list[FuncInfo] = []
    for _ in range(min(n, FUNC_DETAIL_CAP)):
        key = r.str("function key")
        funcs.append(_func_info(r, dtype_as_str, extra_tags, key))
    if n > FUNC_DETAIL_CAP:
        _skip_funcs(r, n - FUNC_DETAIL_CAP, dtype_as_str, extra_tags)
        funcs.append(
            FuncInfo(
                f"... {n - FUNC_DETAIL_CAP} more functions (not decoded: "
                f"the first {FUNC_DETAIL_CAP} are shown)",
                (),
                (),
                omitted=n - FUNC_DETAIL_CAP,
            )
        )
    return funcs


def _tail_bytes(r: Reader) -> tuple[Tail, bytes | None]:
    at, b = r.raw("payload")
    return Tail(len(b), payload_offset=at), b


def _tail_source_map(r: Reader) -> tuple[Tail, bytes | None]:
    n = r.count("source map", 16)
    total, parts = 0, []
    for _ in range(n):
        name = r.str("source map key")
        at, b = r.raw("source map value")
        parts.append(Part(name, at, len(b)))
        total += len(b)
    return Tail(total, sources=tuple(p.key for p in parts), parts=tuple(parts)), None


def _tail_shader_map(r: Reader) -> tuple[Tail, bytes | None]:
    n = r.count("shader map", 20)
    total, parts = 0, []
    for _ in range(n):
        name = r.str("shader map key")
        r.u32("shader flag")
        k = r.count("shader words", 4)
        parts.append(Part(name, r.pos, 4 * k))
        r.pos += 4 * k
        total += 4 * k
    return Tail(total, shaders=tuple(p.key for p in parts), parts=tuple(parts)), None


TAILS: dict[str, TailReader] = {
    "bytes": _tail_bytes,
    "source_map": _tail_source_map,
    "shader_map": _tail_shader_map,
}


def _tails_for(kind: str) -> tuple[str, ...]:
    if kind == "metal":
        return ("source_map", "bytes")
    if kind == "vulkan" or kind == "webgpu":
        return ("shader_map", "source_map", "bytes")
    return ("bytes",)


def decode_gpu(kind: str, blob: bytes) -> tuple[GpuModule, bytes | None]:
    """Try the known layouts; return (details, payload bytes or None) or raise
    LibBinError for the first variant's failure when none fits."""
    first_err: LibBinError | None = None
    for tail in _tails_for(kind):
        for as_str, extra in ((False, True), (False, False), (True, True), (True, False)):
            r = Reader(blob)
            try:
                fmt = r.str("fmt")
                funcs = _fmap(r, as_str, extra)
                tail_read, payload = TAILS[tail](r)
            except LibBinError as e:
                if first_err is None:
                    first_err = e
                continue
            if r.pos != len(blob):
                if first_err is None:
                    first_err = LibBinError(r.pos, f"{len(blob) - r.pos} bytes left over")
                continue
            layout = None
            if as_str or not extra:
                layout = ("dtype strings" if as_str else "dtype structs") + (
                    "" if extra else ", no arg_extra_tags"
                )
            return GpuModule(fmt, tuple(funcs), tail_read, layout), payload
    raise first_err or LibBinError(0, "empty blob")


def opaque(data: bytes | bytearray | memoryview) -> Opaque:
    head = bytes(data[:PREVIEW])
    return Opaque(len(data), head.hex(), "".join(chr(c) if 32 <= c < 127 else "." for c in head))


def read_payload(data: bytes | bytearray | memoryview) -> Payload:
    """What a GPU payload is: an ELF cubin (with its sm_XX), a fatbin, PTX or
    other text, or opaque bytes."""
    b = bytes(data[:64])
    if b[:4] == b"\x7fELF" and len(b) >= 52:
        le = b[5] == 1
        e = "<" if le else ">"
        machine = struct.unpack_from(e + "H", b, 18)[0]
        flags = struct.unpack_from(e + "I", b, 48 if b[4] == 2 else 36)[0] if len(b) >= 52 else 0
        if machine == EM_CUDA:
            # ABI version 8+ keeps the SM number in bits 8..15, older in bits 0..7.
            sm = (flags >> 8) & 0xFF if b[8] >= 8 else flags & 0xFF
            return Payload("cubin", machine, f"sm_{sm}")
        return Payload("elf", machine)
    if len(b) >= 4 and struct.unpack_from("<I", b, 0)[0] == FATBIN_MAGIC:
        return Payload("fatbin")
    text = bytes(data[:4096])
    m = re.search(rb"\.target\s+(sm_\w+)", text)
    if m:
        return Payload("ptx", arch=m.group(1).decode())
    if text and all(c in b"\t\n\r" or 32 <= c < 127 for c in text[:256]):
        return Payload("text")
    return Payload("binary")


def decode(kind: str, blob: bytes, base_offset: int, errors: list[Problem], index: int) -> Details:
    """Details of one module's blob for the JSON/tree output. Problems are
    appended to `errors` with offsets relative to the library_bin symbol."""
    if kind in GPU_KINDS:
        try:
            details, payload = decode_gpu(kind, blob)
        except LibBinError as e:
            errors.append(
                {
                    "offset": base_offset + e.offset,
                    "message": f"module {index} ({kind}): cannot decode: {e.message}",
                }
            )
            return opaque(blob)
        tail = details.tail
        if tail.payload_offset is not None:  # relative to the symbol, like errors
            tail = replace(tail, payload_offset=tail.payload_offset + base_offset)
        return replace(
            details, tail=tail, payload=None if payload is None else read_payload(payload)
        )
    return opaque(blob)


def encode_gpu(
    fmt: str | bytes,
    functions: list[tuple[str | bytes, list[tuple[int, int, int]], list[str | bytes], list[int]]],
    payload: str | bytes,
) -> bytes:
    """Serialise a GPU module the way TVM does (for tests and fixtures).
    functions: list of (name, [(code, bits, lanes)], [tags], [extra tags])."""

    def s(x: str | bytes) -> bytes:
        x = x.encode() if isinstance(x, str) else x
        return struct.pack("<Q", len(x)) + x

    out = s(fmt) + struct.pack("<Q", len(functions))
    for name, args, tags, extra in functions:
        out += s(name) + s(name)
        out += struct.pack("<Q", len(args)) + b"".join(struct.pack("<BBH", *a) for a in args)
        out += struct.pack("<Q", len(tags)) + b"".join(s(t) for t in tags)
        out += struct.pack(f"<Q{len(extra)}i", len(extra), *extra)
    return out + s(payload)
