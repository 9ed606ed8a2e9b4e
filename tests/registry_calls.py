"""Calls global functions of one runtime through the C ABI (ctypes) and
prints the canonical results as JSON; run as a script in its own process:

    python tests/registry_calls.py LIBTVM_FFI [--testing LIBTVM_FFI_TESTING]

The same steps run on the official and on our runtime; the test compares
the two outputs exactly. Values are read through the ABI layouts (sequence
cell, map iteration through the runtime's own iterator functor).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

from registry_dump import AnyC, ByteArray, TypeInfo

STATIC_OBJECT_BEGIN = 64


class Runtime:
    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path, ctypes.RTLD_GLOBAL)
        lib = self.lib
        lib.TVMFFIFunctionGetGlobal.argtypes = [
            ctypes.POINTER(ByteArray),
            ctypes.POINTER(ctypes.c_void_p),
        ]
        lib.TVMFFIFunctionCall.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(AnyC),
            ctypes.c_int32,
            ctypes.POINTER(AnyC),
        ]
        lib.TVMFFIErrorMoveFromRaised.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.TVMFFIObjectDecRef.argtypes = [ctypes.c_void_p]
        lib.TVMFFIObjectIncRef.argtypes = [ctypes.c_void_p]
        lib.TVMFFIGetTypeInfo.restype = ctypes.POINTER(TypeInfo)
        lib.TVMFFIGetTypeInfo.argtypes = [ctypes.c_int32]
        lib.TVMFFIStringFromByteArray.argtypes = [ctypes.POINTER(ByteArray), ctypes.POINTER(AnyC)]
        self._keep: list[Any] = []

    def global_func(self, name: str) -> int | None:
        raw = name.encode()
        buf = ctypes.create_string_buffer(raw)
        ba = ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(raw))
        f = ctypes.c_void_p()
        if self.lib.TVMFFIFunctionGetGlobal(ctypes.byref(ba), ctypes.byref(f)) != 0:
            self.take_error()
            return None
        return f.value

    def take_error(self) -> tuple[str, str]:
        e = ctypes.c_void_p()
        self.lib.TVMFFIErrorMoveFromRaised(ctypes.byref(e))
        if not e.value:
            return ("<none>", "")
        kind = ByteArray.from_address(e.value + 24).text()
        msg = ByteArray.from_address(e.value + 40).text()
        self.lib.TVMFFIObjectDecRef(e.value)
        return (kind, msg)

    def to_any(self, v: Any) -> AnyC:
        if isinstance(v, AnyC):
            return v
        if v is None:
            return AnyC(0, 0, 0)
        if isinstance(v, bool):
            return AnyC(2, 0, int(v))
        if isinstance(v, int):
            return AnyC(1, 0, v)
        if isinstance(v, float):
            a = AnyC(3, 0, 0)
            ctypes.c_double.from_address(ctypes.addressof(a) + 8).value = v
            return a
        if isinstance(v, str):
            raw = v.encode()
            buf = ctypes.create_string_buffer(raw)
            ba = ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(raw))
            out = AnyC()
            self.lib.TVMFFIStringFromByteArray(ctypes.byref(ba), ctypes.byref(out))
            self._keep.append(out)  # owned for the whole run
            return out
        raise TypeError(type(v))

    def make_bytes(self, data: bytes) -> AnyC:
        buf = ctypes.create_string_buffer(data, len(data))
        ba = ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(data))
        out = AnyC()
        self.lib.TVMFFIBytesFromByteArray.argtypes = [
            ctypes.POINTER(ByteArray),
            ctypes.POINTER(AnyC),
        ]
        self.lib.TVMFFIBytesFromByteArray(ctypes.byref(ba), ctypes.byref(out))
        return out

    def call(self, name: str, *args: Any) -> Any:
        f = self.global_func(name)
        if f is None:
            return {"missing_global": name}
        return self.call_func(f, *args)

    def call_func(self, f: int, *args: Any) -> Any:
        arr = (AnyC * max(len(args), 1))(*[self.to_any(a) for a in args])
        out = AnyC()
        if self.lib.TVMFFIFunctionCall(f, arr, len(args), ctypes.byref(out)) != 0:
            return {"raised": list(self.take_error())}
        return out

    def type_key(self, index: int) -> str:
        p = self.lib.TVMFFIGetTypeInfo(index)
        return p.contents.type_key.text() if p else f"<{index}>"

    def canon(self, a: Any, depth: int = 0) -> Any:
        if not isinstance(a, AnyC):
            return a
        t = a.type_index
        if t == 0:
            return None
        if t == 1:
            return a.v
        if t == 2:
            return bool(a.v)
        if t == 3:
            return {"float": repr(ctypes.c_double.from_address(ctypes.addressof(a) + 8).value)}
        if t == 11:
            return ctypes.string_at(ctypes.addressof(a) + 8, a.pad).decode()
        if t == 6:
            return {
                "device": [
                    ctypes.c_int32.from_address(ctypes.addressof(a) + 8).value,
                    ctypes.c_int32.from_address(ctypes.addressof(a) + 12).value,
                ]
            }
        if t == 12:
            return {"bytes": ctypes.string_at(ctypes.addressof(a) + 8, a.pad).hex()}
        if t < STATIC_OBJECT_BEGIN:
            return {"pod": t}
        key = self.type_key(t)
        if key == "ffi.String":
            return ByteArray.from_address(a.v + 24).text()
        if key == "ffi.Bytes":
            return {
                "bytes": ctypes.string_at(
                    ByteArray.from_address(a.v + 24).data, ByteArray.from_address(a.v + 24).size
                ).hex()
            }
        if depth > 4:
            return {"object": key}
        if key in ("ffi.Array", "ffi.List"):
            data = ctypes.c_void_p.from_address(a.v + 24).value or 0
            size = ctypes.c_int64.from_address(a.v + 32).value
            return {
                key: [self.canon(AnyC.from_address(data + 16 * i), depth + 1) for i in range(size)]
            }
        if key == "ffi.BigInt":
            n = ctypes.c_uint64.from_address(a.v + 24).value
            return {"bigint": ctypes.string_at(a.v + 32, 8 * n).hex()}
        if key == "ffi.Function":
            return {"object": key}
        if key in ("ffi.Map", "ffi.Dict"):
            functor = self.call(
                "ffi.MapForwardIterFunctor" if key == "ffi.Map" else "ffi.DictForwardIterFunctor", a
            )
            items = []
            size = ctypes.c_uint64.from_address(a.v + 32).value
            for _ in range(size):
                k = self.call_func(functor.v, 0)
                v = self.call_func(functor.v, 1)
                items.append([self.canon(k, depth + 1), self.canon(v, depth + 1)])
                self.call_func(functor.v, 2)
            return {key: items}
        if key == "ffi.Shape":
            data = ctypes.c_void_p.from_address(a.v + 24).value or 0
            size = ctypes.c_uint64.from_address(a.v + 32).value
            return {key: [ctypes.c_int64.from_address(data + 8 * i).value for i in range(size)]}
        return {"object": key, "fields": self.fields(a, depth)}

    def fields(self, a: AnyC, depth: int) -> dict[str, Any]:
        """Reflected fields through the runtime's own getters (ancestors first)."""
        getter_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(AnyC))
        info = self.lib.TVMFFIGetTypeInfo(a.type_index).contents
        chain = [info.type_ancestors[i].contents for i in range(info.type_depth)] + [info]
        out: dict[str, Any] = {}
        for t in chain:
            for i in range(t.num_fields):
                f = t.fields[i]
                if not f.getter:
                    continue
                v = AnyC()
                if getter_t(f.getter)(a.v + f.offset, ctypes.byref(v)) != 0:
                    out[f.name.text()] = {"raised": list(self.take_error())}
                else:
                    out[f.name.text()] = self.canon(v, depth + 1)
        return out


