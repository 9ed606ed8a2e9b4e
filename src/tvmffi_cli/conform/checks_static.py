"""Checks that read the library file only (no code of it runs)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Collection

from ..abi.symbols import (
    CTX_PREFIX,
    CUBIN_PREFIX,
    DOC_PREFIX,
    FUNC_PREFIX,
    SPECIAL_PREFIX,
    TVM_FFI_PREFIX,
)
from ..abi.symbols import LIBRARY_BIN as LIBBIN
from ..abi.symbols import LIBRARY_CTX as LIBCTX
from ..abi.symbols import METADATA_PREFIX as META_PREFIX
from ..text import JsonValue
from .results import FAIL, PASS, SKIP, Result

if TYPE_CHECKING:
    from ..binary.model import Binary, Symbol

_IDENT = re.compile(r"[A-Za-z0-9_]+\Z")


class Inventory:
    """What the symbol table says about a library's TVM-FFI surface."""

    def __init__(self) -> None:
        self.functions: list[str] = []  # names of __tvm_ffi_<name> symbols, sorted
        self.code: set[str] = set()  # the subset that is code (probed)
        self.getters: dict[str, set[str]] = {}  # name -> set of "metadata" / "doc"
        self.symbols: dict[
            str, Symbol
        ] = {}  # symbol name -> Symbol, for every __tvm_ffi* / __TVMFFI* export
        self.bad_names: list[tuple[str, str]] = []  # (symbol name, reason)

    def probe_targets(self) -> list[str]:
        return [n for n in self.functions if n in self.code]


def _is_code(binary: Binary, sym: Symbol) -> bool:
    from ..binary import CODE, DATA

    if sym.kind == CODE:
        return True
    if sym.kind == DATA:
        return False
    sec = getattr(sym, "_sec", None) or binary.section_for(sym.value)
    return bool(sec is not None and sec.executable)


def inventory(binary: Binary) -> Inventory:
    inv = Inventory()
    for sym in binary.find_symbols((TVM_FFI_PREFIX, CTX_PREFIX)):
        name = sym.name
        inv.symbols[name] = sym
        if name.startswith(CTX_PREFIX):
            continue
        if name.startswith(SPECIAL_PREFIX):
            for prefix, what in ((META_PREFIX, "metadata"), (DOC_PREFIX, "doc")):
                if name.startswith(prefix):
                    fn = name[len(prefix) :]
                    if _IDENT.match(fn):
                        inv.getters.setdefault(fn, set()).add(what)
                    else:
                        inv.bad_names.append(
                            (name, f"{what} getter for an invalid function name {fn!r}")
                        )
                    break
            else:
                if name in (LIBBIN, LIBCTX):
                    pass
                elif name.startswith(CUBIN_PREFIX) and len(name) > len(CUBIN_PREFIX):
                    pass
                else:
                    inv.bad_names.append(
                        (
                            name,
                            "unknown special symbol: names starting with "
                            "`__tvm_ffi__` are reserved for metadata_, "
                            "doc_, library_bin, library_ctx and cubin_",
                        )
                    )
        elif name.startswith(FUNC_PREFIX):
            fn = name[len(FUNC_PREFIX) :]
            if not fn:
                inv.bad_names.append((name, "function symbol with an empty name"))
            elif not _IDENT.match(fn):
                inv.bad_names.append((name, f"function name {fn!r} is not a C identifier"))
            else:
                inv.functions.append(fn)
                if _is_code(binary, sym):
                    inv.code.add(fn)
        else:
            inv.bad_names.append(
                (name, "looks like a TVM-FFI symbol but lacks the `__tvm_ffi_` prefix")
            )
    inv.functions.sort()
    return inv


def check_export_names(binary: Binary, inv: Inventory) -> list[Result]:
    if not inv.bad_names:
        n = sum(1 for s in inv.symbols if s.startswith(TVM_FFI_PREFIX))
        return [Result("export-names", None, PASS, f"{n} exported __tvm_ffi names checked")]
    return [Result("export-names", name, FAIL, f"{name}: {why}") for name, why in inv.bad_names]


def check_orphan_getters(binary: Binary, inv: Inventory) -> list[Result]:
    out: list[Result] = []
    have = set(inv.functions)
    for fn in sorted(inv.getters):
        if fn not in have:
            kinds = " and ".join(sorted(inv.getters[fn]))
            out.append(
                Result(
                    "orphan-getter",
                    fn,
                    FAIL,
                    f"{kinds} getter for `{fn}` but no `__tvm_ffi_{fn}` is exported",
                )
            )
    if not out:
        out.append(
            Result(
                "orphan-getter",
                None,
                PASS,
                f"{sum(len(g) for g in inv.getters.values())} getters, all with their function",
            )
        )
    return out


