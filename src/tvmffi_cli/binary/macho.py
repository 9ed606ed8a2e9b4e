"""Mach-O reader (thin and fat; 32/64-bit; x86_64 and arm64 and others by name).

A small bounded parser of the load commands we need (segments and sections,
LC_SYMTAB, the dylib commands) instead of macholib: it is short, never reads
past a command or the file, and keeps the CLI start-up cheap. Symbol names
lose the leading underscore that Mach-O adds to every C name.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, cast

from ..errors import FormatError
from .model import CODE, DATA, OTHER, Binary, Section, Symbol

if TYPE_CHECKING:
    from .model import FileData

CPU_ABI64 = 0x01000000
CPUS = {
    7: "i386",
    7 | CPU_ABI64: "x86_64",
    12: "arm",
    12 | CPU_ABI64: "arm64",
    12 | 0x02000000: "arm64_32",
    18: "ppc",
    18 | CPU_ABI64: "ppc64",
}
FILETYPES = {1: "object", 2: "executable", 6: "shared", 8: "bundle"}

LC_SEGMENT, LC_SYMTAB, LC_SEGMENT_64 = 0x1, 0x2, 0x19
LC_ID_DYLIB = 0xD
LC_REQ_DYLD = 0x80000000
DYLIB_LOADS = {0xC, 0x18 | LC_REQ_DYLD, 0x1F | LC_REQ_DYLD, 0x20, 0x23 | LC_REQ_DYLD}
LC_RPATH = 0x1C | LC_REQ_DYLD
N_STAB, N_PEXT, N_TYPE, N_EXT = 0xE0, 0x10, 0x0E, 0x01
N_UNDF, N_SECT = 0x0, 0xE
N_WEAK_DEF = 0x0080
ZEROFILL_TYPES = {0x1, 0xC, 0x12}
S_ATTR_CODE = 0x80000000 | 0x400

FAT_MAGIC, FAT_MAGIC_64 = 0xCAFEBABE, 0xCAFEBABF
MAX_FAT_ARCHS = 64  # real fat files have a handful; more is not a Mach-O


def _strip(name: str) -> str:
    return name[1:] if name.startswith("_") else name


def _host_arch() -> str:
    import platform

    m = platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(m, m)


class MachOBinary(Binary):
    format = "macho"

    def __init__(self, path: object, data: FileData, arch: str | None = None) -> None:
        super().__init__(path, data)
        self._syms: list[Symbol] | None = None
        self._undef: list[str] | None = None
        magic = struct.unpack_from(">I", data, 0)[0] if len(data) >= 4 else 0
        if magic in (FAT_MAGIC, FAT_MAGIC_64):
            base, size = self._pick_slice(magic, arch)
        else:
            base, size = 0, len(data)
        self._base = base
        self._parse(base, size)

    def _pick_slice(self, magic: int, want: str | None) -> tuple[int, int]:
        d = self.data
        if len(d) < 8:
            raise FormatError("truncated fat Mach-O header")
        nfat = struct.unpack_from(">I", d, 4)[0]
        esz = 32 if magic == FAT_MAGIC_64 else 20
        if nfat == 0 or nfat > MAX_FAT_ARCHS:
            raise FormatError(f"fat Mach-O header claims {nfat} architectures")
        if 8 + nfat * esz > len(d):
            raise FormatError(f"fat Mach-O header claims {nfat} architectures but is truncated")
        slices: list[tuple[str, int, int]] = []  # arch, offset, size
        for i in range(nfat):
            o = 8 + i * esz
            if magic == FAT_MAGIC_64:
                cpu, _sub, off, size, _al = struct.unpack_from(">iiQQI", d, o)
            else:
                cpu, _sub, off, size, _al = struct.unpack_from(">iiIII", d, o)
            if off >= len(d) or size > len(d) - off:
                raise FormatError(
                    f"fat Mach-O slice {i} [{off:#x}, +{size:#x}) lies outside the file"
                )
            slices.append((CPUS.get(cpu & 0xFFFFFFFF, f"cpu-{cpu}"), off, size))
        self.extra["fat_slices"] = [{"arch": a, "offset": o, "size": n} for a, o, n in slices]
        want = want or _host_arch()
        _arch, off, size = next((s for s in slices if s[0] == want), slices[0])
        return off, size

    def _parse(self, base: int, size: int) -> None:
        d = self.data
        end = base + size
        if size < 28:
            raise FormatError("truncated Mach-O header")
        m = bytes(d[base : base + 4])
        if m in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe"):
            e = "<"
        elif m in (b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce"):
            e = ">"
        else:
            raise FormatError("not a Mach-O file")
        self._e = e
        self.bits = 64 if m in (b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf") else 32
        _mg, cpu, _sub, ftype, ncmds, sizeofcmds, _flags = struct.unpack_from(
            e + "IiiIIII", d, base
        )
        self.arch = CPUS.get(cpu & 0xFFFFFFFF, f"cpu-{cpu}")
        self.kind = FILETYPES.get(ftype, "other")
        hdr = 32 if self.bits == 64 else 28
        pos = base + hdr
        cmds_end = pos + sizeofcmds
        if cmds_end > end:
            raise FormatError(
                f"Mach-O load commands ({sizeofcmds} bytes) run past the end of the file"
            )
        if ncmds > sizeofcmds // 8:
            raise FormatError(f"Mach-O header claims {ncmds} load commands in {sizeofcmds} bytes")
        symtab: tuple[int, ...] | None = None
        self.rpaths: list[str] = []
        for i in range(ncmds):
            if pos + 8 > cmds_end:
                raise FormatError(f"load command {i} at {pos - base:#x} is truncated")
            cmd, cmdsize = struct.unpack_from(e + "II", d, pos)
            if cmdsize < 8 or pos + cmdsize > cmds_end:
                raise FormatError(f"load command {i} at {pos - base:#x} has bad size {cmdsize}")
            if cmd in (LC_SEGMENT, LC_SEGMENT_64):
                self._segment(pos, cmdsize, cmd == LC_SEGMENT_64, end)
            elif cmd == LC_SYMTAB and cmdsize >= 24:
                symtab = struct.unpack_from(e + "IIII", d, pos + 8)
            elif cmd in DYLIB_LOADS or cmd == LC_ID_DYLIB or cmd == LC_RPATH:
                name = self._lc_str(pos, cmdsize)
                if name is None:
                    self.problems.append(f"load command {i} has a bad name offset")
                elif cmd == LC_ID_DYLIB:
                    self.soname = name
                elif cmd == LC_RPATH:
                    self.rpaths.append(name)
                else:
                    self.needed.append(name)
            pos += cmdsize
        if self.rpaths:
            self.extra["rpath"] = self.rpaths
        self._symtab = symtab

    def _lc_str(self, pos: int, cmdsize: int) -> str | None:
        (off,) = struct.unpack_from(self._e + "I", self.data, pos + 8)
        if off < 12 or off >= cmdsize:
            return None
        raw = bytes(self.data[pos + off : pos + cmdsize])
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    def _segment(self, pos: int, cmdsize: int, is64: bool, end: int) -> None:
        d, e = self.data, self._e
        if is64:
            segfmt, secfmt, hsz, ssz = "16sQQQQiiII", "16s16sQQIIIIIIII", 72, 80
        else:
            segfmt, secfmt, hsz, ssz = "16sIIIIiiII", "16s16sIIIIIIIII", 56, 68
        if cmdsize < hsz:
            raise FormatError(f"segment command at {pos - self._base:#x} is truncated")
        _segname, _va, _vs, _fo, _fs, _maxp, initprot, nsects, _fl = struct.unpack_from(
            e + segfmt, d, pos + 8
        )
        if nsects > (cmdsize - hsz) // ssz:
            raise FormatError(
                f"segment at {pos - self._base:#x} claims {nsects} sections "
                f"that do not fit its command"
            )
        for k in range(nsects):
            f = struct.unpack_from(e + secfmt, d, pos + hsz + k * ssz)
            sname = f[0].split(b"\0", 1)[0].decode("latin-1")
            sseg = f[1].split(b"\0", 1)[0].decode("latin-1")
            addr, size, off, flags = f[2], f[3], f[4], f[8]
            zerofill = (flags & 0xFF) in ZEROFILL_TYPES
            fsize = 0 if zerofill else size
            abs_off = self._base + off
            if fsize and (abs_off > end or fsize > end - abs_off):
                self.problems.append(f"section {sseg},{sname} runs past the end of the file")
                fsize = max(0, end - abs_off)
            writable = sseg in ("__DATA", "__DATA_DIRTY") or (
                self.kind != "object" and bool(initprot & 2) and sseg != "__DATA_CONST"
            )
            s = Section(
                f"{sseg},{sname}",
                addr,
                size,
                abs_off,
                fsize,
                executable=bool(flags & S_ATTR_CODE),
                writable=writable,
                index=len(self.sections) + 1,
            )  # n_sect counts from 1
            self.sections.append(s)

    def _read_nlist(self) -> None:
        if self._syms is not None:
            return
        self._syms, self._undef = [], []
        if self._symtab is None:
            return
        symoff, nsyms, stroff, strsize = self._symtab
        d, e, base = self.data, self._e, self._base
        end = len(d)
        esz = 16 if self.bits == 64 else 12
        so, st = base + symoff, base + stroff
        # Reported, not raised: the headers were fine, so the rest of the
        # report (sections, needed libraries) is still worth showing.
        if so > end or nsyms > (end - so) // esz:
            self.problems.append(
                f"LC_SYMTAB claims {nsyms} symbols at {symoff:#x} beyond the end of the file"
            )
            return
        if st > end or strsize > end - st:
            self.problems.append(
                f"LC_SYMTAB string table [{stroff:#x}, +{strsize:#x}) lies outside the file"
            )
            return
        strtab = bytes(d[st : st + strsize])
        fmt = e + ("IBBHQ" if self.bits == 64 else "IBBHI")
        raw = bytes(d[so : so + nsyms * esz])
        nsec = len(self.sections)
        for strx, ntype, nsect, ndesc, value in struct.iter_unpack(fmt, raw):
            if ntype & N_STAB or not ntype & N_EXT:
                continue
            if strx >= len(strtab):
                self.problems.append(f"symbol name offset {strx:#x} is outside the string table")
                continue
            z = strtab.find(b"\0", strx)
            name = _strip(strtab[strx : z if z >= 0 else len(strtab)].decode("utf-8", "replace"))
            t = ntype & N_TYPE
            if t == N_UNDF:
                if name:
                    self._undef.append(name)
                continue
            if t != N_SECT or ntype & N_PEXT:
                continue
            sec = self.sections[nsect - 1] if 0 < nsect <= nsec else None
            kind = (CODE if sec.executable else DATA) if sec else OTHER
            self._syms.append(
                Symbol(
                    name,
                    value,
                    None,
                    kind,
                    sec.name if sec else None,
                    bool(sec and sec.writable),
                    "weak" if ndesc & N_WEAK_DEF else "global",
                    sec,
                )
            )

    def _load_symbols(self) -> list[Symbol]:
        self._read_nlist()
        return cast("list[Symbol]", self._syms)

    def _load_imports(self) -> list[str]:
        self._read_nlist()
        return cast("list[str]", self._undef)
