"""Fuzz targets shared by bench/fuzz.py (the campaign) and tests/test_fuzz.py
(the bounded CI run).

Every target takes one `bytes` input, so an input that found a bug can be
saved as a file and replayed the same way by either engine. Text targets
decode their bytes as UTF-8 with surrogateescape, which is how Python hands
command-line arguments over on Linux (lone surrogates included).

The contract checked (`check`): a target returns, or raises a
tvmffi_cli.errors.TvmffiError. Anything else escaping is a finding, and so is
a TvmffiError that merely wraps a MemoryError or RecursionError (the parsers
must never allocate or recurse by an untrusted size; the binary-reader safety net
would otherwise hide that). Other exceptions that a TvmffiError wraps are
counted as "masked": not a contract break, but a reader bug the safety net
caught.

Hypothesis strategies build inputs the smart way: valid inputs (library_bin
images, GPU module blobs, type schemas, literals, fixture libraries) mutated
at the places that matter (headers, symbol tables, the embedded library_bin,
counts and sizes set to boundary values), next to plain random data.
"""

import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG_DIR = "tvmffi_cli"

# Integers that sit on the boundaries parsers get wrong.
INTERESTING_U64 = (
    0,
    1,
    2,
    7,
    8,
    15,
    16,
    0x7F,
    0x80,
    0xFF,
    0x100,
    0xFFFF,
    0x10000,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFF,
    0x100000000,
    1 << 40,
    (1 << 63) - 1,
    1 << 63,
    (1 << 64) - 1,
    (1 << 64) - 8,
)


class FuzzTimeout(BaseException):
    """One input ran longer than the per-input limit (a hang or a blow-up)."""


# ---------------------------------------------------------------------------
# the contract


def _project_frame(tb):
    """(relative file, line, function) of the innermost frame inside tvmffi_cli."""
    best = None
    for fs in traceback.extract_tb(tb):
        parts = Path(fs.filename).parts
        if PKG_DIR in parts:
            rel = "/".join(parts[len(parts) - parts[::-1].index(PKG_DIR) - 1 :])
            best = (rel, fs.lineno, fs.name)
    return best


def _wrapped(exc):
    """What a TvmffiError hides, as (kind, exception) or None.

    ("finding", e): a MemoryError or RecursionError anywhere under it (an
    allocation or recursion driven by the input, however it was caught).
    ("masked", e): a builtin exception (IndexError, struct.error, ...) it was
    raised while handling, without `from None`: a reader bug that a generic
    safety net turned into a FormatError. Deliberate conversions (`from None`,
    a library's own error type such as pefile's) are neither."""
    from tvmffi_cli.errors import TvmffiError

    seen, masked = set(), None
    e, suppressed = exc, False
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (MemoryError, RecursionError)) and e is not exc:
            if not (isinstance(e, RecursionError) and suppressed):
                return ("finding", e)
        if (
            masked is None
            and not suppressed
            and e is not exc
            and not isinstance(e, TvmffiError)
            and type(e).__module__ in ("builtins", "struct", "_struct")
        ):
            masked = ("masked", e)
        nxt = e.__cause__
        if nxt is None and not e.__suppress_context__:
            nxt = e.__context__
        elif nxt is None:
            # `from None`: a deliberate conversion; keep looking only for MemoryError.
            nxt, suppressed = e.__context__, True
        e = nxt
    return masked


class Outcome:
    __slots__ = ("kind", "key", "exc_type", "frame", "message", "trace")

    def __init__(self, kind, exc=None):
        self.kind = kind  # "ok" | "error" (project error) | "masked" | "finding"
        self.key = self.exc_type = self.frame = self.message = self.trace = None
        if exc is not None:
            self.exc_type = type(exc).__name__
            self.frame = _project_frame(exc.__traceback__)
            self.message = str(exc)[:300]
            where = ":".join(map(str, self.frame)) if self.frame else "<outside tvmffi_cli>"
            self.key = f"{self.exc_type} @ {where}"
            self.trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def check(target, data, timeout=5.0):
    """Run one input through `target` under the contract; returns an Outcome."""
    from tvmffi_cli.errors import TvmffiError

    def on_alarm(signum, frame):
        raise FuzzTimeout(f"input ran longer than {timeout} s")

    old = None
    if timeout:
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        target.run(data)
        return Outcome("ok")
    except TvmffiError as e:
        hidden = _wrapped(e)
        if hidden is None:
            return Outcome("error")
        # Report the inner exception: it names the real place of the bug.
        return Outcome(*hidden)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: B902 -- anything else escaping is the finding
        return Outcome("finding", e)
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _text(data):
    return bytes(data).decode("utf-8", "surrogateescape")


