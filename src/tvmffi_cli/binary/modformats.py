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
from typing import Any, Callable, Optional

from ..abi.dtypes import format_dtype as dtype_str
from .fatbin_format import EM_CUDA, FATBIN_MAGIC
from .reader import LibBinError, Reader

# A payload reader: (details, payload bytes or None).
Tail = Callable[[Reader], tuple[dict[str, Any], Optional[bytes]]]

GPU_KINDS = ("cuda", "rocm", "hip", "opencl", "metal", "vulkan", "webgpu", "sdaccel", "aocl")

PREVIEW = 32


def _vec_str(r: Reader, what: str) -> list[str]:
    n = r.count(what, 8)
    return [r.str(f"{what}[{k}]") for k in range(n)]


def _func_info(r: Reader, dtype_as_str: bool, extra_tags: bool) -> dict[str, Any]:
    name = r.str("function name")
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
    out: dict[str, Any] = {"name": name, "arg_types": args, "launch_param_tags": tags}
    if extra_tags:
        n = r.count("arg extra tags", 4)
        out["arg_extra_tags"] = list(struct.unpack_from(f"<{n}i", r.data, r.pos)) if n else []
        r.pos += 4 * n
    return out


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


def _fmap(r: Reader, dtype_as_str: bool, extra_tags: bool) -> list[dict[str, Any]]:
    n = r.count("function map", 16)
    funcs: list[dict[str, Any]] = []
    for _ in range(min(n, FUNC_DETAIL_CAP)):
        key = r.str("function key")
        info = _func_info(r, dtype_as_str, extra_tags)
        if key != info["name"]:
            info["key"] = key
        funcs.append(info)
    if n > FUNC_DETAIL_CAP:
        _skip_funcs(r, n - FUNC_DETAIL_CAP, dtype_as_str, extra_tags)
        funcs.append(
            {
                "name": f"... {n - FUNC_DETAIL_CAP} more functions (not decoded: "
                f"the first {FUNC_DETAIL_CAP} are shown)",
                "arg_types": [],
                "launch_param_tags": [],
                "omitted": n - FUNC_DETAIL_CAP,
            }
        )
    return funcs


def _tail_bytes(r: Reader) -> tuple[dict[str, Any], bytes | None]:
    at, b = r.raw("payload")
    return {"payload_size": len(b), "payload_offset": at}, b


# Tails with one payload per function also say where each one is, under
# PARTS: [(function key, offset in the blob, size)] (popped before output).
PARTS = "_parts"


def _tail_source_map(r: Reader) -> tuple[dict[str, Any], bytes | None]:
    n = r.count("source map", 16)
    names: list[str]
    total, names = 0, []
    parts: list[tuple[str, int, int]] = []
    for _ in range(n):
        names.append(r.str("source map key"))
        at, b = r.raw("source map value")
        parts.append((names[-1], at, len(b)))
        total += len(b)
    return {"payload_size": total, "sources": names, PARTS: parts}, None


def _tail_shader_map(r: Reader) -> tuple[dict[str, Any], bytes | None]:
    n = r.count("shader map", 20)
    names: list[str]
    total, names = 0, []
    parts: list[tuple[str, int, int]] = []
    for _ in range(n):
        names.append(r.str("shader map key"))
        r.u32("shader flag")
        k = r.count("shader words", 4)
        parts.append((names[-1], r.pos, 4 * k))
        r.pos += 4 * k
        total += 4 * k
    return {"payload_size": total, "shaders": names, PARTS: parts}, None


TAILS: dict[str, Tail] = {
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


def decode_gpu(kind: str, blob: bytes) -> tuple[dict[str, Any], bytes | None]:
    """Try the known layouts; return (details, payload bytes or None) or raise
    LibBinError for the first variant's failure when none fits."""
    first_err: LibBinError | None = None
    for tail in _tails_for(kind):
        for as_str, extra in ((False, True), (False, False), (True, True), (True, False)):
            r = Reader(blob)
            try:
                fmt = r.str("fmt")
                funcs = _fmap(r, as_str, extra)
                details, payload = TAILS[tail](r)
            except LibBinError as e:
                if first_err is None:
                    first_err = e
                continue
            if r.pos != len(blob):
                if first_err is None:
                    first_err = LibBinError(r.pos, f"{len(blob) - r.pos} bytes left over")
                continue
            out: dict[str, Any] = {"format": fmt, "functions": funcs}
            out.update(details)
            if as_str or not extra:
                out["layout"] = ("dtype strings" if as_str else "dtype structs") + (
                    "" if extra else ", no arg_extra_tags"
                )
            return out, payload
    raise first_err or LibBinError(0, "empty blob")


def preview(data: bytes | bytearray | memoryview) -> dict[str, str]:
    head = bytes(data[:PREVIEW])
    return {"hex": head.hex(), "ascii": "".join(chr(c) if 32 <= c < 127 else "." for c in head)}


def analyze_payload(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """What a GPU payload is: an ELF cubin (with its sm_XX), a fatbin, PTX or
    other text, or opaque bytes."""
    b = bytes(data[:64])
    if b[:4] == b"\x7fELF" and len(b) >= 52:
        le = b[5] == 1
        e = "<" if le else ">"
        machine = struct.unpack_from(e + "H", b, 18)[0]
        flags = struct.unpack_from(e + "I", b, 48 if b[4] == 2 else 36)[0] if len(b) >= 52 else 0
        info: dict[str, Any] = {"type": "elf", "e_machine": machine}
        if machine == EM_CUDA:
            info["type"] = "cubin"
            # ABI version 8+ keeps the SM number in bits 8..15, older in bits 0..7.
            sm = (flags >> 8) & 0xFF if b[8] >= 8 else flags & 0xFF
            info["arch"] = f"sm_{sm}"
        return info
    if len(b) >= 4 and struct.unpack_from("<I", b, 0)[0] == FATBIN_MAGIC:
        return {"type": "fatbin"}
    text = bytes(data[:4096])
    m = re.search(rb"\.target\s+(sm_\w+)", text)
    if m:
        return {"type": "ptx", "arch": m.group(1).decode()}
    if text and all(c in b"\t\n\r" or 32 <= c < 127 for c in text[:256]):
        return {"type": "text"}
    return {"type": "binary"}


def decode(
    kind: str, blob: bytes, base_offset: int, errors: list[dict[str, Any]], index: int
) -> dict[str, Any]:
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
            d = {"size": len(blob), "preview": preview(blob)}
            return d
        details.pop(PARTS, None)
        if "payload_offset" in details:
            details["payload_offset"] += base_offset  # relative to the symbol, like errors
        if payload is not None:
            details["payload"] = analyze_payload(payload)
        return details
    return {"size": len(blob), "preview": preview(blob)}


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
