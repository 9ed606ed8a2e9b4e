"""ml_dtypes element types (bfloat16, float8_*) as NumPy dtypes of DLPack types.

NumPy has no bfloat16 or float8; the ml_dtypes package adds them as NumPy
dtypes. This module maps them to DLPack (code, bits) and back, and reads and
writes .npy files of them:

* np.save writes their arrays with a raw descr: "<V2" (bfloat16), "<V1" (every
  one-byte type but one) and "<f1" (float8_e5m2, which NumPy itself cannot
  read back). A raw 2-byte element is read as bfloat16 and a raw 1-byte one
  as float8_e4m3fn unless the user names the type with the file
  (`x.npy@float8_e5m2`); the assumption is reported.
* Files we write name the type in the descr ("bfloat16"), so `np.load` with
  ml_dtypes imported gives back the same type, and so does tvmffi.

Only whole-byte types are mapped: DLPack packs float4/float6/int4 elements
below a byte, while ml_dtypes stores one per byte.
"""

from __future__ import annotations

import ast
from typing import IO, Any

from ..abi.dtypes import FIXED_BITS, format_dtype, kDLBfloat, parse_dtype
from ..errors import FormatError, InputError

#: ml_dtypes type name -> DLPack (type code, bits): bfloat16 and the 8-bit
#: floats. ml_dtypes names them as DLPack does (abi.dtypes).
ML_TYPES: dict[str, tuple[int, int]] = {
    name: parse_dtype(name)[:2]
    for name in [format_dtype(kDLBfloat, 16, 1)] + [n for n, b in FIXED_BITS.items() if b == 8]
}
_BY_DL = {v: k for k, v in ML_TYPES.items()}
#: The type assumed for a raw element of this many bytes in a .npy file.
RAW_DEFAULTS = {2: "bfloat16", 1: "float8_e4m3fn"}
#: float8_e5m2 claims NumPy kind "f" and 1 byte, so np.save writes "<f1".
F1_TYPE = "float8_e5m2"

_MAGIC = b"\x93NUMPY"
_MAX_HEADER = 1 << 20


def available() -> bool:
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        return False
    return True


def np_dtype(name: str) -> Any:
    """The NumPy dtype of an ml_dtypes type name; InputError when ml_dtypes is missing."""
    import numpy as np

    try:
        import ml_dtypes
    except ImportError:
        raise InputError(
            f"dtype {name} needs the ml_dtypes package (pip install ml_dtypes)"
        ) from None
    return np.dtype(getattr(ml_dtypes, name))


def name_of_dl(code: int, bits: int, lanes: int) -> str | None:
    """The ml_dtypes name of a DLPack type, or None."""
    return _BY_DL.get((code, bits)) if lanes == 1 else None


def dl_of_numpy(dtype: Any) -> tuple[int, int, int] | None:
    """DLPack (code, bits, lanes) of an ml_dtypes NumPy dtype, or None."""
    if getattr(dtype, "kind", None) not in ("V", "f") or getattr(dtype, "fields", None):
        return None
    got = ML_TYPES.get(str(getattr(dtype, "name", "")))
    if got is None or dtype.itemsize * 8 != got[1]:
        return None
    return (got[0], got[1], 1)


def is_ml(dtype: Any) -> bool:
    return dl_of_numpy(dtype) is not None


# ---------------------------------------------------------------------------
# .npy headers


def read_npy_header(
    fp: IO[bytes], what: str, override: str | None = None
) -> tuple[tuple[int, ...], bool, Any, str | None]:
    """Read a .npy header -> (shape, fortran_order, dtype, note). `override`
    names the element type for a raw descr ("<V2", "<V1", "<f1"); without it
    the type is assumed and `note` says which. Headers NumPy reads itself are
    read by NumPy."""
    import numpy as np

    head = fp.read(8)
    if len(head) < 8 or head[:6] != _MAGIC:
        raise FormatError(f"{what}: not a .npy file")
    major = head[6]
    size_bytes = 2 if major == 1 else 4 if major in (2, 3) else 0
    if not size_bytes:
        raise FormatError(f"{what}: unsupported .npy version {major}.{head[7]}")
    n = int.from_bytes(fp.read(size_bytes), "little")
    if n > _MAX_HEADER:
        raise FormatError(f"{what}: .npy header of {n} bytes")
    raw = fp.read(n)
    try:
        d = ast.literal_eval(raw.decode("utf-8" if major == 3 else "latin1"))
        descr, fortran, shape = d["descr"], d["fortran_order"], d["shape"]
        if not (
            isinstance(shape, tuple)
            and all(isinstance(x, int) and x >= 0 for x in shape)
            and isinstance(fortran, bool)
        ):
            raise ValueError("bad shape or fortran_order")
    except (ValueError, SyntaxError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise FormatError(f"{what}: bad .npy header ({e})") from None
    dtype, note = _dtype_of_descr(descr, override, what)
    if dtype is None:
        try:
            dtype = np.dtype(_descr_for_numpy(descr))
        except (TypeError, ValueError) as e:
            raise FormatError(f"{what}: bad .npy dtype {descr!r} ({e})") from None
        if override is not None:
            raise InputError(
                f"{what}@{override}: the file holds {dtype}, not raw elements; "
                "@DTYPE names the type of raw (void) elements only"
            )
    return shape, fortran, dtype, note


def _descr_for_numpy(descr: Any) -> Any:
    if isinstance(descr, list):
        return [tuple(x) if isinstance(x, list) else x for x in descr]
    return descr


def _dtype_of_descr(descr: Any, override: str | None, what: str) -> tuple[Any, str | None]:
    """(dtype, note) for ml_dtypes descrs; (None, None) for everything else."""
    if not isinstance(descr, str):
        return None, None
    if descr in ML_TYPES:  # written by tvmffi (or anyone naming the type)
        return np_dtype(descr), None
    raw = descr.lstrip("<>|=")
    if raw not in ("V2", "V1", "f1"):
        return None, None
    size = int(raw[1:])
    if override is not None:
        if override not in ML_TYPES:
            raise InputError(f"{what}@{override}: not an ml_dtypes type ({', '.join(ML_TYPES)})")
        if ML_TYPES[override][1] != size * 8:
            raise InputError(
                f"{what}@{override}: the file's elements are {size} byte"
                f"{'s' if size > 1 else ''}, {override} needs "
                f"{ML_TYPES[override][1] // 8}"
            )
        return np_dtype(override), None
    name = F1_TYPE if raw == "f1" else RAW_DEFAULTS[size]
    # (`what` may be a private copy of the user's file: the note names no path.)
    return np_dtype(name), (
        f"raw {size}-byte .npy elements ({descr}) read as {name}; "
        "name another type with FILE.npy@DTYPE"
    )


def npy_header(arr: Any) -> bytes:
    """A version 1.0 .npy header for an ml_dtypes array that names its type,
    so that np.load (with ml_dtypes imported) returns the same type."""
    name = str(arr.dtype.name)
    fortran = bool(arr.flags.f_contiguous and not arr.flags.c_contiguous)
    text = f"{{'descr': '{name}', 'fortran_order': {fortran}, 'shape': {tuple(arr.shape)!r}, }}"
    pad = -(len(_MAGIC) + 4 + len(text) + 1) % 64
    body = (text + " " * pad + "\n").encode("latin1")
    return _MAGIC + b"\x01\x00" + len(body).to_bytes(2, "little") + body