def column_entry(rt: Runtime, column: str, key: str) -> int | None:
    from registry_dump import AttrColumn

    rt.lib.TVMFFIGetTypeAttrColumn.restype = ctypes.POINTER(AttrColumn)
    rt.lib.TVMFFIGetTypeAttrColumn.argtypes = [ctypes.POINTER(ByteArray)]
    rt.lib.TVMFFITypeKeyToIndex.argtypes = [
        ctypes.POINTER(ByteArray),
        ctypes.POINTER(ctypes.c_int32),
    ]
    bufs = [ctypes.create_string_buffer(x.encode()) for x in (column, key)]
    col = rt.lib.TVMFFIGetTypeAttrColumn(
        ctypes.byref(ByteArray(ctypes.cast(bufs[0], ctypes.c_void_p), len(column)))
    )
    idx = ctypes.c_int32(-1)
    rt.lib.TVMFFITypeKeyToIndex(
        ctypes.byref(ByteArray(ctypes.cast(bufs[1], ctypes.c_void_p), len(key))), ctypes.byref(idx)
    )
    if not col or idx.value < 0 or idx.value >= col.contents.size:
        return None
    entry = col.contents.data[idx.value - col.contents.begin_index]
    return entry.v if entry.type_index >= STATIC_OBJECT_BEGIN else None


