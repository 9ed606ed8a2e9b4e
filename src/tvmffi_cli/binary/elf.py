"""ELF reader: a small bounded parser of the headers, section table and
dynamic section, with the symbol and string tables decoded in bulk.

Why not pyelftools objects: iterating its Symbol objects costs ~30x `nm` on a
library with 200,000 symbols, and importing it costs start-up time. The symbol
table is instead decoded column-wise with the `array` module (one C-level
conversion per column, the same idea as a numpy structured view without the
~60 ms numpy import), and names are only materialised for symbols that match
the prefixes asked for.
"""

from __future__ import annotations

import struct
import sys
from array import array
from itertools import compress
from typing import TYPE_CHECKING, Any, Union, cast

from ..errors import FormatError
from .model import CODE, DATA, OTHER, Binary, Section, Symbol

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from .model import FileData

    # A section header as _shdr returns it (name, type, flags, addr, offset,
    # size, link, info, entsize).
    RawShdr = tuple[int, int, int, int, int, int, int, int, int]
    # Decoded symbol-table columns: name offsets, info, other, shndx, value, size.
    Columns = tuple[
        Sequence[int],
        Union[bytes, bytearray],
        Union[bytes, bytearray],
        Sequence[int],
        Sequence[int],
        Sequence[int],
    ]

MACHINES = {
    0: "none",
    2: "sparc",
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390x",
    40: "arm",
    43: "sparcv9",
    50: "ia64",
    62: "x86_64",
    183: "aarch64",
    190: "cuda",
    224: "amdgpu",
    243: "riscv",
    247: "bpf",
    258: "loongarch",
}
ET_NAMES = {1: "object", 2: "executable", 3: "shared", 4: "core"}

SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_DYNAMIC, SHT_NOBITS, SHT_DYNSYM = 2, 3, 4, 6, 8, 11
SHF_WRITE, SHF_EXECINSTR = 0x1, 0x4
SHN_UNDEF, SHN_LORESERVE, SHN_XINDEX = 0, 0xFF00, 0xFFFF
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
STT_OBJECT, STT_FUNC, STT_COMMON, STT_TLS, STT_GNU_IFUNC = 1, 2, 5, 6, 10
#: A symbol's kind by its type; other types take their section's (_section_rows).
_KIND_OF_TYPE = {
    STT_FUNC: CODE,
    STT_GNU_IFUNC: CODE,
    STT_OBJECT: DATA,
    STT_TLS: DATA,
    STT_COMMON: DATA,
}
#: The section row of a symbol in no section (SHN_UNDEF, SHN_ABS, ...).
_NO_SECTION: tuple[Section | None, str | None, bool, str] = (None, None, False, OTHER)
#: R_<arch>_RELATIVE by e_machine: the loader stores base + addend at r_offset.
#: (AArch64's ld leaves the addend out of the section bytes by default.)
RELATIVE_RELOC = {62: 8, 183: 1027, 21: 22, 243: 3, 22: 12}
DT_NULL, DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 14, 15, 29
DT_FLAGS_1 = 0x6FFFFFFB
DF_1_PIE = 0x08000000  # a position-independent executable (ET_DYN, but not a library)

_NATIVE_LITTLE = sys.byteorder == "little"
# Symbol and string tables are decoded up to this size each (about 2.8
# million 64-bit symbols): a header claiming more, e.g. a whole 2 GiB file,
# is reported instead of read.
MAX_TABLE_BYTES = 64 << 20
_RELEASE_FROM = 1 << 20


def _prefix_offsets(strtab: bytes, prefixes: tuple[str, ...]) -> set[int]:
    """Every offset of a string table at which one of the prefixes starts: a
    symbol whose st_name is one of them has a name with that prefix (names
    that share the tail of a longer string included)."""
    # bytes.find runs at memchr speed where a regex steps every byte; only
    # the matches cost Python code.
    out: set[int] = set()
    add = out.add
    find = strtab.find
    for p in {p.encode() for p in prefixes}:
        at = find(p)
        while at >= 0:
            add(at)
            at = find(p, at + 1)
    return out


def _indices_of(column: Sequence[int], value: int) -> Iterator[int]:
    """The indices at which `column` holds `value`, in order."""
    if sys.version_info < (3, 10):  # array.index takes no start before 3.10
        yield from compress(range(len(column)), map(value.__eq__, column))
        return
    # count and index scan in C: a 200k-symbol table holds a few imports.
    i = -1
    for _ in range(column.count(value)):
        i = column.index(value, i + 1)
        yield i