def check_symbol_kind(binary: Binary, inv: Inventory) -> list[Result]:
    out: list[Result] = []
    for fn in inv.functions:
        bad: list[str] = []
        for sym_name in (FUNC_PREFIX + fn, META_PREFIX + fn, DOC_PREFIX + fn):
            sym = inv.symbols.get(sym_name)
            if sym is not None and not _is_code(binary, sym):
                sec = sym.section or "no section"
                bad.append(f"{sym_name} is a {sym.kind} symbol in {sec}, not code")
        if bad:
            out.append(Result("symbol-kind", fn, FAIL, "; ".join(bad)))
        else:
            out.append(Result("symbol-kind", fn, PASS, "code"))
    for fn in sorted(set(inv.getters) - set(inv.functions)):  # orphans: their getters still count
        for sym_name in (META_PREFIX + fn, DOC_PREFIX + fn):
            sym = inv.symbols.get(sym_name)
            if sym is not None and not _is_code(binary, sym):
                out.append(
                    Result("symbol-kind", fn, FAIL, f"{sym_name} is a {sym.kind} symbol, not code")
                )
    return out


def check_library_bin(binary: Binary, inv: Inventory) -> list[Result]:
    from ..binary import libbin
    from ..errors import FormatError

    sym = inv.symbols.get(LIBBIN)
    if sym is None:
        return [Result("library-bin", None, SKIP, f"no {LIBBIN} in this library")]
    try:
        data = binary.read_symbol_bytes(sym)
    except FormatError as e:
        return [Result("library-bin", None, FAIL, f"{LIBBIN}: {e}")]
    lb = libbin.decode(data)
    # (byte offset, or None for the whole symbol; message)
    errors: list[tuple[int | None, str]] = [(e["offset"], e["message"]) for e in lb.errors]
    libs = [m.index for m in lb.modules if m.kind == libbin.LIB_KIND]
    if len(libs) > 1:
        errors.append(
            (None, f"{len(libs)} `_lib` modules (indices {libs}); at most one is allowed")
        )
    if errors:
        offset, message = errors[0]
        at = f" at byte {offset}" if offset is not None else ""
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        listed: list[JsonValue] = [{"offset": o, "message": m} for o, m in errors]
        return [Result("library-bin", None, FAIL, f"{message}{at}{more}", {"errors": listed})]
    kinds = ", ".join(m.kind for m in lb.modules)
    return [Result("library-bin", None, PASS, f"{len(lb.modules)} modules ({kinds})")]


def check_context_symbols(binary: Binary, inv: Inventory) -> list[Result]:
    from ..ffi.runtime import C_API

    ptr = (binary.bits or 64) // 8
    names = sorted(n for n in inv.symbols if n.startswith(CTX_PREFIX) or n == LIBCTX)
    if not names:
        return [Result("context-symbols", None, SKIP, "no context symbols")]
    bad: list[str] = []
    for n in names:
        sym = inv.symbols[n]
        if n != LIBCTX and n[2:] not in C_API:
            bad.append(f"{n}: {n[2:]} is not a C API function, so no loader fills it")
            continue
        if _is_code(binary, sym):
            bad.append(f"{n}: is code, must be a pointer variable")
            continue
        if not sym.writable:
            bad.append(
                f"{n}: is read-only (in {sym.section or 'no section'}); the loader writes to it"
            )
        if sym.size is not None and sym.size != ptr:
            bad.append(f"{n}: is {sym.size} bytes, must be {ptr} (one pointer)")
    if bad:
        return [Result("context-symbols", None, FAIL, "; ".join(bad), {"problems": list(bad)})]
    return [Result("context-symbols", None, PASS, f"{len(names)} context symbols")]


def check_c_api_imports(binary: Binary, inv: Inventory) -> list[Result]:
    from ..binary.deps import runtime_imports
    from ..ffi.runtime import C_API

    # A TVMFFI* name a sibling library defines (DT_NEEDED next to it) is not
    # the runtime's to provide.
    imported = [n for n in runtime_imports(binary) if n.startswith("TVMFFI")]
    unknown = [n for n in imported if n not in C_API]
    if unknown:
        return [
            Result(
                "c-api-imports",
                None,
                FAIL,
                f"imports {len(unknown)} function(s) outside the C API: " + ", ".join(unknown),
                {"unknown": list(unknown)},
            )
        ]
    return [
        Result("c-api-imports", None, PASS, f"{len(imported)} TVMFFI imports, all in the C API")
    ]


def check_has_functions(binary: Binary, inv: Inventory) -> list[Result]:
    if inv.functions:
        return [Result("has-functions", None, PASS, f"{len(inv.functions)} functions exported")]
    return [
        Result(
            "has-functions",
            None,
            FAIL,
            "no exported __tvm_ffi_ function: nothing to "
            "check, and nothing a TVM-FFI host could call",
        )
    ]


STATIC_CHECKS: dict[str, Callable[[Binary, Inventory], list[Result]]] = {
    "export-names": check_export_names,
    "has-functions": check_has_functions,
    "orphan-getter": check_orphan_getters,
    "symbol-kind": check_symbol_kind,
    "library-bin": check_library_bin,
    "context-symbols": check_context_symbols,
    "c-api-imports": check_c_api_imports,
}


def run(binary: Binary, inv: Inventory, ids: Collection[str]) -> list[Result]:
    out: list[Result] = []
    for cid, fn in STATIC_CHECKS.items():
        if cid in ids:
            out.extend(fn(binary, inv))
    return out