def steps(rt: Runtime, testing: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def rec(label: str, value: Any) -> Any:
        out[label] = rt.canon(value)
        return value

    # Dict: in-place changes, growth past the small sizes, erase keeps order
    d = rec("Dict", rt.call("ffi.Dict", "a", 1, "b", 2))
    rec("DictSize", rt.call("ffi.DictSize", d))
    rt.call("ffi.DictSetItem", d, "c", 3)
    rt.call("ffi.DictSetItem", d, "a", 10)
    rec("Dict after set", d)
    rec("DictGetItem b", rt.call("ffi.DictGetItem", d, "b"))
    rec("DictGetItem missing kind", rt.call("ffi.DictGetItem", d, "zz"))
    rec("DictCount a", rt.call("ffi.DictCount", d, "a"))
    rec("DictCount zz", rt.call("ffi.DictCount", d, "zz"))
    rt.call("ffi.DictErase", d, "a")
    rec("Dict after erase", d)
    for i in range(20):
        rt.call("ffi.DictSetItem", d, i, f"v{i}")
    rec("Dict grown", d)
    rec("DictSize grown", rt.call("ffi.DictSize", d))
    for i in range(0, 20, 3):
        rt.call("ffi.DictErase", d, i)
    rec("Dict after erases", d)
    rec("DictGetItemOrMissing hit", rt.call("ffi.DictGetItemOrMissing", d, "b"))
    miss = rt.call("ffi.DictGetItemOrMissing", d, "nope")
    inv = rt.call("ffi.GetInvalidObject")
    rec("DictGetItemOrMissing miss", miss)
    out["missing is GetInvalidObject"] = miss.v == inv.v
    rt.call("ffi.DictClear", d)
    rec("DictSize cleared", rt.call("ffi.DictSize", d))
    rec("Dict with odd args", rt.call("ffi.Dict", "a"))
    rec("DictSize on a Map", rt.call("ffi.DictSize", rt.call("ffi.Map", "a", 1)))
    # Map
    m = rt.call("ffi.Map", "k", 1, "j", [2][0])
    rec("MapGetItemOrMissing hit", rt.call("ffi.MapGetItemOrMissing", m, "k"))
    out["Map missing is GetInvalidObject"] = rt.call("ffi.MapGetItemOrMissing", m, "x").v == inv.v
    rec("kwargs object", rt.call("ffi.GetKwargsObject"))
    # List
    lst = rec("List", rt.call("ffi.List", 1, "x", 2.5))
    rt.call("ffi.ListAppend", lst, "tail")
    rt.call("ffi.ListInsert", lst, 1, "ins")
    rec("List after append/insert", lst)
    rec("ListPop 0", rt.call("ffi.ListPop", lst, 0))
    rec("ListErase 1", rt.call("ffi.ListErase", lst, 1))
    rec("List after pop/erase", lst)
    rt.call("ffi.ListReplaceSlice", lst, 0, 1, rt.call("ffi.List", 7, 8, 9))
    rec("List after replace", lst)
    rt.call("ffi.ListReplaceSlice", lst, 1, 3, lst)
    rec("List after self replace", lst)
    rt.call("ffi.ListReverse", lst)
    rec("List reversed", lst)
    rec("ListContains 7", rt.call("ffi.ListContains", lst, 7))
    rec("ListContains 99", rt.call("ffi.ListContains", lst, 99))
    rt.call("ffi.ListSetItem", lst, 0, "first")
    rec("ListGetItem 0", rt.call("ffi.ListGetItem", lst, 0))
    rec("ListGetItem out of range", rt.call("ffi.ListGetItem", lst, 100))
    rec("ListInsert out of range", rt.call("ffi.ListInsert", lst, 100, 1))
    rec("ListEraseRange bad", rt.call("ffi.ListEraseRange", lst, 3, 1))
    rt.call("ffi.ListEraseRange", lst, 0, 2)
    rec("List after erase range", lst)
    rt.call("ffi.ListReserve", lst, 100)
    for i in range(10):
        rt.call("ffi.ListAppend", lst, i)
    rec("List grown", lst)
    rec("ListSize", rt.call("ffi.ListSize", lst))
    rt.call("ffi.ListClear", lst)
    rec("ListSize cleared", rt.call("ffi.ListSize", lst))
    rec("ListSize on an Array", rt.call("ffi.ListSize", rt.call("ffi.Array", 1)))
    # nested containers
    rec(
        "nested",
        rt.call(
            "ffi.Array",
            rt.call("ffi.List", 1),
            rt.call("ffi.Dict", "x", 1),
            rt.call("ffi.Map", "y", rt.call("ffi.Shape", 2, 3)),
        ),
    )
    rec("String", rt.call("ffi.String", "a string of some length"))
    # devices in containers (no tensor: the CPU default), sentinels, wrappers
    rec(
        "FindFirstNonCPUDevice nested",
        rt.call(
            "ffi.ContainerFindFirstNonCPUDevice",
            rt.call("ffi.Array", 1, rt.call("ffi.Dict", "k", rt.call("ffi.List", 2))),
        ),
    )
    rec("FindFirstNonCPUDevice int", rt.call("ffi.ContainerFindFirstNonCPUDevice", 3))
    rec("VisitInterrupt", rt.call("ffi.VisitInterrupt", 5))
    rec("GetGlobalFuncMetadata unknown", rt.call("ffi.GetGlobalFuncMetadata", "no.such.func"))
    safe_call_t = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(AnyC)
    )

    def seven(_self: Any, _args: Any, n: int, result: Any) -> int:
        result[0].type_index = 1
        result[0].v = 700 + n
        return 0

    cb = safe_call_t(seven)
    rt._keep.append(cb)
    ptr = ctypes.cast(cb, ctypes.c_void_p).value or 0
    f = rt.call("ffi.FunctionFromExternC", AnyC(4, 0, 1), AnyC(4, 0, ptr), None)
    rec("FunctionFromExternC", f)
    if isinstance(f, AnyC):
        rec("FunctionFromExternC called", rt.call_func(f.v, 1, 2))
    rec("Bytes of str", rt.call("ffi.Bytes", "x"))
    # the __ffi_convert__ hooks of the built-in types on a set of inputs
    from registry_dump import AttrColumn

    rt.lib.TVMFFIGetTypeAttrColumn.restype = ctypes.POINTER(AttrColumn)
    rt.lib.TVMFFIGetTypeAttrColumn.argtypes = [ctypes.POINTER(ByteArray)]
    rt.lib.TVMFFITypeKeyToIndex.argtypes = [
        ctypes.POINTER(ByteArray),
        ctypes.POINTER(ctypes.c_int32),
    ]
    name = b"__ffi_convert__"
    nbuf = ctypes.create_string_buffer(name)
    col = rt.lib.TVMFFIGetTypeAttrColumn(
        ctypes.byref(ByteArray(ctypes.cast(nbuf, ctypes.c_void_p), len(name)))
    )
    inputs = {
        "int": 1,
        "None": None,
        "small str": "ab",
        "str": "a longer string value",
        "Array": rt.call("ffi.Array", 1, "x"),
        "List": rt.call("ffi.List", 1, "x"),
        "Map": rt.call("ffi.Map", "k", 1),
        "Dict": rt.call("ffi.Dict", "k", 1),
        "Shape": rt.call("ffi.Shape", 2, 3),
        "Bytes": rt.make_bytes(b"\x00bytes value"),
        "Function": AnyC(68, 0, rt.global_func("ffi.Array") or 0),
    }
    for key in [
        "ffi.Object",
        "ffi.String",
        "ffi.Bytes",
        "ffi.Error",
        "ffi.Function",
        "ffi.Shape",
        "ffi.Tensor",
        "ffi.Array",
        "ffi.Map",
        "ffi.List",
        "ffi.Dict",
        "ffi.IntEnum",
        "ffi.StrEnum",
    ]:
        raw = key.encode()
        kbuf = ctypes.create_string_buffer(raw)
        idx = ctypes.c_int32(-1)
        rt.lib.TVMFFITypeKeyToIndex(
            ctypes.byref(ByteArray(ctypes.cast(kbuf, ctypes.c_void_p), len(raw))), ctypes.byref(idx)
        )
        c = col.contents
        entry = c.data[idx.value - c.begin_index] if col and idx.value < c.size else None
        if entry is None or entry.type_index < STATIC_OBJECT_BEGIN:
            out[f"convert {key}"] = "no hook"
            continue
        for label, value in inputs.items():
            rec(f"convert {key} <- {label}", rt.call_func(entry.v, value))
    # default objects (__ffi_new__) and their shallow copies
    for key in [
        "ffi.VisitInterrupt",
        "ffi.EnumState",
        "ffi.Enum",
        "ffi.IntEnum",
        "ffi.StrEnum",
        "ffi.reflection.AccessStep",
        "ffi.reflection.AccessPath",
        "ffi.VisitErrorContext",
        "ffi.StructuralKey",
    ]:
        new = column_entry(rt, "__ffi_new__", key)
        copy = column_entry(rt, "__ffi_shallow_copy__", key)
        if new is None or copy is None:
            out[f"new {key}"] = "no hook"
            continue
        obj = rec(f"new {key}", rt.call_func(new))
        rec(f"new {key} with an argument", rt.call_func(new, 1))
        if isinstance(obj, AnyC):
            dup = rec(f"shallow copy of new {key}", rt.call_func(copy, obj))
            out[f"shallow copy of new {key} is another object"] = dup.v != obj.v
    init = column_entry(rt, "__ffi_init__", "ffi.EnumState")
    if init is None:
        out["init ffi.EnumState"] = "no hook"
    else:
        rec("init ffi.EnumState", rt.call_func(init))
        rec("init ffi.EnumState with an argument", rt.call_func(init, 1))
        info = rt.lib.TVMFFIGetTypeInfo(rt.call_func(init).type_index).contents
        out["methods of ffi.EnumState"] = [
            [m.name.text(), m.flags, m.metadata.text(), m.method.v == init]
            for m in (info.methods[i] for i in range(info.num_methods))
        ]
    # the BigInt hooks
    rt.lib.TVMFFIBigIntFromByteArray.argtypes = [ctypes.POINTER(ByteArray), ctypes.POINTER(AnyC)]

    def bigint(v: int) -> AnyC:
        data = v.to_bytes(24, "little", signed=True)
        buf = ctypes.create_string_buffer(data, len(data))
        out = AnyC()
        rt.lib.TVMFFIBigIntFromByteArray(
            ctypes.byref(ByteArray(ctypes.cast(buf, ctypes.c_void_p), len(data))), ctypes.byref(out)
        )
        return out

    values = {
        "2^70": 1 << 70,
        "-2^70": -(1 << 70),
        "2^127-1": (1 << 127) - 1,
        "-2^64": -(1 << 64),
        "2^64": 1 << 64,
        "-2^127": -(1 << 127),
    }
    bigs = {k: bigint(v) for k, v in values.items()}
    found = {
        c: column_entry(rt, c, "ffi.BigInt")
        for c in [
            "__ffi_eq__",
            "__ffi_compare__",
            "__ffi_hash__",
            "__data_to_json__",
            "__data_from_json__",
        ]
    }
    hooks = {c: h for c, h in found.items() if h is not None}
    if len(hooks) == len(found):
        for k, b in bigs.items():
            rec(f"BigInt to_json {k}", rt.call_func(hooks["__data_to_json__"], b))
            rec(f"BigInt hash {k}", rt.call_func(hooks["__ffi_hash__"], b, None))
            for k2, b2 in bigs.items():
                rec(f"BigInt eq {k} {k2}", rt.call_func(hooks["__ffi_eq__"], b, b2, None))
                rec(f"BigInt compare {k} {k2}", rt.call_func(hooks["__ffi_compare__"], b, b2, None))
        for text in [
            "123456789012345678901234567890",
            "-123456789012345678901234567890",
            "5",
            "-9223372036854775808",
            "9223372036854775808",
            "0",
            "-0",
            "12a",
            " 1",
            "",
            "-",
            "+7",
            "9" * 60,
        ]:
            r = rt.call_func(hooks["__data_from_json__"], text)
            rec(f"BigInt from_json {text!r}", r)
            if isinstance(r, AnyC) and r.type_index in (1, 78):
                rec(
                    f"BigInt from_json {text!r} back",
                    rt.call_func(hooks["__data_to_json__"], r) if r.type_index == 78 else r.v,
                )
    else:
        out["BigInt hooks"] = "missing"
    # BigInt map keys: hashed and compared through the native hooks
    keys = [bigint((1 << 70) + i) for i in range(7)]
    args: list[Any] = []
    for i, key_obj in enumerate(keys):
        args += [key_obj, i]
    bm = rec("Map with BigInt keys", rt.call("ffi.Map", *args))
    rec(
        "Map BigInt lookup by an equal object", rt.call("ffi.MapGetItem", bm, bigint((1 << 70) + 3))
    )
    rec("Map BigInt count of an absent key", rt.call("ffi.MapCount", bm, bigint(-(1 << 70))))
    bd = rt.call("ffi.Dict")
    for i, key_obj in enumerate(keys):
        rt.call("ffi.DictSetItem", bd, bigint((1 << 70) + i), i)
        rt.call("ffi.DictSetItem", bd, key_obj, i * 10)
    rec("Dict with BigInt keys set twice", bd)
    vi_copy = column_entry(rt, "__ffi_shallow_copy__", "ffi.VisitInterrupt")
    if vi_copy is not None:
        rec(
            "shallow copy of VisitInterrupt(5)",
            rt.call_func(vi_copy, rt.call("ffi.VisitInterrupt", "a heap string value")),
        )
    if testing:
        ctypes.CDLL(testing, os.RTLD_LAZY | os.RTLD_GLOBAL)
        rec("testing.add_one", rt.call("testing.add_one", 41))
        rec("testing.echo", rt.call("testing.echo", "hello"))
        rec("testing.nop", rt.call("testing.nop"))
        rec("testing.test_raise_error", rt.call("testing.test_raise_error", "ValueError", "boom"))
        rec("testing.make_array_with_mixed", rt.call("testing.make_array_with_mixed"))
        rec(
            "testing.schema_id_dict_str_int",
            rt.call("testing.schema_id_dict_str_int", rt.call("ffi.Dict", "a", 1)),
        )
        rec(
            "testing.schema_id_list_int",
            rt.call("testing.schema_id_list_int", rt.call("ffi.List", 1, 2)),
        )
        rec("testing.enum_variant_get", rt.call("testing.enum_variant_get", "Alpha"))
        # ffi.Module's reflected field imports_ (read and written through the
        # runtime's own getter/setter by canon() and ModuleImportModule)
        outer = rt.call("ffi.ModuleLoadFromFile", testing)
        inner = rt.call("ffi.ModuleLoadFromFile", testing)
        rec("Module imports_ empty", outer)
        rec("ModuleImportModule", rt.call("ffi.ModuleImportModule", outer, inner))
        rec("Module imports_ one", outer)
        rec("ModuleImportModule cycle", rt.call("ffi.ModuleImportModule", inner, outer))
        rec("ModuleClearImports", rt.call("ffi.ModuleClearImports", outer))
        rec("Module imports_ cleared", outer)
        minfo = rt.lib.TVMFFIGetTypeInfo(outer.type_index).contents
        (fld,) = [minfo.fields[i] for i in range(minfo.num_fields)]
        setter_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(AnyC))
        put = setter_t(fld.setter)
        for label, value in [
            ("Module imports_ set", rt.call("ffi.Array", inner)),
            ("Module imports_ set int", rt.to_any(5)),
        ]:
            rc = put(outer.v + fld.offset, ctypes.byref(value))
            rec(label, list(rt.take_error()) if rc else outer)
        rec(
            "GetGlobalFuncMetadata testing.add_one",
            rt.call("ffi.GetGlobalFuncMetadata", "testing.add_one"),
        )
        rec(
            "GetGlobalFuncMetadata testing.schema_id_dict_str_int",
            rt.call("ffi.GetGlobalFuncMetadata", "testing.schema_id_dict_str_int"),
        )
    return out


def main(argv: list[str]) -> None:
    testing = None
    if "--testing" in argv:
        i = argv.index("--testing")
        testing = argv[i + 1]
        argv = argv[:i] + argv[i + 2 :]
    rt = Runtime(argv[0])
    json.dump(steps(rt, testing), sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
