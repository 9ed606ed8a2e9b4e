"""DLPack data types, defined once: type codes, names, parse and format.

    parse_dtype("float16x2") == (2, 16, 2)     format_dtype(2, 16, 2) == "float16x2"

The spelling is the official runtime's (its DataType string conversion):
  int/uint/float/bfloat/complex<bits>   "int32", "bfloat16" ("int", "uint" and
                                        "float" alone mean 32 bits)
  bool (8 bits), bool<bits> otherwise   "bool", "bool16"
  handle                                "handle" (printed for any bits and
                                        lanes; "handle64" is accepted)
  names that carry their width          "float8_e4m3fn", "float4_e2m1fn"
  custom[<code>]<bits>                  codes >= 129 ("custom[200]32"); the
                                        runtimes print a registered name there
  void                                  (3, 0, 0)
followed by the lanes: "x<n>" for 1 < n < 2**15, "xvscalex<n>" for the
scalable vectors, whose lanes field holds -n as an int16. DLDataType keeps
lanes as uint16; the triples here do too.
"""

from __future__ import annotations

import re

from ..errors import InputError

kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLOpaqueHandle = 3
kDLBfloat = 4
kDLComplex = 5
kDLBool = 6

#: DLPack type code of every named type (DLDataTypeCode).
DTYPE_CODES: dict[str, int] = {
    "int": kDLInt,
    "uint": kDLUInt,
    "float": kDLFloat,
    "handle": kDLOpaqueHandle,
    "bfloat": kDLBfloat,
    "complex": kDLComplex,
    "bool": kDLBool,
    "float8_e3m4": 7,
    "float8_e4m3": 8,
    "float8_e4m3b11fnuz": 9,
    "float8_e4m3fn": 10,
    "float8_e4m3fnuz": 11,
    "float8_e5m2": 12,
    "float8_e5m2fnuz": 13,
    "float8_e8m0fnu": 14,
    "float6_e2m3fn": 15,
    "float6_e3m2fn": 16,
    "float4_e2m1fn": 17,
}
#: type code -> name
DTYPE_NAMES: dict[int, str] = {v: k for k, v in DTYPE_CODES.items()}
#: Names whose bit width is part of the name (float8_e4m3fn is 8 bits).
FIXED_BITS: dict[str, int] = {
    n: int(n[5 : n.index("_")]) for n in DTYPE_CODES if n.startswith("float") and "_" in n
}
#: Type codes from here on are custom types (kDLExtDev-style extension codes).
CUSTOM_CODE_MIN = 129
#: Largest "x<n>" lane count; larger uint16 lanes are the scalable-vector encoding.
MAX_LANES = 0x7FFF

VOID = (kDLOpaqueHandle, 0, 0)
_BAD = "bad dtype {!r} (examples: float32, bfloat16, int8x4, bool)"
_WIDTH = re.compile(r"(int|uint|float|bfloat|complex|bool|handle)([0-9]+)")
_CUSTOM = re.compile(r"custom\[([0-9]+)\]([0-9]+)")
_LANES = re.compile(r"(.+?)x(vscalex)?([0-9]+)")


def _small_int(digits: str) -> int:
    """int() of an ASCII digit string, saturated at 10**18 (above every range checked)."""
    return int(digits) if len(digits) <= 18 else 10**18


def _parse_base(base: str) -> tuple[int, int] | None:
    """'float32' -> (code, bits), or None when `base` names no type."""
    if base == "bool":
        return (kDLBool, 8)
    if base == "handle":
        return (kDLOpaqueHandle, 64)
    if base in FIXED_BITS:
        return (DTYPE_CODES[base], FIXED_BITS[base])
    if base in ("int", "uint", "float"):  # shorthands for the 32-bit types
        return (DTYPE_CODES[base], 32)
    m = _WIDTH.fullmatch(base)
    if m and m.group(1) == "handle":
        # Printed as "handle" whatever its width: only the 64-bit one round-trips.
        return (kDLOpaqueHandle, 64) if m.group(2) == "64" else None
    if m:
        # A huge width is out of range anyway (parse_dtype says so); int() of
        # thousands of digits would raise ValueError instead.
        return (DTYPE_CODES[m.group(1)], _small_int(m.group(2)))
    m = _CUSTOM.fullmatch(base)
    if m and CUSTOM_CODE_MIN <= _small_int(m.group(1)) <= 255:
        return (int(m.group(1)), _small_int(m.group(2)))
    return None


def parse_dtype(text: str) -> tuple[int, int, int]:
    """'float32' / 'bfloat16' / 'int8x4' / 'bool' / 'float8_e4m3fn' -> (code, bits, lanes);
    InputError for anything else."""
    t = text.strip()
    if t == "void":
        return VOID
    lanes = 1
    got = _parse_base(t)
    if got is None:
        # "complex64" holds an x too, so lanes are only split off when the whole
        # text is not a type name.
        m = _LANES.fullmatch(t)
        got = _parse_base(m.group(1)) if m else None
        if m is None or got is None or got[0] == kDLOpaqueHandle:  # no handle vectors
            raise InputError(_BAD.format(text))
        n = _small_int(m.group(3))
        if m.group(2):  # scalable: -n as int16
            if not 2 <= n <= 0x8000:
                raise InputError(f"bad dtype {text!r}: vscale factor must be 2..32768")
            lanes = 0x10000 - n
        else:
            if not 1 <= n <= MAX_LANES:
                raise InputError(f"bad dtype {text!r}: lanes must be 1..{MAX_LANES}")
            lanes = n
    code, bits = got
    if not 1 <= bits <= 255:
        raise InputError(f"bad dtype {text!r}: bits must be 1..255")
    return (code, bits, lanes)


def format_dtype(code: int, bits: int, lanes: int) -> str:
    """Text of a DLDataType (lanes as stored: uint16), the inverse of parse_dtype."""
    if (code, bits, lanes) == VOID:
        return "void"
    name = DTYPE_NAMES.get(code)
    if code == kDLOpaqueHandle:
        return "handle"  # the runtimes print neither bits nor lanes of a handle
    if code == kDLBool:
        base = "bool" if bits == 8 else f"bool{bits}"
    elif name is None:
        base = f"custom[{code}]{bits}" if code >= CUSTOM_CODE_MIN else f"code{code}_{bits}"
    elif name in FIXED_BITS:
        base = name
    else:
        base = f"{name}{bits}"
    lanes16 = lanes - 0x10000 if lanes >= 0x8000 else lanes
    if lanes16 > 1:
        return f"{base}x{lanes16}"
    if lanes16 < -1:
        return f"{base}xvscalex{-lanes16}"
    return base


def canonical_dtype(text: str) -> str:
    """The official spelling of a dtype text ("float" -> "float32")."""
    return format_dtype(*parse_dtype(text))
