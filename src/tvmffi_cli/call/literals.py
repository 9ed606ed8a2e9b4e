"""Command-line value literals for `tvmffi call` and `tvmffi bench`.

The parent process turns the raw argument tail into a list of *argument specs*
(call/specs.py) such as IntArg(5) or TensorArg("npy", path="/abs/x.npy"). The
child process (call/task.py) turns specs into real values right before the
call, so big tensors are only ever loaded next to the library that uses them.
A positional argument is a Positional: its command-line text and the spec
guessed from it, so the child can re-read it by the function's type schema.

Nothing here imports numpy at module level: parsing the command line must stay
cheap; tensor loading (load_tensor) imports it when called.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from typing import IO, Any, List, Optional, Tuple, cast

# The dtype and device literals are the ABI's own spellings (abi/), re-exported
# here with the other literal parsers.
from ..abi.devices import format_device as device_str
from ..abi.devices import parse_device as parse_device
from ..abi.dtypes import canonical_dtype as canonical_dtype
from ..abi.dtypes import format_dtype as dtype_str
from ..abi.dtypes import parse_dtype as parse_dtype
from ..errors import FormatError, InputError
from .specs import (
    ArrayArg,
    BoolArg,
    BytesArg,
    FloatArg,
    IntArg,
    MapArg,
    NoneArg,
    Positional,
    Spec,
    StrArg,
    TensorArg,
)

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# A NumPy array; numpy is imported lazily, so it is not named in annotations.
Array = Any

# ---------------------------------------------------------------------------
# scalars

_INT_RE = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|[0-9][0-9_]*)")
_FLOAT_RE = re.compile(
    r"[+-]?([0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*|[0-9][0-9_]*)([eE][+-]?[0-9]+)?"
)


def parse_int(text: str) -> int:
    t = text.strip()
    if not _INT_RE.fullmatch(t):
        raise InputError(f"bad int {text!r}")
    try:
        v = int(t, 0) if not re.fullmatch(r"[+-]?0[0-9_]+", t) else int(t.replace("_", ""), 10)
    except ValueError:
        # The pattern lets through what int() refuses: "0x_", "1__2", "1_", and
        # numbers past int()'s 4300-digit limit.
        if len(t) > 4000:
            raise InputError(f"int {_short(t)} is out of the int64 range") from None
        raise InputError(f"bad int {text!r}") from None
    if not INT64_MIN <= v <= INT64_MAX:
        raise InputError(f"int {text} is out of the int64 range")
    return v


def parse_float(text: str) -> float:
    t = text.strip()
    try:
        return float(t)
    except ValueError:
        raise InputError(f"bad float {text!r}") from None


def float_spec(v: float) -> FloatArg:
    # JSON has no NaN/inf; repr() round-trips every double exactly.
    return FloatArg(repr(float(v)))


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise InputError(f"bad bool {text!r} (true/false, 1/0, yes/no)")


def parse_bytes(text: str, cwd: Optional[str] = None) -> BytesArg:
    """Hex ('00ff10', '0x00ff', 'de ad be ef') or @file -> a bytes spec."""
    if text.startswith("@"):
        path = _abspath(text[1:], cwd)
        if not os.path.isfile(path):
            raise InputError(f"--bytes {text}: no such file")
        if not os.access(path, os.R_OK):
            raise InputError(f"--bytes {text}: file is not readable")
        return BytesArg(path=path)
    t = re.sub(r"[\s:_]", "", text)
    if t[:2] in ("0x", "0X"):
        t = t[2:]
    if len(t) % 2 or not re.fullmatch(r"[0-9a-fA-F]*", t):
        raise InputError(f"bad --bytes {text!r}: give an even number of hex digits or @file")
    return BytesArg(hex=t.lower())


# ---------------------------------------------------------------------------
# tensors

TENSOR_FILLS = ("zeros", "ones", "arange", "rand")
_TENSOR_LIT_RE = re.compile(r"([A-Za-z0-9_]+)\[([0-9,\s]*)\](?::([a-z]+))?")
# Bigger tensor literals than this are a typo more often than a wish; the limit
# also keeps a literal from asking the child for an absurd allocation.
MAX_LITERAL_BYTES = 1 << 40


def _abspath(p: str, cwd: Optional[str] = None) -> str:
    if "\0" in p:
        # No file name holds a NUL (os functions raise ValueError on one); a
        # JSON string converted to a tensor or bytes path can carry it.
        raise InputError(f"path {_short(p)} contains a NUL character")
    p = os.path.expanduser(p)
    return os.path.abspath(os.path.join(cwd, p) if cwd and not os.path.isabs(p) else p)


def parse_tensor_literal(text: str) -> Optional[TensorArg]:
    """'float32[2,3]:zeros' -> a tensor spec, or None when `text` is not of that form."""
    m = _TENSOR_LIT_RE.fullmatch(text.strip())
    if not m:
        return None
    dtype_txt, dims_txt, fill = m.groups()
    code, bits, lanes = parse_dtype(dtype_txt)
    dims = [d.strip() for d in dims_txt.split(",")] if dims_txt.strip() else []
    if any(not d for d in dims):
        raise InputError(f"bad tensor literal {text!r}: empty dimension")
    # The pattern admits "2 3" (space inside one dimension) and digit runs
    # past int()'s limit; both are bad dimensions, not a ValueError.
    if any(not re.fullmatch(r"[0-9]{1,19}", d) for d in dims):
        raise InputError(
            f"bad tensor literal {_short(text)}: each dimension is a number below 10**19"
        )
    shape = [int(d) for d in dims]
    if len(shape) > 32:
        raise InputError(f"bad tensor literal {text!r}: more than 32 dimensions")
    fill = fill or "zeros"
    if fill not in TENSOR_FILLS:
        raise InputError(
            f"bad tensor literal {text!r}: fill must be one of {', '.join(TENSOR_FILLS)}"
        )
    n = 1
    for d in shape:
        n *= d
    if n * max(bits * lanes, 8) // 8 > MAX_LITERAL_BYTES:
        raise InputError(f"tensor literal {text!r} is larger than 1 TiB")
    numpy_dtype_name(code, bits, lanes, what=f"tensor literal {text!r}")
    return TensorArg("literal", dtype=dtype_str(code, bits, lanes), shape=tuple(shape), fill=fill)


def numpy_dtype_name(code: int, bits: int, lanes: int, what: str = "tensor") -> str:
    """The NumPy dtype name holding elements of this DLPack type; InputError when none."""
    from ..ffi import mldtypes

    ml = mldtypes.name_of_dl(code, bits, lanes)
    if ml is not None:
        return ml
    if lanes == 1:
        if code == 0 and bits in (8, 16, 32, 64):
            return f"int{bits}"
        if code == 1 and bits in (8, 16, 32, 64):
            return f"uint{bits}"
        if code == 2 and bits in (16, 32, 64):
            return f"float{bits}"
        if code == 5 and bits in (64, 128):
            return f"complex{bits}"
        if code == 6 and bits == 8:
            return "bool"
    raise InputError(
        f"{what}: dtype {dtype_str(code, bits, lanes)} has no NumPy equivalent "
        "(use a .npy file of a NumPy dtype)"
    )


#: A device suffix of a tensor: x.npy@cuda:0, float32[4]:rand@cuda (cuda:0).
_DEVICE_SUFFIX_RE = re.compile(r"(.+)@([A-Za-z_]+(?::[0-9]+)?)")


def split_device(text: str, cwd: Optional[str] = None) -> tuple[str, Optional[str]]:
    """(tensor text, "cuda:N" or None): a trailing @DEVICE names where the
    tensor is placed (only cpu and cuda are), unless the whole text is an
    existing file or the suffix is not a device name (x.npy@bfloat16)."""
    from ..abi.devices import DEVICE_TYPE_CODES, kDLCPU, kDLCUDA

    m = _DEVICE_SUFFIX_RE.fullmatch(text.strip())
    if not m or m.group(2).split(":")[0].lower() not in DEVICE_TYPE_CODES:
        return text, None
    if os.path.exists(_abspath(text, cwd)):
        return text, None
    dev_type, dev_id = parse_device(m.group(2))
    if dev_type == kDLCPU:
        return m.group(1), None
    if dev_type != kDLCUDA:
        raise InputError(
            f"tensor {_short(text)}: a tensor is placed on cpu or cuda[:N], not {m.group(2)}"
        )
    return m.group(1), device_str(dev_type, dev_id)


def parse_tensor(text: str, cwd: Optional[str] = None) -> TensorArg:
    """--tensor value: x.npy, x.npz:key, or a literal like float32[2,3]:arange;
    any of them with @cuda[:N] to place the tensor on a CUDA device."""
    body, device = split_device(text, cwd)
    if device is not None:
        return dataclasses.replace(parse_tensor(body, cwd), device=device)
    text = body  # "@cpu" dropped
    lit = parse_tensor_literal(text)
    if lit is not None:
        return lit
    path_txt, key = text, None
    if not os.path.exists(_abspath(text, cwd)):
        # x.npz:key (the key may itself hold colons, the path rarely does)
        m = re.fullmatch(r"(.+?\.npz):(.+)", text)
        if m:
            path_txt, key = m.group(1), m.group(2)
        # x.npy@bfloat16: the ml_dtypes type of a file's raw (void) elements
        m = re.fullmatch(r"(.+?\.np[yz](?::.+)?)@([A-Za-z0-9_]+)", text)
        if m:
            return dataclasses.replace(parse_tensor(m.group(1), cwd), raw_dtype=m.group(2))
    path = _abspath(path_txt, cwd)
    if not os.path.isfile(path):
        if re.fullmatch(r"[A-Za-z0-9_]+\[.*", text):
            raise InputError(f"bad tensor literal {text!r} (example: float32[2,3]:zeros)")
        raise InputError(f"--tensor {text}: no such file")
    if not os.access(path, os.R_OK):
        raise InputError(f"--tensor {text}: file is not readable")
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic == b"\x93NUMPY":
        if key is not None:
            raise InputError(f"--tensor {text}: a .npy file has no keys")
        return TensorArg("npy", path=path)
    if magic[:4] == b"PK\x03\x04":
        if key is None:
            keys = npz_keys(path)
            if len(keys) != 1:
                raise InputError(
                    f"--tensor {text}: pick one array with {path_txt}:KEY "
                    f"(keys: {', '.join(keys) or 'none'})"
                )
            key = keys[0]
        elif key not in npz_keys(path):
            raise InputError(
                f"--tensor {text}: no array {key!r} in {path_txt} "
                f"(keys: {', '.join(npz_keys(path)) or 'none'})"
            )
        return TensorArg("npz", path=path, key=key)
    raise FormatError(f"--tensor {text}: not a .npy or .npz file")


def npz_keys(path: str) -> List[str]:
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return [n[:-4] for n in z.namelist() if n.endswith(".npy")]
    except (zipfile.BadZipFile, OSError) as e:
        raise FormatError(f"{path}: not a readable .npz file ({e})") from None


def _npy_header_ml(
    fp: IO[bytes], what: str, spec: TensorArg
) -> tuple[tuple[int, ...], bool, Any, str | None]:
    """Read a .npy header, ml_dtypes files included (raw "<V2"/"<V1"/"<f1"
    descrs, or one naming the type) -> (shape, fortran, dtype, note)."""
    from ..ffi import mldtypes

    return mldtypes.read_npy_header(fp, what, spec.raw_dtype)


def _check_plain_dtype(dtype: Any, what: str) -> None:
    if dtype.hasobject:
        raise FormatError(f"{what}: object arrays are not supported (they need pickle)")
    if dtype.fields is not None or dtype.subdtype is not None:
        raise FormatError(f"{what}: structured dtypes have no DLPack equivalent")


def load_tensor(spec: TensorArg) -> Array:
    """Materialize a tensor spec as a NumPy array (imports numpy)."""
    return read_tensor(spec)[0]


def read_tensor(spec: TensorArg) -> Tuple[Array, Optional[str]]:
    """(the NumPy array of a tensor spec, what was assumed reading its file:
    e.g. the ml_dtypes type of raw .npy elements, or None).

    .npy files are mapped copy-on-write: a kernel that writes in place changes
    private pages, never the file, and untouched pages cost no memory."""
    import numpy as np

    src = spec.source
    if src == "literal":
        return make_literal_tensor(spec), None
    path = str(spec.path)
    key = str(spec.key)
    if src == "npy":
        with open(path, "rb") as f:
            shape, fortran, dtype, assumed = _npy_header_ml(f, path, spec)
            offset = f.tell()
            size = os.fstat(f.fileno()).st_size
        _check_plain_dtype(dtype, path)
        need = dtype.itemsize * _prod(shape)
        if offset + need > size:
            raise FormatError(
                f"{path}: header says {need} data bytes, the file holds {size - offset}"
            )
        if need == 0:
            return np.zeros(shape, dtype=dtype, order="F" if fortran else "C"), assumed
        mapped = np.memmap(
            path,
            dtype=dtype,
            mode="c",
            offset=offset,
            shape=tuple(shape),
            order="F" if fortran else "C",
        )
        return mapped, assumed
    if src == "npz":
        import zipfile

        try:
            with zipfile.ZipFile(path) as z:
                info = z.getinfo(key + ".npy")
                with z.open(info) as f:
                    shape, fortran, dtype, assumed = _npy_header_ml(f, f"{path}:{key}", spec)
                    _check_plain_dtype(dtype, f"{path}:{key}")
                    need = dtype.itemsize * _prod(shape)
                    # The uncompressed member size bounds the allocation: a header
                    # claiming more data than the member holds is rejected first.
                    if need > info.file_size:
                        raise FormatError(
                            f"{path}:{key}: header says {need} data "
                            f"bytes, the member holds {info.file_size}"
                        )
                    arr = np.empty(_prod(shape), dtype=dtype)
                    view = memoryview(
                        cast(Any, arr.view(np.uint8).reshape(-1))
                    )  # numpy types no __buffer__ before 3.12
                    got = 0
                    while got < need:
                        n = cast(zipfile.ZipExtFile, f).readinto(
                            view[got : got + (1 << 24)]
                        )  # what z.open() returns
                        if not n:
                            raise FormatError(f"{path}:{key}: truncated array data")
                        got += n
        except (KeyError, zipfile.BadZipFile, OSError) as e:
            raise FormatError(f"{path}: cannot read array {key!r} ({e})") from None
        return arr.reshape(shape, order="F" if fortran else "C"), assumed
    raise InputError(f"unknown tensor source {src!r}")


def _prod(shape: Any) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def make_literal_tensor(spec: TensorArg) -> Array:
    import numpy as np

    from ..ffi import mldtypes

    code, bits, lanes = parse_dtype(str(spec.dtype))
    name = numpy_dtype_name(code, bits, lanes)
    dt = mldtypes.np_dtype(name) if name in mldtypes.ML_TYPES else np.dtype(name)
    shape = tuple(spec.shape or ())
    fill = spec.fill or "zeros"
    try:
        if fill == "zeros":
            return np.zeros(shape, dtype=dt)  # calloc: pages cost nothing until written
        if fill == "ones":
            return np.ones(shape, dtype=dt)
        if fill == "arange":
            n = _prod(shape)
            if dt == np.bool_:
                return (np.arange(n) % 2).astype(dt).reshape(shape)
            return np.arange(n).astype(dt).reshape(shape)
        if fill == "rand":
            # Fixed seed: the same command line gives the same numbers.
            rng = np.random.default_rng(0)
            if dt.kind == "f" or mldtypes.is_ml(dt):
                return rng.random(shape).astype(dt)
            if dt.kind == "c":
                return (rng.random(shape) + 1j * rng.random(shape)).astype(dt)
            if dt.kind == "b":
                return rng.integers(0, 2, shape).astype(dt)
            info = np.iinfo(dt)
            return rng.integers(
                max(info.min, -100), min(info.max, 100), shape, endpoint=True
            ).astype(dt)
    except MemoryError:
        raise InputError(f"tensor literal {spec.dtype}{list(shape)}: not enough memory") from None
    raise InputError(f"unknown tensor fill {fill!r}")


# ---------------------------------------------------------------------------
# JSON values -> specs


def json_to_spec(v: object, where: str = "value") -> Spec:
    """A decoded JSON value -> spec: list -> Array, object -> Map, nested."""
    if v is None:
        return NoneArg()
    if isinstance(v, bool):
        return BoolArg(v)
    if isinstance(v, int):
        return IntArg(int64(v, where))
    if isinstance(v, float):
        return float_spec(v)
    if isinstance(v, str):
        return StrArg(v)
    if isinstance(v, list):
        return ArrayArg(tuple(json_to_spec(x, where) for x in v))
    if isinstance(v, dict):
        return MapArg(tuple((StrArg(str(k)), json_to_spec(x, where)) for k, x in v.items()))
    raise InputError(f"{where}: unsupported JSON value {v!r}")


def int64(v: int, where: str = "value") -> int:
    """v, when it is in the int64 range (InputError otherwise)."""
    if not INT64_MIN <= v <= INT64_MAX:
        raise InputError(f"{where}: int {v} is out of the int64 range")
    return v


def parse_json(text: str, where: str = "--value") -> Any:
    try:
        v = json.loads(text, parse_constant=_json_constant)
    except ValueError as e:
        raise InputError(f"{where} {_short(text)}: not valid JSON ({e})") from None
    return v


def _json_constant(name: str) -> float:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def _short(text: str, n: int = 40) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def parse_shape(text: str) -> List[int]:
    """'2,3' / '[2,3]' / '' -> list of ints."""
    t = text.strip()
    if t.startswith("["):
        v = parse_json(t, "--shape")
        if not isinstance(v, list):
            raise InputError(f"bad shape {text!r}")
        items = v
    else:
        items = [x for x in re.split(r"[,\sx]+", t) if x]
    out = []
    for x in items:
        if isinstance(x, bool):
            raise InputError(f"bad shape {text!r}: dimensions are integers")
        try:
            d = x if isinstance(x, int) else parse_int(str(x))
        except InputError:
            raise InputError(f"bad shape {text!r}: dimensions are integers") from None
        if not INT64_MIN <= d <= INT64_MAX:
            raise InputError(f"bad shape {text!r}: dimension out of the int64 range")
        out.append(d)
    return out


# ---------------------------------------------------------------------------
# positional inference

_WORDS_NONE = {"none", "null"}


def infer_positional(text: str, cwd: Optional[str] = None) -> Positional:
    """Guess a positional argument's type from its text (no schema known):
    int, float, true/false, none, JSON list/object, "quoted" string, an
    existing .npy/.npz file or a tensor literal -> tensor, otherwise str."""
    t = text.strip()
    low = t.lower()
    spec: Spec
    if low in _WORDS_NONE:
        spec = NoneArg()
    elif low in ("true", "false"):
        spec = BoolArg(low == "true")
    elif _INT_RE.fullmatch(t):
        spec = IntArg(parse_int(t))
    elif _FLOAT_RE.fullmatch(t):
        spec = float_spec(parse_float(t))
    elif t[:1] in ("[", "{"):
        lit = parse_tensor_literal(t) if t[:1] == "[" else None
        spec = lit or json_to_spec(_json_or_hint(t), "argument")
    elif len(t) >= 2 and t[0] == '"' and t[-1] == '"':
        spec = StrArg(str(_json_or_hint(t)))  # one JSON string (json.loads refuses more)
    elif _looks_like_tensor(t, cwd):
        spec = parse_tensor(t, cwd)
    else:
        spec = StrArg(text)
    return Positional(text, spec)


def _json_or_hint(t: str) -> Any:
    try:
        return json.loads(t, parse_constant=_json_constant)
    except ValueError as e:
        raise InputError(
            f"argument {_short(t)} looks like JSON but is not ({e}); pass text with --str"
        ) from None


def _looks_like_tensor(t: str, cwd: Optional[str]) -> bool:
    try:
        t = split_device(t, cwd)[0]
    except InputError:
        return True  # x.npy@rocm: a tensor, refused with the reason by parse_tensor
    if _TENSOR_LIT_RE.fullmatch(t) and t.split("[", 1)[0].replace("_", "").isalnum():
        try:
            parse_dtype(t.split("[", 1)[0])
            return True
        except InputError:
            return False
    if t.endswith((".npy", ".npz")) and os.path.isfile(_abspath(t, cwd)):
        return True
    m = re.fullmatch(r"(.+?\.np[yz](?::.+)?)@[A-Za-z0-9_]+", t)  # x.npy@bfloat16
    if m and not os.path.exists(_abspath(t, cwd)):
        t = m.group(1)
        if t.endswith((".npy", ".npz")) and os.path.isfile(_abspath(t, cwd)):
            return True
    m = re.fullmatch(r"(.+?\.npz):(.+)", t)
    return bool(m and os.path.isfile(_abspath(m.group(1), cwd)))
