"""One symbol model shared by the ELF, PE and Mach-O readers.

A reader turns a file into a `Binary`: format, architecture, needed libraries,
defined (exported) symbols and imported symbol names. Symbol names are given
as the C source spells them (Mach-O's leading underscore removed). Reading a
symbol's bytes goes through `read_symbol_bytes`, which maps the symbol's
address to a file offset through its section and never reads past the
symbol's extent or the end of the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from ..errors import FormatError

if TYPE_CHECKING:
    import mmap

    from typing_extensions import Self

    # What a reader holds: the whole file, read or mapped.
    FileData = Union[bytes, bytearray, mmap.mmap]

CODE = "code"
DATA = "data"
OTHER = "other"


class Section:
    """A mapped piece of the file: [addr, addr+size) lives at file [offset, offset+filesize)."""

    __slots__ = (
        "name",
        "addr",
        "size",
        "offset",
        "filesize",
        "executable",
        "writable",
        "index",
        "type",
        "link",
        "entsize",
    )

    name: str
    addr: int
    size: int
    offset: int
    filesize: int
    executable: bool
    writable: bool
    index: int | None
    type: int
    link: int
    entsize: int

    def __init__(
        self,
        name: str,
        addr: int,
        size: int,
        offset: int,
        filesize: int,
        executable: bool = False,
        writable: bool = False,
        index: int | None = None,
    ) -> None:
        self.name = name
        self.addr = addr
        self.size = size
        self.offset = offset
        self.filesize = filesize  # 0 for sections with no file bytes (.bss)
        self.executable = executable
        self.writable = writable
        self.index = index
        self.type = self.link = self.entsize = 0  # ELF section-header fields, else 0

    def contains(self, addr: int) -> bool:
        return self.addr <= addr < self.addr + self.size

    def __repr__(self) -> str:
        return f"Section({self.name!r}, addr={self.addr:#x}, size={self.size})"


class Symbol:
    """A defined symbol. `size` is None when the format does not record sizes
    (PE, Mach-O); `extent` is then the distance to the next symbol or the end
    of the section, which bounds reads."""

    __slots__ = ("name", "value", "size", "kind", "section", "writable", "binding", "_sec")

    name: str
    value: int
    size: int | None
    kind: str
    section: str | None
    writable: bool
    binding: str
    _sec: Section | None

    def __init__(
        self,
        name: str,
        value: int,
        size: int | None,
        kind: str,
        section: str | None = None,
        writable: bool = False,
        binding: str = "global",
        sec: Section | None = None,
    ) -> None:
        self.name = name
        self.value = value
        self.size = size
        self.kind = kind
        self.section = section  # section name (str) or None
        self.writable = writable
        self.binding = binding  # "global" | "weak"
        self._sec = sec  # the Section object, used to map to a file offset

    def to_json(self) -> dict[str, Any]:  # a symbol as JSON (a JSON boundary)
        return {
            "name": self.name,
            "address": self.value,
            "size": self.size,
            "kind": self.kind,
            "section": self.section,
            "writable": self.writable,
            "binding": self.binding,
        }

    def __repr__(self) -> str:
        return f"Symbol({self.name!r}, {self.value:#x}, size={self.size}, {self.kind})"


class Binary:
    """What a reader found in a file. Subclasses fill the fields and may
    override `find_symbols` with a faster bulk path."""

    format = "?"

    def __init__(self, path: object, data: FileData) -> None:
        self.path = str(path)
        self.data = data  # bytes-like (mmap or bytes) of the whole file
        self.arch = "unknown"
        self.bits = 64
        self.kind = "shared"  # shared | executable | object | other
        self.needed: list[
            str
        ] = []  # libraries the loader must find (DT_NEEDED, DLL imports, LC_LOAD_DYLIB)
        self.soname: str | None = None
        self.sections: list[Section] = []
        self.warnings: list[str] = []  # oddities that do not make the file malformed
        self.problems: list[
            str
        ] = []  # malformations the reader worked around (truncated sections...)
        self.extra: dict[
            str, Any
        ] = {}  # format-specific facts for the JSON output (fat slices, ...)
        self._symbols: list[Symbol] | None = None
        self._by_name: dict[str, Symbol] | None = None
        self._imports: list[str] | None = None

    # -- to be provided by readers -------------------------------------
    def _load_symbols(self) -> list[Symbol]:
        """Return the list of defined, externally visible Symbols."""
        raise NotImplementedError

    def _load_imports(self) -> list[str]:
        """Return the list of imported (undefined) symbol names."""
        raise NotImplementedError

    # -- shared API -------------------------------------------------------
    @property
    def symbols(self) -> list[Symbol]:
        if self._symbols is None:
            self._symbols = self._load_symbols()
        return self._symbols

    @property
    def imports(self) -> list[str]:
        if self._imports is None:
            self._imports = self._load_imports()
        return self._imports

    def find_symbols(self, prefixes: tuple[str, ...]) -> list[Symbol]:
        """Defined symbols whose names start with any of `prefixes` (a tuple of str)."""
        return [s for s in self.symbols if s.name.startswith(prefixes)]

    def get(self, name: str) -> Symbol | None:
        if self._by_name is None:
            self._by_name = {s.name: s for s in self.symbols}
        return self._by_name.get(name)

    def section_for(self, addr: int) -> Section | None:
        for s in self.sections:
            if s.size and s.contains(addr):
                return s
        return None

    def extent(self, sym: Symbol) -> int:
        """How many bytes from `sym.value` belong to the symbol, as far as the file
        says: st_size when recorded, else up to the next symbol in its section
        (or the section end)."""
        sec = sym._sec or self.section_for(sym.value)
        if sec is None:
            return 0
        end = sec.addr + sec.size
        if sym.size:  # 0 means "not recorded" as much as None does
            return max(0, min(sym.size, end - sym.value))
        nxt = end
        for s in self.symbols:
            if sec.addr <= s.value < nxt and s.value > sym.value:
                nxt = s.value
        return max(0, nxt - sym.value)

    def file_offset(self, sym: Symbol) -> int | None:
        sec = sym._sec or self.section_for(sym.value)
        if sec is None or not sec.contains(sym.value) or sec.filesize == 0:
            return None
        delta = sym.value - sec.addr
        if delta >= sec.filesize:
            return None
        return sec.offset + delta

    def read_symbol_bytes(self, sym: Symbol, limit: int | None = None) -> bytes:
        """The bytes of `sym` from the file, bounded by the symbol's extent, its
        section's file bytes, the file size and `limit`. Raises FormatError when
        the symbol has no bytes in the file (e.g. it lives in .bss)."""
        off = self.file_offset(sym)
        if off is None:
            raise FormatError(f"symbol {sym.name} has no bytes in the file")
        sec = sym._sec or self.section_for(sym.value)
        assert sec is not None  # file_offset found it
        n = self.extent(sym)
        n = min(n, sec.offset + sec.filesize - off, len(self.data) - off)
        if limit is not None:
            n = min(n, limit)
        if n <= 0 or off >= len(self.data):
            return b""
        return bytes(self.data[off : off + n])

    def close(self) -> None:
        closer = getattr(self.data, "close", None)
        if closer is not None:
            try:
                closer()
            except (BufferError, ValueError):  # views still alive; the GC will do it
                pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