def _enc(text):
    """The bytes `_text` turns back into `text` (lone surrogates kept)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _jsonable(obj):
    # Output of every decoder ends up in `--json`: it must serialise.
    json.dumps(obj)


def _spec_round_trip(spec):
    """An argument spec crosses to the worker as JSON: it must come back the same."""
    from tvmffi_cli.call.specs import decode_spec, encode_spec

    if decode_spec(json.loads(json.dumps(encode_spec(spec)))) != spec:
        raise AssertionError(f"argument spec {spec!r} does not round-trip")


# ---------------------------------------------------------------------------
# seeds


def _fixturebuild():
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import fixturebuild
    finally:
        sys.path.pop(0)
    return fixturebuild


def _key(path, *parts):
    h = hashlib.sha256(Path(path).read_bytes())
    for extra in ("libbin_data.h",):
        p = Path(path).parent / extra
        if p.exists():
            h.update(p.read_bytes())
    for p in parts:
        h.update(p.encode())
    return h.hexdigest()[:12]


def _cache_dir():
    fb = _fixturebuild()
    d = Path(fb.BUILD) / "fuzz-seeds"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _run_quiet(cmd, env=None):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    return r.returncode == 0


def elf_seed_files():
    """ELF fixture libraries: the portable library (functions, metadata,
    library_bin, context symbols), the good and bad library_bin fixtures."""
    fb = _fixturebuild()
    out = []
    data_h = (ROOT / "fixtures" / "inspect" / "libbin_data.h").read_bytes()
    define = "LIBBIN_DATA=" + hashlib.sha256(data_h).hexdigest()[:12]
    for src in ("inspect/portable.c", "inspect/libbin_good.c", "inspect/libbin_bad.c"):
        try:
            out.append(fb.build(src, headers="none", link_runtime=False, defines=[define]))
        except Exception as e:  # no gcc: generated seeds still run
            print(f"fuzz: cannot build ELF seed {src}: {e}", file=sys.stderr)
    return out


def pe_seed_files():
    if not (shutil.which("x86_64-w64-mingw32-gcc") and shutil.which("x86_64-w64-mingw32-dlltool")):
        return []
    src = ROOT / "fixtures" / "inspect" / "portable.c"
    d = _cache_dir()
    out = d / f"portable-{_key(src, 'pe')}.dll"
    if not out.exists():
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "tvm_ffi.def").write_text(
                "LIBRARY tvm_ffi.dll\nEXPORTS\nTVMFFIErrorSetRaisedFromCStr\n"
            )
            ok = _run_quiet(
                [
                    "x86_64-w64-mingw32-dlltool",
                    "-d",
                    tmp / "tvm_ffi.def",
                    "-l",
                    tmp / "libtvm_ffi.dll.a",
                ],
                # dlltool (binutils 2.4x) leaves two temporary files behind: keep them in tmp.
                env=dict(os.environ, TMPDIR=str(tmp)),
            ) and _run_quiet(
                [
                    "x86_64-w64-mingw32-gcc",
                    "-shared",
                    "-O1",
                    "-s",
                    "-o",
                    tmp / "x.dll",
                    src,
                    tmp / "libtvm_ffi.dll.a",
                ]
            )
            if not ok:
                return []
            os.replace(tmp / "x.dll", out)
    return [out]


def macho_seed_files():
    if not shutil.which("clang"):
        return []
    src = ROOT / "fixtures" / "inspect" / "portable.c"
    d = _cache_dir()
    outs = []
    for arch in ("x86_64", "arm64"):
        out = d / f"portable-{arch}-{_key(src, arch)}.dylib"
        if not out.exists():
            tmp = out.with_name(out.name + f".tmp{os.getpid()}")
            cmd = [
                "clang",
                "-target",
                f"{arch}-apple-macos11",
                "-ffreestanding",
                "-O1",
                "-fuse-ld=lld",
                "-nostdlib",
                "-shared",
                "-Wl,-undefined,dynamic_lookup",
                "-o",
                tmp,
                src,
            ]
            if not _run_quiet(cmd):
                # No ld64.lld: an object file still has every load command we read.
                cmd = [
                    "clang",
                    "-target",
                    f"{arch}-apple-macos11",
                    "-ffreestanding",
                    "-O1",
                    "-c",
                    "-o",
                    tmp,
                    src,
                ]
                if not _run_quiet(cmd):
                    continue
            os.replace(tmp, out)
        outs.append(out)
    if len(outs) == 2:
        fat = d / f"portable-fat-{_key(src, 'fat')}.dylib"
        if not fat.exists():
            fat.write_bytes(
                make_fat(
                    [("x86_64", outs[0].read_bytes()), ("arm64", outs[1].read_bytes())], align=256
                )
            )
        outs.append(fat)
    return outs


def make_fat(slices, align=4096):
    """A fat Mach-O from thin images (big-endian header, aligned slices)."""
    cputypes = {"x86_64": 0x01000007, "arm64": 0x0100000C}
    header = struct.pack(">II", 0xCAFEBABE, len(slices))
    placed, off = [], align
    for arch, data in slices:
        header += struct.pack(
            ">iiIII",
            cputypes[arch],
            3 if arch == "x86_64" else 0,
            off,
            len(data),
            align.bit_length() - 1,
        )
        placed.append((off, data))
        off = (off + len(data) + align - 1) // align * align
    buf = bytearray(off)
    buf[: len(header)] = header
    for o, data in placed:
        buf[o : o + len(data)] = data
    return bytes(buf)


def tiny_macho():
    """A minimal 64-bit Mach-O dylib: one __TEXT segment with a __text section
    and an LC_SYMTAB with two exported symbols and one undefined one."""
    strtab = b"\0___tvm_ffi_f\0___tvm_ffi__library_bin\0_TVMFFIAnyViewToOwnedAny\0"
    text = b"\xc3" * 16 + libbin_blobs()[1][:48]
    ncmds_body = b""
    # LC_SEGMENT_64 with one section
    hdr_size = 32
    seg_size = 72 + 80
    symtab_size = 24
    text_off = hdr_size + seg_size + symtab_size
    symoff = text_off + len(text)
    stroff = symoff + 3 * 16
    seg = struct.pack(
        "<II16sQQQQiiII", 0x19, seg_size, b"__TEXT", 0, 0x1000, 0, stroff + len(strtab), 5, 5, 1, 0
    )
    sect = struct.pack(
        "<16s16sQQIIIIIIII",
        b"__text",
        b"__TEXT",
        0x400,
        len(text),
        text_off,
        0,
        0,
        0,
        0x80000400,
        0,
        0,
        0,
    )
    symtab = struct.pack("<IIIIII", 0x2, 24, symoff, 3, stroff, len(strtab))
    ncmds_body = seg + sect + symtab
    header = struct.pack("<IiiIIIII", 0xFEEDFACF, 0x01000007, 3, 6, 2, len(ncmds_body), 0, 0)
    syms = struct.pack("<IBBHQ", 1, 0x0F, 1, 0, 0x400)
    syms += struct.pack("<IBBHQ", 14, 0x0F, 1, 0, 0x410)
    syms += struct.pack("<IBBHQ", 38, 0x01, 0, 0, 0)
    return header + ncmds_body + text + syms + strtab


def tiny_pe():
    """A minimal PE32+ DLL image: DOS stub, headers and one .text section."""
    dos = b"MZ" + b"\0" * 58 + struct.pack("<I", 64)
    coff = struct.pack("<HHIIIHH", 0x8664, 1, 0, 0, 0, 240, 0x2022)
    opt = struct.pack(
        "<HBBIIIIIQIIHHHHHHIIIIHHQQQQII",
        0x20B,
        14,
        0,
        0x200,
        0,
        0,
        0x1000,
        0x1000,
        0x180000000,
        0x1000,
        0x200,
        6,
        0,
        0,
        0,
        6,
        0,
        0,
        0x2000,
        0x200,
        0,
        3,
        0x160,
        0x100000,
        0x1000,
        0x100000,
        0x1000,
        0,
        16,
    )
    opt += b"\0" * (16 * 8)
    sect = struct.pack("<8sIIIIIIHHI", b".text", 0x10, 0x1000, 0x200, 0x200, 0, 0, 0, 0, 0x60000020)
    head = dos + b"PE\0\0" + coff + opt + sect
    return head + b"\0" * (0x200 - len(head)) + b"\xc3" * 0x200


# An ELF64 header of a CUDA binary (EM_CUDA, ABI version 7, sm_80 in e_flags).
FAKE_CUBIN = (
    b"\x7fELF"
    + bytes([2, 1, 1, 0x33, 7])
    + bytes(7)
    + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, 0, 80, 64, 56, 0, 64, 0, 0)
)


def libbin_blobs():
    """Valid library_bin images: no module, the library alone, GPU modules of
    every layout variant, a custom kind, a deeper import tree."""
    from tvmffi_cli.binary import libbin

    cubin = FAKE_CUBIN
    blobs = [libbin.encode([], tree=[]), libbin.encode([("_lib", None)])]
    for b in gpu_blobs(cubin):
        blobs.append(libbin.encode([("_lib", None), (b[0], b[1])]))
    blobs.append(
        libbin.encode(
            [
                ("_lib", None),
                ("cuda", gpu_blobs(cubin)[0][1]),
                ("acme.custom", b"\x00\x01hello"),
                gpu_blobs(cubin)[-1],
            ],
            tree=[[1, 3], [2], [], []],
        )
    )
    blobs.append(libbin.encode([("acme", b"x" * 40), ("_lib", None)], tree=[[1], []]))
    return blobs


def gpu_blobs(cubin=FAKE_CUBIN):
    """(kind, blob) GPU modules in each layout the decoder knows."""
    from tvmffi_cli.binary import modformats

    def s(x):
        x = x.encode() if isinstance(x, str) else x
        return struct.pack("<Q", len(x)) + x

    funcs = [
        ("k0", [(2, 32, 1), (0, 64, 1), (3, 64, 1)], ["blockIdx.x", "threadIdx.x"], [0, 1, 0]),
        ("k1", [(4, 16, 4)], [], []),
    ]
    out = [
        ("cuda", modformats.encode_gpu("cubin", funcs, cubin)),
        ("rocm", modformats.encode_gpu("hsaco", funcs[:1], b"\x7fELF" + b"\1" * 60)),
        ("cuda", modformats.encode_gpu("ptx", [], b"//\n.version 7.0\n.target sm_80\n")),
    ]
    # dtype strings, no arg_extra_tags (older releases)
    old = (
        s("ptx")
        + struct.pack("<Q", 1)
        + s("k")
        + s("k")
        + struct.pack("<Q", 2)
        + s("float32")
        + s("int64")
        + struct.pack("<Q", 1)
        + s("threadIdx.x")
        + s(".target sm_70")
    )
    out.append(("cuda", old))
    # metal: source map tail
    metal = (
        s("metal")
        + struct.pack("<Q", 0)
        + struct.pack("<Q", 2)
        + s("k0")
        + s("kernel void k0(){}")
        + s("k1")
        + s("")
    )
    out.append(("metal", metal))
    # vulkan: shader map tail
    vk = (
        s("spirv")
        + struct.pack("<Q", 0)
        + struct.pack("<Q", 1)
        + s("main")
        + struct.pack("<I", 0)
        + struct.pack("<Q", 3)
        + struct.pack("<3I", 0x07230203, 0x10000, 0)
    )
    out.append(("vulkan", vk))
    out.append(("opencl", modformats.encode_gpu("cl", funcs[1:], b"__kernel void k1() {}")))
    return out


# ---------------------------------------------------------------------------
# mutations (hypothesis side; atheris mutates bytes by itself)


def _hot_ranges(data):
    """(offset, length) of the regions of a library worth mutating: headers,
    symbol and string tables, dynamic section, the embedded library_bin and
    other __tvm_ffi_ symbols."""
    from tvmffi_cli.binary import parse_bytes

    ranges = [(0, min(len(data), 1024))]
    try:
        b = parse_bytes(data)
        for s in b.sections:
            if s.filesize and s.name in (
                ".dynsym",
                ".dynstr",
                ".dynamic",
                ".symtab",
                ".strtab",
                ".rdata",
                ".edata",
                ".idata",
                "__const",
                "__data",
                ".rodata",
                ".data",
                "__text",
                ".text",
                "__cstring",
            ):
                ranges.append((s.offset, min(s.filesize, len(data) - s.offset)))
        for sym in b.find_symbols(("__tvm_ffi_",)):
            off = b.file_offset(sym)
            if off is not None:
                ranges.append((off, max(1, min(b.extent(sym), 4096))))
    except Exception:
        pass
    return [(o, n) for o, n in ranges if 0 <= o < len(data) and n > 0]


def mutate(rng, data, ranges, max_ops=8):
    """`data` changed by up to `max_ops` structure-aware edits, placed inside
    `ranges` ((offset, length) of the regions worth hitting)."""
    b = bytearray(data)
    ranges = ranges or [(0, max(1, len(b)))]
    for _ in range(rng.randint(1, max_ops)):
        if not b:
            b += rng.randbytes(rng.randint(1, 16))
            continue
        o, n = rng.choice(ranges)
        at = min(len(b) - 1, o + rng.randrange(max(1, n)))
        op = rng.randrange(8)
        if op == 0:  # one byte
            b[at] = rng.randrange(256)
        elif op == 1:  # flip a bit
            b[at] ^= 1 << rng.randrange(8)
        elif op in (2, 3):  # a boundary value in a u64/u32 field, either endianness
            size = 8 if op == 2 else 4
            v = rng.choice(INTERESTING_U64) & ((1 << (8 * size)) - 1)
            if rng.random() < 0.5:
                at -= at % size
            raw = v.to_bytes(size, rng.choice(("little", "big")))
            b[at : at + size] = raw[: len(b) - at]
        elif op == 4:  # truncate
            del b[rng.randint(0, len(b)) :]
        elif op == 5:  # delete a chunk
            del b[at : at + rng.randint(1, 64)]
        elif op == 6:  # insert random bytes
            b[at:at] = rng.randbytes(rng.randint(1, 32))
        else:  # copy a chunk over another place
            src = rng.randrange(len(b))
            chunk = b[src : src + rng.randint(1, 64)]
            b[at : at + len(chunk)] = chunk
    return bytes(b)


def mutated(st, seeds, hot=None, max_ops=8):
    """A strategy of `seeds` items changed by a few structure-aware edits.

    Hypothesis picks the seed, the number of edits and a 64-bit stream seed
    (its draws are biased to boundaries); the edits themselves come from that
    stream, which keeps an example at a handful of draws instead of ~100."""
    import random

    hot = hot or {}
    return st.tuples(
        st.integers(0, len(seeds) - 1), st.integers(1, max_ops), st.integers(0, (1 << 64) - 1)
    ).map(lambda t: mutate(random.Random(t[2]), seeds[t[0]], hot.get(t[0]), t[1]))


def text_mutated(st, texts, alphabet):
    """Strings from `texts` with characters replaced, inserted or removed."""

    @st.composite
    def build(draw):
        s = list(draw(st.sampled_from(texts)))
        for _ in range(draw(st.integers(0, 4))):
            op = draw(st.integers(0, 3))
            at = draw(st.integers(0, len(s)))
            if op == 0 and s and at < len(s):
                s[at] = draw(alphabet)
            elif op == 1:
                s[at:at] = list(draw(st.text(alphabet, max_size=4)))
            elif op == 2 and s:
                del s[at : at + draw(st.integers(1, 4))]
            else:
                s[at:at] = list(draw(st.sampled_from(TEXT_TOKENS)))
        return "".join(s)

    return build()


def surrogate_text(st):
    """Text as Python sees an argv word that is not valid UTF-8."""
    return st.binary(max_size=24).map(_text)


TEXT_TOKENS = [
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "x",
    "_",
    " ",
    "\t",
    "0",
    "9" * 30,
    "9" * 5000,
    "-",
    "+",
    "0x",
    "0b",
    "0o",
    ".",
    "e",
    "e999",
    "nan",
    "inf",
    "NaN",
    "Infinity",
    '"',
    "\\u",
    "\\ud800",
    "\0",
    "\u00a0",
    "\u0663",
    "\uff11",
    "\ud800",
    "@",
    "/",
    "null",
    "true",
    "float32",
    "int8x4",
    "bfloat16",
    "float8_e4m3fn",
    "cuda:",
    ":zeros",
    ":arange",
    ":rand",
    ":ones",
    "x65536",
    "x0",
    "int0",
    "uint256",
    "ffi.Function",
    "Optional",
    "named_args",
    "type",
    "args",
    "params",
    "return",
]


# ---------------------------------------------------------------------------
# targets


class Target:
    name = "?"
    doc = ""
    max_len = 4096  # atheris -max_len

    def __init__(self):
        self._seeds = None

    def seeds(self):
        """Valid inputs (bytes) the engines start from."""
        if self._seeds is None:
            self._seeds = [bytes(s) for s in self.make_seeds()]
        return self._seeds

    def make_seeds(self):
        raise NotImplementedError

    def strategy(self, st):
        raise NotImplementedError

    def run(self, data):
        raise NotImplementedError

    def close(self):
        """Remove what the runs made (a target may be run again after it)."""


class LibBinTarget(Target):
    name = "libbin"
    doc = "library_bin decoder (tvmffi_cli.binary.libbin.decode), GPU kinds included"

    def make_seeds(self):
        out = list(libbin_blobs())
        from tvmffi_cli.binary import open_binary

        for p in elf_seed_files():
            try:
                with open_binary(p) as b:
                    s = b.get("__tvm_ffi__library_bin")
                    if s is not None:
                        out.append(b.read_symbol_bytes(s))
            except Exception:
                pass
        return out

    def strategy(self, st):
        from tvmffi_cli.binary import libbin

        seeds = self.seeds()
        kinds = st.sampled_from(
            ["_lib", "cuda", "rocm", "metal", "vulkan", "opencl", "webgpu", "acme", "", "\u00e9"]
        )
        module = st.tuples(
            kinds, st.binary(max_size=64) | st.sampled_from([b for _k, b in gpu_blobs()])
        )

        @st.composite
        def generated(draw):
            mods = draw(st.lists(module, max_size=5))
            n = len(mods)
            tree = (
                draw(
                    st.lists(
                        st.lists(st.integers(0, max(0, n)), max_size=3), min_size=n, max_size=n
                    )
                )
                if n
                else []
            )
            tree = [[c for c in t if c < n] for t in tree] if draw(st.booleans()) else tree
            return libbin.encode([(k, None if k == "_lib" else b) for k, b in mods], tree)

        return st.one_of(
            mutated(st, seeds), generated(), mutated(st, [b"\0" * 8]), st.binary(max_size=256)
        )

    def run(self, data):
        from tvmffi_cli.binary import libbin

        lb = libbin.decode(data)
        _jsonable(lb.to_json())


class ModFormatsTarget(Target):
    name = "modformats"
    doc = "GPU module decoders (tvmffi_cli.binary.modformats): first byte picks the kind"

    def make_seeds(self):
        from tvmffi_cli.binary.modformats import GPU_KINDS

        return [bytes([GPU_KINDS.index(k)]) + b for k, b in gpu_blobs()]

    def strategy(self, st):
        return st.one_of(mutated(st, self.seeds()), st.binary(max_size=512))

    def run(self, data):
        from tvmffi_cli.binary import modformats

        if not data:
            return
        kinds = modformats.GPU_KINDS + ("acme.custom",)
        kind = kinds[data[0] % len(kinds)]
        blob = bytes(data[1:])
        errors = []
        _jsonable(modformats.decode(kind, blob, 16, errors, 3).to_json())
        _jsonable(errors)
        _jsonable(modformats.read_payload(blob).to_json())
        if len(blob) >= 4:
            code, bits, lanes = struct.unpack_from("<BBH", blob)
            modformats.dtype_str(code, bits, lanes)


def fatbin_sections():
    """The fat binary sections (.nv_fatbin, __nv_relfatbin) of the committed
    nvcc-built fixtures (fixtures/cuda_fatbin)."""
    from tvmffi_cli.binary import open_binary

    out = []
    for p in sorted((ROOT / "fixtures" / "cuda_fatbin").glob("*.elf")):
        with open_binary(p) as b:
            for s in b.sections:
                if s.name in (".nv_fatbin", "__nv_relfatbin"):
                    out.append(bytes(b.data[s.offset : s.offset + s.filesize]))
    return out


class FatbinTarget(Target):
    name = "fatbin"
    doc = "CUDA fat binary reader (tvmffi_cli.binary.fatbin): one .nv_fatbin section's bytes"
    max_len = 1 << 15

    def make_seeds(self):
        return fatbin_sections()

    def strategy(self, st):
        seeds = self.seeds()
        return st.one_of(
            mutated(st, seeds), mutated(st, seeds, max_ops=40), st.binary(max_size=512)
        )

    def run(self, data):
        from tvmffi_cli.binary import Binary, Section, fatbin

        b = Binary("fuzz.so", bytes(data))
        b.sections = [Section(".nv_fatbin", 0x1000, len(data), 0, len(data))]
        code = fatbin.read(b)
        if code is not None:
            _jsonable(code.to_json())
            code.listing(every=True)
            code.support((9, 0))


class BinaryTarget(Target):
    """One binary reader, driven the way `inspect --static` drives it."""

    max_len = 1 << 18
    magic = ()

    def tiny(self):
        return []

    def files(self):
        return []

    def make_seeds(self):
        return [Path(p).read_bytes() for p in self.files()] + self.tiny()

    def strategy(self, st):
        seeds = self.seeds()
        hot = {i: _hot_ranges(s) for i, s in enumerate(seeds)}
        headed = st.tuples(st.sampled_from(self.magic), st.binary(max_size=512)).map(
            lambda t: t[0] + t[1]
        )
        return st.one_of(mutated(st, seeds, hot), mutated(st, seeds, hot, max_ops=40), headed)

    def run(self, data):
        from tvmffi_cli.binary import parse_bytes
        from tvmffi_cli.inspect.engine import static_report

        b = parse_bytes(data, "<fuzz>")
        try:
            _jsonable(static_report(b))
            syms = b.symbols
            _ = b.imports  # the property reads the import table
            b.find_symbols(("__tvm_ffi_", "TVMFFI"))
            for s in syms[:64]:
                b.get(s.name)
                b.extent(s)
                b.section_for(s.value)
                try:
                    b.read_symbol_bytes(s, limit=4096)
                except Exception as e:
                    from tvmffi_cli.errors import FormatError

                    if not isinstance(e, FormatError):
                        raise
        finally:
            b.close()


class _NoCollect:
    def collect(self, *a):
        return 0


class ElfTarget(BinaryTarget):
    name = "elf"
    doc = "ELF reader (binary.elf) + inspect's static report"
    magic = (b"\x7fELF\x02\x01\x01\x00", b"\x7fELF\x01\x01\x01\x00", b"\x7fELF\x02\x02\x01\x00")

    def files(self):
        return elf_seed_files()


class PeTarget(BinaryTarget):
    name = "pe"
    doc = "PE/COFF reader (binary.pe) + inspect's static report"
    magic = (b"MZ", tiny_pe()[:0x40])

    def files(self):
        return pe_seed_files()

    def run(self, data):
        import pefile

        if not isinstance(pefile.gc, _NoCollect):
            # pefile runs a full gc.collect() on every close: harmless once per
            # CLI run, but it would make every fuzz execution ~10x slower.
            pefile.gc = _NoCollect()
        super().run(data)

    def tiny(self):
        return [tiny_pe()]


class MachOTarget(BinaryTarget):
    name = "macho"
    doc = "Mach-O reader, thin and fat (binary.macho) + inspect's static report"
    magic = (
        b"\xcf\xfa\xed\xfe",
        b"\xce\xfa\xed\xfe",
        b"\xfe\xed\xfa\xcf",
        b"\xca\xfe\xba\xbe",
        b"\xca\xfe\xba\xbf",
    )

    def files(self):
        return macho_seed_files()

    def tiny(self):
        t = tiny_macho()
        return [t, make_fat([("x86_64", t), ("arm64", t)], align=64)]


SCHEMA_KEYS = [
    "int",
    "float",
    "bool",
    "None",
    "Any",
    "ffi.String",
    "ffi.Bytes",
    "ffi.Tensor",
    "DLTensor*",
    "ffi.Shape",
    "ffi.Array",
    "ffi.List",
    "ffi.Map",
    "ffi.Dict",
    "Optional",
    "Variant",
    "Tuple",
    "ffi.Function",
    "DataType",
    "Device",
    "ffi.Object",
    "my.Custom",
    "",
]


def _schema_strategy(st):
    leaf = st.sampled_from(SCHEMA_KEYS).map(lambda k: {"type": k})

    def extend(children):
        plain = st.tuples(st.sampled_from(SCHEMA_KEYS), st.lists(children, max_size=3)).map(
            lambda t: {"type": t[0], "args": t[1]}
        )
        func = st.tuples(st.lists(children, max_size=1), st.lists(children, max_size=4)).map(
            lambda t: {"type": "ffi.Function", "named_args": {"return": t[0], "params": t[1]}}
        )
        return plain | func

    return st.recursive(leaf, extend, max_leaves=12)


def _json_value_strategy(st):
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
        max_leaves=8,
    )


class SchemaTarget(Target):
    name = "schema"
    doc = "type-schema parser (tvmffi_cli.abi.typeschema): SCHEMA \\0 VALUE"

    def make_seeds(self):
        out = []
        for ts, value in [
            (
                {
                    "type": "ffi.Function",
                    "named_args": {
                        "return": [{"type": "int"}],
                        "params": [{"type": "int"}, {"type": "float"}],
                    },
                },
                "[1, 2.5]",
            ),
            ({"type": "ffi.Array", "args": [{"type": "int"}]}, "[1,2,3]"),
            ({"type": "ffi.Map", "args": [{"type": "ffi.String"}, {"type": "float"}]}, '{"a": 1}'),
            ({"type": "Optional", "args": [{"type": "ffi.Bytes"}]}, "abc"),
            ({"type": "Variant", "args": [{"type": "int"}, {"type": "bool"}]}, "yes"),
            ({"type": "Tuple", "args": [{"type": "int"}, {"type": "ffi.Shape"}]}, "[1, [2, 3]]"),
        ]:
            out.append(json.dumps(ts).encode() + b"\0" + value.encode())
            out.append(
                json.dumps({"type_schema": json.dumps(ts)}).encode() + b"\0" + value.encode()
            )
        return out

    def strategy(self, st):
        schema_text = st.one_of(
            _schema_strategy(st).map(json.dumps),
            _schema_strategy(st).map(lambda s: json.dumps({"type_schema": json.dumps(s)})),
            _schema_strategy(st).map(lambda s: json.dumps({"type_schema": s})),
            st.integers(1, 3000).map(lambda n: '{"type":"a","args":[' * n),
            st.integers(1, 200).map(
                lambda n: '{"type":"a","args":[' * n + '{"type":"b"}' + "]}" * n
            ),
            _json_value_strategy(st).map(json.dumps),
        )
        mutated_schema = text_mutated(
            st,
            [
                json.dumps(s)
                for s in [
                    {
                        "type": "ffi.Function",
                        "named_args": {
                            "return": [{"type": "int"}],
                            "params": [{"type": "Optional", "args": [{"type": "int"}]}],
                        },
                    },
                    {"type": "ffi.Map", "args": [{"type": "int"}, {"type": "ffi.Bytes"}]},
                ]
            ],
            st.characters(),
        )
        value = st.one_of(
            _json_value_strategy(st).map(json.dumps),
            st.text(max_size=16),
            surrogate_text(st),
            st.sampled_from(TEXT_TOKENS),
        )
        pair = st.tuples(schema_text | mutated_schema, value).map(
            lambda t: _enc(t[0]) + b"\0" + _enc(t[1])
        )
        return st.one_of(pair, mutated(st, self.seeds()))

    def run(self, data):
        from tvmffi_cli.abi import typeschema as schema

        raw_schema, _sep, raw_value = bytes(data).partition(b"\0")
        text = _text(raw_schema)
        for parse in (schema.parse_type, schema.parse_metadata):
            try:
                got = parse(text)
            except Exception as e:
                from tvmffi_cli.errors import TvmffiError

                if isinstance(e, TvmffiError) and _wrapped(e) is None:
                    continue
                raise
            spec = got[1] if isinstance(got, tuple) else got
            if spec is None:
                continue
            spec.render()
            _jsonable(spec.to_json())
            hash(spec)
            if spec.is_function:
                spec.signature("f")
                params = spec.params
            else:
                params = [spec]
            value = _text(raw_value)
            try:
                decoded = json.loads(value)
            except ValueError:
                decoded = value
            for p in params[:4]:
                for v in (value, decoded):
                    try:
                        schema.convert_literal(p, v)
                    except schema.InputError:
                        pass
        try:
            schema.signature("f", text)
        except schema.FormatError:
            pass


def _literal_texts():
    return [
        "float32",
        "bfloat16",
        "int8x4",
        "bool",
        "float8_e4m3fn",
        "void",
        "uint1",
        "handle",
        "cpu",
        "cuda:1",
        "gpu:0",
        "2:1",
        "rocm",
        "0x7f",
        "-12",
        "1_000",
        "0b101",
        "0o17",
        "017",
        "1.5",
        "-1e-3",
        "nan",
        "-inf",
        ".5",
        "true",
        "off",
        "00ff10",
        "0xdead",
        "de ad be ef",
        "float32[2,3]:zeros",
        "int8[4]:arange",
        "bool[2,2]:rand",
        "complex64[1]:ones",
        "float32[]",
        "[2,3]",
        "2,3",
        "2x3",
        "",
        '[1, 2.5, "s", null, {"k": [true]}]',
        '"quoted"',
        '{"a": 1}',
        "none",
        "x.npy",
        "a.npz:key",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
    ]


def _literal_strategy(st):
    texts = _literal_texts()
    grammar = st.one_of(
        st.tuples(
            st.sampled_from(
                ["int", "uint", "float", "bfloat", "complex", "bool", "float8_e5m2", "handle", "x"]
            ),
            st.integers(0, 300).map(str) | st.just("9" * 5000),
            st.sampled_from(["", "x", "x0", "x65536", "x4", "x" + "9" * 40]),
        ).map(lambda t: f"{t[0]}{t[1] if t[0] not in ('bool', 'handle') else ''}{t[2]}"),
        st.tuples(
            st.sampled_from(["float32", "int8", "bool", "uint64", "complex128", "float16x2"]),
            st.lists(st.integers(0, 1 << 40).map(str) | st.just("9" * 5000), max_size=4),
            st.sampled_from(["", ":zeros", ":ones", ":arange", ":rand", ":bad"]),
            st.sampled_from([",", ", ", " ,", ",\t"]),
        ).map(lambda t: f"{t[0]}[{t[3].join(map(str, t[1]))}]{t[2]}"),
        st.integers(-(1 << 70), 1 << 70).map(lambda v: st_int_form(v)),
        st.floats().map(repr),
        _json_value_strategy(st).map(lambda v: json.dumps(v)),
        st.tuples(
            st.sampled_from(["cpu", "cuda", "7", "2147483648", "x"]),
            st.sampled_from(["", ":0", ":1", ":-1", ":2147483648", ":", ":a"]),
        ).map("".join),
    )
    return st.one_of(
        grammar, text_mutated(st, texts, st.characters()), st.text(max_size=24), surrogate_text(st)
    )


def st_int_form(v):
    forms = [str(v), hex(v), bin(v), f"{v:_}"]
    return forms[abs(v) % len(forms)]


class LiteralsTarget(Target):
    name = "literals"
    doc = "tensor/argument literal parsers (tvmffi_cli.call.literals): one text"

    def __init__(self):
        super().__init__()
        self._cwd = None

    def make_seeds(self):
        return [t.encode() for t in _literal_texts()]

    def strategy(self, st):
        return _literal_strategy(st).map(_enc)

    def cwd(self):
        if self._cwd is None:
            # An empty directory: relative paths in literals name no file.
            self._cwd = tempfile.mkdtemp(prefix="tvmffi-fuzz-")
        return self._cwd

    def close(self):
        if self._cwd is not None:
            shutil.rmtree(self._cwd, ignore_errors=True)
            self._cwd = None

    def run(self, data):
        from tvmffi_cli.call import argv as A
        from tvmffi_cli.call import literals as L
        from tvmffi_cli.errors import TvmffiError

        text = _text(data)
        cwd = self.cwd()
        calls = [
            L.parse_dtype,
            L.canonical_dtype,
            L.parse_device,
            A.device_spec,
            L.parse_int,
            L.parse_float,
            L.parse_bool,
            L.parse_tensor_literal,
            L.parse_shape,
            L.parse_json,
            lambda t: L.parse_bytes(t, cwd),
            lambda t: L.infer_positional(t, cwd),
            lambda t: L.json_to_spec(L.parse_json(t)),
        ]
        calls += [lambda t, f=f: A.spec_from_flag(f, t, cwd) for f in A.VALUE_FLAGS]
        for fn in calls:
            try:
                got = fn(text)
            except TvmffiError as e:
                if _wrapped(e) is not None:
                    raise
                continue
            if type(got).__module__ == "tvmffi_cli.call.specs":
                _spec_round_trip(got)
        try:
            code, bits, lanes = L.parse_dtype(text)
        except TvmffiError:
            return
        # The canonical text of a dtype must parse back to the same dtype.
        if L.parse_dtype(L.dtype_str(code, bits, lanes)) != (code, bits, lanes):
            raise AssertionError(f"dtype {text!r} does not round-trip")


class ArgvTarget(LiteralsTarget):
    name = "argv"
    doc = "argument-tail parser and schema-typed conversion (call.argv: parse_argv, spec_for_type)"

    OPTIONS = {
        "--json": False,
        "--timeout": True,
        "-v": False,
        "--verbose": False,
        "--runtime": True,
    }

    def make_seeds(self):
        return [
            b"\0".join(t.encode() for t in toks)
            for toks in [
                [
                    '{"type":"ffi.Function","named_args":{"return":[{"type":"int"}],"params":[{"type":"int"},{"type":"ffi.Tensor"}]}}',
                    "lib.so",
                    "f",
                    "3",
                    "float32[2]:ones",
                ],
                [
                    '{"type":"ffi.Array","args":[{"type":"Optional","args":[{"type":"int"}]}]}',
                    "lib.so",
                    "f",
                    "--int",
                    "5",
                    "--tensor",
                    "int8[3]:arange",
                    "--json",
                ],
                [
                    '{"type":"ffi.Map","args":[{"type":"int"},{"type":"Device"}]}',
                    "lib.so",
                    "f",
                    '{"1": "cuda:0"}',
                    "-vv",
                    "--timeout=3",
                ],
                [
                    '{"type":"Variant","args":[{"type":"DataType"},{"type":"ffi.Shape"}]}',
                    "lib.so",
                    "f",
                    "--",
                    "-x",
                    "2,3",
                ],
            ]
        ]

    def strategy(self, st):
        flags = st.sampled_from(
            sorted(L_FLAGS())
            + sorted(self.OPTIONS)
            + ["--", "-", "-vvv", "--none=1", "--int=", "--bogus", "-h"]
        )
        token = st.one_of(flags, _literal_strategy(st))
        schema_txt = _schema_strategy(st).map(json.dumps)
        argv = st.tuples(schema_txt, st.lists(token, max_size=8)).map(
            lambda t: _enc("\0".join([t[0]] + t[1]))
        )
        return st.one_of(argv, mutated(st, self.seeds()))

    def run(self, data):
        from tvmffi_cli.abi import typeschema as schema
        from tvmffi_cli.call import argv as A
        from tvmffi_cli.errors import TvmffiError

        tokens = _text(data).split("\0")
        cwd = self.cwd()
        typ = None
        try:
            typ = schema.parse_type(tokens[0])
        except TvmffiError:
            pass
        try:
            spec = A.parse_argv(tokens[1:], self.OPTIONS, cwd)
            for arg in spec.args:
                _spec_round_trip(arg)
        except TvmffiError as e:
            if _wrapped(e) is not None:
                raise
        if typ is None:
            return
        types = list(typ.params) if typ.is_function else [typ, typ.to_json()]
        for i, text in enumerate(tokens[1:9]):
            t = types[i % len(types)] if types else None
            try:
                _spec_round_trip(A.spec_for_type(text, t, cwd))
            except TvmffiError as e:
                if _wrapped(e) is not None:
                    raise


def L_FLAGS():
    from tvmffi_cli.call import argv

    return argv.ARG_FLAGS


class SelfTestTarget(Target):
    """A target with planted bugs, to test the harness itself (tests/test_fuzz.py):
    inputs starting with b"!" raise IndexError, b"?" a FormatError wrapping a
    KeyError (masked), b"M" a FormatError hiding a MemoryError, b"ALLOC"
    allocates 2 GiB, anything else a plain FormatError or nothing."""

    name = "selftest"
    doc = "planted bugs (only with TVMFFI_FUZZ_SELFTEST=1)"

    def make_seeds(self):
        return [b"ok", b"bad"]

    def strategy(self, st):
        return st.sampled_from([b"!", b"?", b"M", b"bad", b"ok"]).flatmap(
            lambda head: st.binary(max_size=4).map(lambda tail: head + tail)
        )

    def run(self, data):
        from tvmffi_cli.errors import FormatError

        if data[:1] == b"!":
            return [][len(data)]
        if data == b"ALLOC":  # an allocation by an untrusted size (not in the strategy)
            return bytearray(2 << 30)
        if data[:1] in (b"?", b"M"):
            try:
                if data[:1] == b"M":
                    raise MemoryError()
                return {}[data]
            except (KeyError, MemoryError) as e:
                raise FormatError(f"wrapped {type(e).__name__}")
        if data.startswith(b"bad"):
            raise FormatError("bad input")


TARGETS = {
    t.name: t
    for t in (
        LibBinTarget(),
        ModFormatsTarget(),
        FatbinTarget(),
        ElfTarget(),
        PeTarget(),
        MachOTarget(),
        SchemaTarget(),
        LiteralsTarget(),
        ArgvTarget(),
    )
}
if os.environ.get("TVMFFI_FUZZ_SELFTEST") == "1":
    TARGETS["selftest"] = SelfTestTarget()
