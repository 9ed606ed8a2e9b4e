"""PE/COFF (DLL) reader on top of pefile: exports, imports by DLL, sections.

PE records no symbol sizes; the model bounds a symbol by the next export in
the same section (or the section end). Addresses are RVAs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import FormatError
from .model import CODE, DATA, Binary, Section, Symbol

if TYPE_CHECKING:
    from .model import FileData

MACHINES = {0x14C: "i386", 0x8664: "x86_64", 0xAA64: "arm64", 0x1C4: "arm", 0x5064: "riscv64"}
SCN_EXECUTE, SCN_WRITE, SCN_CODE = 0x20000000, 0x80000000, 0x20


class PeBinary(Binary):
    format = "pe"

    def __init__(self, path: object, data: FileData) -> None:
        super().__init__(path, data)
        import pefile

        try:
            pe = pefile.PE(data=bytes(data), fast_load=True)
            pe.parse_data_directories(
                directories=[
                    pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"],
                    pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
                ]
            )
        except pefile.PEFormatError as e:
            raise FormatError(f"malformed PE file: {e.value if hasattr(e, 'value') else e}")
        self.arch = MACHINES.get(pe.FILE_HEADER.Machine, f"machine-{pe.FILE_HEADER.Machine:#x}")
        self.bits = 64 if pe.OPTIONAL_HEADER.Magic == 0x20B else 32
        self.kind = "shared" if pe.FILE_HEADER.Characteristics & 0x2000 else "executable"
        n = len(data)
        for i, s in enumerate(pe.sections):
            name = s.Name.split(b"\0", 1)[0].decode("latin-1")
            vsize = s.Misc_VirtualSize or s.SizeOfRawData
            fsize = min(s.SizeOfRawData, vsize)
            off = s.PointerToRawData
            if off > n or fsize > n - off:
                self.problems.append(f"section {name} runs past the end of the file; truncated")
                fsize = max(0, n - off) if off <= n else 0
            ch = s.Characteristics
            self.sections.append(
                Section(
                    name,
                    s.VirtualAddress,
                    vsize,
                    off,
                    fsize,
                    executable=bool(ch & (SCN_EXECUTE | SCN_CODE)),
                    writable=bool(ch & SCN_WRITE),
                    index=i + 1,
                )
            )
        self._exports: list[Symbol] = []
        exp = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        if exp is not None:
            dllname = getattr(exp, "name", None)
            if dllname:
                self.soname = dllname.decode("utf-8", "replace")
            for e in exp.symbols:  # type: ignore[misc]  # reuses the except-clause name
                if not e.name or e.forwarder:
                    continue
                sec = self.section_for(e.address)
                self._exports.append(
                    Symbol(
                        e.name.decode("utf-8", "replace"),
                        e.address,
                        None,
                        (CODE if sec.executable else DATA) if sec else DATA,
                        sec.name if sec else None,
                        bool(sec and sec.writable),
                        "global",
                        sec,
                    )
                )
        self._imps: list[str] = []
        self.imports_by_dll: dict[str, list[str]] = {}
        for entry in getattr(pe, "DIRECTORY_ENTRY_IMPORT", []) or []:
            dll = entry.dll.decode("utf-8", "replace") if entry.dll else "?"
            self.needed.append(dll)
            names = [i.name.decode("utf-8", "replace") for i in entry.imports if i.name]
            self.imports_by_dll[dll] = names
            self._imps.extend(names)
        for w in pe.get_warnings()[:20]:
            self.warnings.append(str(w))
        if self.imports_by_dll:
            self.extra["imports_by_dll"] = self.imports_by_dll
        pe.close()

    def _load_symbols(self) -> list[Symbol]:
        return self._exports

    def _load_imports(self) -> list[str]:
        return self._imps
