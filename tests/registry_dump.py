"""Dumps a runtime's registry as JSON on stdout; run as a script in its own
process (one runtime per process).

    python tests/registry_dump.py official [extra.so ...]
        imports the `tvm_ffi` package (apache-tvm-ffi) and asks it
    python tests/registry_dump.py ours LIBTVM_FFI [extra.so ...]
        loads our libtvm_ffi.so with ctypes (RTLD_GLOBAL), then each extra
        library (RTLD_LAZY | RTLD_GLOBAL)

Output: {"globals": [names], "types": {key: {"index", "parent", "fields",
"methods"}}, "columns": {name: [type keys with a value] or null when the
column does not exist}, "loaded": {extra: "ok" or the dlopen error}}.
Column names probed: argv after "--columns" (comma separated).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any


class ByteArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]

    def text(self) -> str:
        return ctypes.string_at(self.data, self.size).decode() if self.size else ""


class AnyC(ctypes.Structure):
    _fields_ = [("type_index", ctypes.c_int32), ("pad", ctypes.c_uint32), ("v", ctypes.c_int64)]


class FieldInfo(ctypes.Structure):
    _fields_ = [
        ("name", ByteArray),
        ("doc", ByteArray),
        ("metadata", ByteArray),
        ("flags", ctypes.c_int64),
        ("size", ctypes.c_int64),
        ("alignment", ctypes.c_int64),
        ("offset", ctypes.c_int64),
        ("getter", ctypes.c_void_p),
        ("setter", ctypes.c_void_p),
        ("default", AnyC),
        ("field_static_type_index", ctypes.c_int32),
    ]


class MethodInfo(ctypes.Structure):
    _fields_ = [
        ("name", ByteArray),
        ("doc", ByteArray),
        ("metadata", ByteArray),
        ("flags", ctypes.c_int64),
        ("method", AnyC),
    ]


class TypeInfo(ctypes.Structure):
    pass


TypeInfo._fields_ = [
    ("type_index", ctypes.c_int32),
    ("type_depth", ctypes.c_int32),
    ("type_key", ByteArray),
    ("type_ancestors", ctypes.POINTER(ctypes.POINTER(TypeInfo))),
    ("type_key_hash", ctypes.c_uint64),
    ("num_fields", ctypes.c_int32),
    ("num_methods", ctypes.c_int32),
    ("fields", ctypes.POINTER(FieldInfo)),
    ("methods", ctypes.POINTER(MethodInfo)),
    ("metadata", ctypes.c_void_p),
]


class AttrColumn(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.POINTER(AnyC)),
        ("size", ctypes.c_int32),
        ("begin_index", ctypes.c_int32),
    ]


def declare(lib: ctypes.CDLL) -> None:
    lib.TVMFFIGetTypeInfo.restype = ctypes.POINTER(TypeInfo)
    lib.TVMFFIGetTypeInfo.argtypes = [ctypes.c_int32]
    lib.TVMFFITypeKeyToIndex.argtypes = [ctypes.POINTER(ByteArray), ctypes.POINTER(ctypes.c_int32)]
    lib.TVMFFIGetTypeAttrColumn.restype = ctypes.POINTER(AttrColumn)
    lib.TVMFFIGetTypeAttrColumn.argtypes = [ctypes.POINTER(ByteArray)]


def type_entry(lib: ctypes.CDLL, index: int) -> tuple[str, dict[str, Any]] | None:
    p = lib.TVMFFIGetTypeInfo(index)
    if not p:
        return None
    t = p.contents
    parent = (
        t.type_ancestors[t.type_depth - 1].contents.type_key.text() if t.type_depth > 0 else None
    )
    return t.type_key.text(), {
        "index": t.type_index,
        "parent": parent,
        "fields": [t.fields[i].name.text() for i in range(t.num_fields)],
        "methods": [t.methods[i].name.text() for i in range(t.num_methods)],
    }


def columns(
    lib: ctypes.CDLL, names: list[str], key_of: dict[int, str]
) -> dict[str, list[str] | None]:
    out: dict[str, list[str] | None] = {}
    for name in names:
        raw = name.encode()
        buf = ctypes.create_string_buffer(raw)
        ba = ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(raw))
        col = lib.TVMFFIGetTypeAttrColumn(ctypes.byref(ba))
        if not col:
            out[name] = None
            continue
        c = col.contents
        out[name] = sorted(
            key_of.get(c.begin_index + i, f"<{c.begin_index + i}>")
            for i in range(c.size)
            if c.data[i].type_index != 0
        )
    return out


def load_extras(paths: list[str]) -> dict[str, str]:
    loaded = {}
    for path in paths:
        try:
            ctypes.CDLL(path, os.RTLD_LAZY | os.RTLD_GLOBAL)
            loaded[os.path.basename(path)] = "ok"
        except OSError as e:
            loaded[os.path.basename(path)] = str(e)
    return loaded


def dump_official(extras: list[str], column_names: list[str]) -> dict[str, Any]:
    import tvm_ffi

    lib = tvm_ffi.LIB
    declare(lib)
    loaded = load_extras(extras)
    types: dict[str, dict[str, Any]] = {}
    for key in tvm_ffi.registry.get_registered_type_keys():
        raw = key.encode()
        buf = ctypes.create_string_buffer(raw)
        ba = ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(raw))
        idx = ctypes.c_int32(-1)
        if lib.TVMFFITypeKeyToIndex(ctypes.byref(ba), ctypes.byref(idx)) != 0:
            continue
        entry = type_entry(lib, idx.value)
        if entry:
            types[entry[0]] = entry[1]
    key_of = {v["index"]: k for k, v in types.items()}
    return {
        "globals": sorted(tvm_ffi.registry.list_global_func_names()),
        "types": types,
        "columns": columns(lib, column_names, key_of),
        "loaded": loaded,
    }


def read_string_any(a: AnyC) -> str:
    if a.type_index == 11:  # small str: bytes inline
        return bytes(ctypes.string_at(ctypes.addressof(a) + 8, a.pad)).decode()
    cell = ByteArray.from_address(a.v + 24)
    return cell.text()


def dump_ours(path: str, extras: list[str], column_names: list[str]) -> dict[str, Any]:
    lib = ctypes.CDLL(path, ctypes.RTLD_GLOBAL)
    declare(lib)
    loaded = load_extras(extras)
    out = AnyC()
    lib.tvmffi_rt_list_globals.argtypes = [ctypes.POINTER(AnyC)]
    if lib.tvmffi_rt_list_globals(ctypes.byref(out)) != 0:
        raise SystemExit("tvmffi_rt_list_globals failed")
    data = ctypes.c_void_p.from_address(out.v + 24).value or 0
    size = ctypes.c_int64.from_address(out.v + 32).value
    names = [read_string_any(AnyC.from_address(data + 16 * i)) for i in range(size)]
    lib.tvmffi_rt_type_index_end.restype = ctypes.c_int32
    types: dict[str, dict[str, Any]] = {}
    for i in range(lib.tvmffi_rt_type_index_end()):
        entry = type_entry(lib, i)
        if entry:
            types[entry[0]] = entry[1]
    key_of = {v["index"]: k for k, v in types.items()}
    return {
        "globals": sorted(names),
        "types": types,
        "columns": columns(lib, column_names, key_of),
        "loaded": loaded,
    }


def call_global(lib: ctypes.CDLL, name: str, args: list[AnyC]) -> AnyC:
    raw = name.encode()
    buf = ctypes.create_string_buffer(raw)
    ba = ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(raw))
    f = ctypes.c_void_p()
    if lib.TVMFFIFunctionGetGlobal(ctypes.byref(ba), ctypes.byref(f)) != 0 or not f.value:
        raise SystemExit(f"no global {name}")
    return call_function(lib, f.value, args)


def call_function(lib: ctypes.CDLL, f: int, args: list[AnyC]) -> AnyC:
    arr = (AnyC * max(len(args), 1))(*args)
    out = AnyC()
    lib.TVMFFIFunctionCall.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(AnyC),
        ctypes.c_int32,
        ctypes.POINTER(AnyC),
    ]
    if lib.TVMFFIFunctionCall(f, arr, len(args), ctypes.byref(out)) != 0:
        raise SystemExit("call failed")
    return out


def dump_bare(path: str, extras: list[str], column_names: list[str]) -> dict[str, Any]:
    """A runtime by itself, through its own globals (works for both)."""
    lib = ctypes.CDLL(path, ctypes.RTLD_GLOBAL)
    declare(lib)
    loaded = load_extras(extras)
    functor = call_global(lib, "ffi.FunctionListGlobalNamesFunctor", [])
    count = call_function(lib, functor.v, [AnyC(1, 0, -1)]).v
    names = [read_string_any(call_function(lib, functor.v, [AnyC(1, 0, i)])) for i in range(count)]
    keys = call_global(lib, "ffi.GetRegisteredTypeKeys", [])
    data = ctypes.c_void_p.from_address(keys.v + 24).value or 0
    size = ctypes.c_int64.from_address(keys.v + 32).value
    types: dict[str, dict[str, Any]] = {}
    for i in range(size):
        key = read_string_any(AnyC.from_address(data + 16 * i)).encode()
        buf = ctypes.create_string_buffer(key)
        ba = ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(key))
        idx = ctypes.c_int32(-1)
        if lib.TVMFFITypeKeyToIndex(ctypes.byref(ba), ctypes.byref(idx)) == 0:
            entry = type_entry(lib, idx.value)
            if entry:
                types[entry[0]] = entry[1]
    key_of = {v["index"]: k for k, v in types.items()}
    return {
        "globals": sorted(names),
        "types": types,
        "columns": columns(lib, column_names, key_of),
        "loaded": loaded,
    }


def main(argv: list[str]) -> None:
    column_names: list[str] = []
    if "--columns" in argv:
        i = argv.index("--columns")
        column_names = [c for c in argv[i + 1].split(",") if c]
        argv = argv[:i] + argv[i + 2 :]
    if argv[0] == "official":
        result = dump_official(argv[1:], column_names)
    elif argv[0] == "bare":
        result = dump_bare(argv[1], argv[2:], column_names)
    else:
        result = dump_ours(argv[1], argv[2:], column_names)
    json.dump(result, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