def _cstr(buf: bytes, off: int) -> str | None:
    """NUL-terminated string at `off` of a bytes object (bounded by its end)."""
    if off >= len(buf):
        return None
    end = buf.find(b"\0", off)
    if end < 0:
        end = len(buf)
    return buf[off:end].decode("utf-8", "replace")


class ElfBinary(Binary):
    format = "elf"

    def __init__(self, path: object, data: FileData) -> None:
        super().__init__(path, data)
        self._cols: Columns | None = None  # decoded symbol-table columns
        self._strtab = b""
        self._symsec: Section | None = None
        self._rows: list[tuple[Section | None, str | None, bool, str]] | None = None
        self._parse()

    # -- headers ----------------------------------------------------------
    def _parse(self) -> None:
        d = self.data
        n = len(d)
        if d[:4] != b"\x7fELF":
            raise FormatError("not an ELF file")
        if n < 52:
            raise FormatError(f"truncated ELF header ({n} bytes)")
        cls, enc = d[4], d[5]
        if cls not in (1, 2) or enc not in (1, 2):
            raise FormatError(f"ELF header has bad class/encoding bytes ({cls}, {enc})")
        self.bits = 64 if cls == 2 else 32
        self.little = enc == 1
        e = "<" if self.little else ">"
        self._e = e
        if self.bits == 64:
            if n < 64:
                raise FormatError("truncated ELF header")
            layout, want = "HHIQQQIHHHHHH", 64  # want: the section header size
        else:
            layout, want = "HHIIIIIHHHHHH", 40
        fields = struct.unpack_from(e + layout, d, 16)
        e_type, e_machine, shoff, self.e_flags = fields[0], fields[1], fields[5], fields[6]
        shentsize, shnum, shstrndx = fields[10], fields[11], fields[12]
        self.machine = e_machine
        self.arch = MACHINES.get(e_machine, f"machine-{e_machine}")
        self.kind = ET_NAMES.get(e_type, "other")
        self.abi_version = d[8]
        if shoff == 0:
            self.warnings.append("no section header table; symbols cannot be listed")
            return
        if shentsize < want:
            raise FormatError(f"ELF section header size {shentsize} is smaller than {want}")
        if shoff > n - want:  # section 0 is read below even when shnum is 0
            raise FormatError(
                f"ELF section header table offset {shoff:#x} is past the end of the "
                f"file ({n} bytes)"
            )
        if shnum == 0:  # extended numbering: the real count is in section 0's sh_size
            shnum = self._shdr(shoff, want)[5]
        if shnum > (n - shoff) // shentsize:
            raise FormatError(
                f"ELF claims {shnum} section headers at {shoff:#x} but the file "
                f"holds at most {(n - shoff) // shentsize}"
            )
        raw = [self._shdr(shoff + i * shentsize, want) for i in range(shnum)]
        if shstrndx == SHN_XINDEX and raw:
            shstrndx = raw[0][6]
        names = b""
        if 0 < shstrndx < len(raw):
            names = self._bytes_of(raw[shstrndx])
        secs: list[Section] = []
        for i, (nm, typ, flags, addr, off, size, link, info, entsize) in enumerate(raw):
            nobits = typ == SHT_NOBITS
            fsize = 0 if nobits else size
            if not nobits and typ != 0 and (off > n or size > n - off):
                self.problems.append(
                    f"section {i} [{off:#x}, +{size:#x}) runs past the end of the file; truncated"
                )
                fsize = max(0, n - off) if off <= n else 0
            s = Section(
                _cstr(names, nm) or "",
                addr,
                size,
                off,
                fsize,
                executable=bool(flags & SHF_EXECINSTR),
                writable=bool(flags & SHF_WRITE),
                index=i,
            )
            s.type, s.link, s.entsize = typ, link, entsize
            secs.append(s)
        self.sections = secs
        self._parse_dynamic()

    def _shdr(self, off: int, want: int) -> RawShdr:
        e = self._e
        if self.bits == 64:
            nm, typ, flags, addr, o, size, link, info, _al, ent = struct.unpack_from(
                e + "IIQQQQIIQQ", self.data, off
            )
        else:
            nm, typ, flags, addr, o, size, link, info, _al, ent = struct.unpack_from(
                e + "IIIIIIIIII", self.data, off
            )
        return nm, typ, flags, addr, o, size, link, info, ent

    def _span_of(self, raw_or_sec: RawShdr | Section, cap: int | None = None) -> tuple[int, int]:
        """(file offset, byte count) of a section's bytes, bounded by the file
        and by `cap` (a claim beyond the cap is noted as a problem)."""
        if isinstance(raw_or_sec, Section):
            off, size = raw_or_sec.offset, raw_or_sec.filesize
        else:
            off, size = raw_or_sec[4], (0 if raw_or_sec[1] == SHT_NOBITS else raw_or_sec[5])
        n = len(self.data)
        if off >= n:
            return off, 0
        if cap is not None and size > cap:
            name = raw_or_sec.name if isinstance(raw_or_sec, Section) else "?"
            self.problems.append(
                f"section {name} claims {size} bytes; only the first {cap} are read"
            )
            size = cap
        return off, min(size, n - off)

    def _copy(self, off: int, size: int) -> bytes:
        """bytes of the file; for a mapped file the pages read are released
        again, so big tables do not stay in the resident set twice."""
        out = bytes(self.data[off : off + size])
        if size >= _RELEASE_FROM and hasattr(self.data, "madvise"):
            import mmap

            start = off - off % mmap.PAGESIZE
            try:
                self.data.madvise(mmap.MADV_DONTNEED, start, off + size - start)
            except (OSError, ValueError, AttributeError):
                pass
        return out

    def _bytes_of(self, raw_or_sec: RawShdr | Section, cap: int | None = None) -> bytes:
        return self._copy(*self._span_of(raw_or_sec, cap))

    def _linked_strtab(self, sec: Section) -> bytes:
        if 0 < sec.link < len(self.sections):
            st = self.sections[sec.link]
            if st.type == SHT_STRTAB:
                return self._bytes_of(st, MAX_TABLE_BYTES)
        self.problems.append(f"section {sec.name} does not link to a string table")
        return b""

    def _parse_dynamic(self) -> None:
        dyn = next((s for s in self.sections if s.type == SHT_DYNAMIC), None)
        if dyn is None:
            return
        strtab = self._linked_strtab(dyn)
        raw = self._bytes_of(dyn)
        esz = 16 if self.bits == 64 else 8
        fmt = self._e + ("qQ" if self.bits == 64 else "iI")
        runpath: list[str] = []
        for tag, val in struct.iter_unpack(fmt, raw[: len(raw) - len(raw) % esz]):
            if tag == DT_NULL:
                break
            if tag == DT_FLAGS_1 and val & DF_1_PIE and self.kind == "shared":
                self.kind = "executable"
                continue
            if tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
                s = _cstr(strtab, val)
                if s is None:
                    self.problems.append(
                        f"dynamic entry {tag} names string offset {val:#x} outside .dynstr"
                    )
                    continue
                if tag == DT_NEEDED:
                    self.needed.append(s)
                elif tag == DT_SONAME:
                    self.soname = s
                else:
                    runpath.append(s)
        if runpath:
            self.extra["runpath"] = runpath

    # -- symbols ----------------------------------------------------------
    def _columns(self) -> Columns:
        """Decode the dynamic symbol table (or .symtab when there is none) into
        columns: name offsets, info, other, shndx, value, size."""
        if self._cols is not None:
            return self._cols
        sec = next((s for s in self.sections if s.type == SHT_DYNSYM), None)
        if sec is None:
            sec = next((s for s in self.sections if s.type == SHT_SYMTAB), None)
        if sec is None:
            self._cols = ([], b"", b"", [], [], [])
            return self._cols
        self._symsec = sec
        self._strtab = self._linked_strtab(sec)
        esz = 24 if self.bits == 64 else 16
        start, size = self._span_of(sec, MAX_TABLE_BYTES)
        size -= size % esz
        swap = self.little != _NATIVE_LITTLE
        # Column by column, a chunk of entries at a time: the whole-table
        # temporaries would cost four times the table.
        cols: tuple[Any, ...] = (
            array("I"),
            bytearray(),
            bytearray(),
            array("H"),
            array("Q" if self.bits == 64 else "I"),
            array("Q" if self.bits == 64 else "I"),
        )
        step = esz * 65536
        for at in range(0, size, step):
            chunk = self._copy(start + at, min(step, size - at))
            w = array("I")
            w.frombytes(chunk)
            h = array("H")
            h.frombytes(chunk)
            if swap:
                w.byteswap()
                h.byteswap()
            if self.bits == 64:
                q = array("Q")
                q.frombytes(chunk)
                if swap:
                    q.byteswap()
                parts = (w[0::6], chunk[4::24], chunk[5::24], h[3::12], q[1::3], q[2::3])
            else:
                parts = (w[0::4], chunk[12::16], chunk[13::16], h[7::8], w[1::4], w[2::4])
            for c, p in zip(cols, parts):
                c.extend(p)
        self._cols = cols
        return cols

    def _section_rows(self) -> list[tuple[Section | None, str | None, bool, str]]:
        """Per section index: (section, name, writable, kind of an untyped
        symbol in it); index 0 (SHN_UNDEF) is no section."""
        if self._rows is None:
            self._rows = [_NO_SECTION] + [
                (sec, sec.name, bool(sec.writable), CODE if sec.executable else DATA)
                for sec in self.sections[1:]
            ]
        return self._rows

    def _new_symbols(self, indices: Iterable[int]) -> list[Symbol]:
        """The Symbols of these symbol-table entries (_columns() ran first)."""
        names, info, _other, shndx, value, size = cast("Columns", self._cols)
        strtab = self._strtab
        rows = self._section_rows()
        nrows = len(rows)
        kind_of = _KIND_OF_TYPE.get
        out: list[Symbol] = []
        for i in indices:
            sx = shndx[i]
            sec, secname, writable, untyped = rows[sx] if sx < nrows else _NO_SECTION
            inf = info[i]
            out.append(
                Symbol(
                    _cstr(strtab, names[i]) or "",
                    value[i],
                    size[i],
                    kind_of(inf & 0xF, untyped),
                    secname,
                    writable,
                    "weak" if inf >> 4 == STB_WEAK else "global",
                    sec,
                )
            )
        return out

    @staticmethod
    def _exported(info: int, other: int, shndx: int) -> bool:
        return (
            shndx != SHN_UNDEF
            and (info >> 4) in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE)
            and (other & 3) in (0, 3)
        )

    def _load_symbols(self) -> list[Symbol]:
        names, info, other, shndx, _v, _s = self._columns()
        ex = self._exported
        return self._new_symbols([i for i in range(len(names)) if ex(info[i], other[i], shndx[i])])

    def find_symbols(self, prefixes: tuple[str, ...]) -> list[Symbol]:
        names, info, other, shndx, _v, _s = self._columns()
        if not names:
            return []
        starts = _prefix_offsets(self._strtab, prefixes)
        if not starts:
            return []
        # compress/map keep the 200k-entry scan in C.
        hits = compress(range(len(names)), map(starts.__contains__, names))
        ex = self._exported
        return self._new_symbols([i for i in hits if ex(info[i], other[i], shndx[i])])

    def get(self, name: str) -> Symbol | None:
        found = [s for s in self.find_symbols((name,)) if s.name == name]
        return found[0] if found else None

    def _load_imports(self) -> list[str]:
        names, info, _o, shndx, _v, _s = self._columns()
        strtab = self._strtab
        out: list[str] = []
        for i in _indices_of(shndx, SHN_UNDEF):
            if (info[i] >> 4) in (STB_GLOBAL, STB_WEAK) and names[i]:
                s = _cstr(strtab, names[i])
                if s:
                    out.append(s)
        return out

    # -- for embedded code (binary/fatbin.py) ---------------------------------
    def functions_with_other(self, mask: int) -> list[str]:
        """Names of the defined FUNC symbols, of any binding, whose st_other
        has every bit of `mask`, in symbol-table order (a cubin marks its
        kernels so; local ones included, as a kernel in an anonymous
        namespace is local)."""
        names, info, other, shndx, _v, _s = self._columns()
        strtab = self._strtab
        hits = compress(
            range(len(names)),
            map(
                lambda i, o, x: (i & 0xF) == STT_FUNC and (o & mask) == mask and x != 0,
                info,
                other,
                shndx,
            ),
        )
        return [_cstr(strtab, names[i]) or "" for i in hits]

    def relative_relocations(self, addresses: set[int]) -> dict[int, int]:
        """address -> addend of the R_*_RELATIVE entries of the RELA sections
        that relocate one of `addresses` (a pointer the file leaves 0 and the
        loader fills). One pass over each table, bounded like the symbols."""
        rtype = RELATIVE_RELOC.get(self.machine)
        out: dict[int, int] = {}
        if rtype is None or not addresses:
            return out
        esz, fmt = (24, self._e + "QQq") if self.bits == 64 else (12, self._e + "IIi")
        for sec in self.sections:
            if sec.type != SHT_RELA:
                continue
            raw = self._bytes_of(sec, MAX_TABLE_BYTES)
            for off, info, addend in struct.iter_unpack(fmt, raw[: len(raw) - len(raw) % esz]):
                kind = info & 0xFFFFFFFF if self.bits == 64 else info & 0xFF
                if kind == rtype and off in addresses:
                    out[off] = addend
        return out
