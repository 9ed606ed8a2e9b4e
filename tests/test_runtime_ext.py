"""Runtime part B: tensors, data types, big integers, containers and library
loading, exercised by C programs (tests/c_ext/) linked to our runtime, with
exact expected output. Layout-sensitive probes also run on the official
runtime, and must print the same lines there."""

import os
import subprocess
from pathlib import Path

import pytest

import fixturebuild

HERE = Path(__file__).resolve().parent
C_EXT = HERE / "c_ext"


def _run(exe, args, libdir, check=True):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = str(libdir) + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""
    )
    proc = subprocess.run(
        [str(exe)] + [str(a) for a in args], capture_output=True, text=True, env=env, timeout=120
    )
    if check:
        assert proc.returncode == 0, (
            f"{exe.name} {args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
        assert "FAIL" not in proc.stdout, proc.stdout
    return proc.stdout.splitlines()


def _program(name, headers="ours"):
    return fixturebuild.build(
        C_EXT / f"{name}.c", headers=headers, shared=False, name=f"cext-{name}"
    )


@pytest.fixture(scope="module")
def ours():
    return fixturebuild.our_runtime().parent


@pytest.fixture(scope="module")
def rt_ext():
    return _program("rt_ext")


# ---------------------------------------------------------------- tensors


def test_tensor_dlpack_views_and_alloc(rt_ext, ours):
    assert _run(rt_ext, ["tensor"], ours) == [
        "legacy: type=70 ndim=2 shape=[2,3] strides=[3,1] same_shape_ptr=1",
        "to_dlpack: strong=2 same_data=1",
        "legacy deleter calls after release: 1",
        "misaligned(64): ERR RuntimeError: FromDLPack: Data is not aligned to 64 bytes.",
        "byte_offset 8 (16): ERR RuntimeError: FromDLPack: Data is not aligned to 16 bytes.",
        "column-major contiguous: ERR RuntimeError: FromDLPack: Tensor is not contiguous.",
        "strided import keeps strides=[1,2]",
        "legacy deleter calls (3 successful imports): 3",
        "null: ERR ValueError: TVMFFITensorFromDLPack: NULL argument",
        "subbyte padded: ERR RuntimeError: Subbyte type padded is not yet supported",
        "versioned export: version=1.3 flags=0 strides=[3,1]",
        "versioned deleter calls: 1",
        "export shape: ERR TypeError: TVMFFITensorToDLPack: expected a Tensor but got `ffi.Shape`",
        "view: [1 3 5] source_alive=1",
        "view released: source deleter calls=1",
        "view without strides gets strides=[1]",
        "alloc: shape=[4,5] strides=[5,1] aligned64=1 last=38 shape_copied=1",
        "alloc cuda: ERR RuntimeError: the default tensor allocator only allocates on CPU; install "
        "one with TVMFFIEnvSetDLPackManagedTensorAllocator for other devices",
        "scalar alloc: ndim=0 data_nonnull=1",
        "alloc negative dim: ERR ValueError: CPU tensor allocator: negative dimension",
        "live objects back to start: 1",
    ]


# ---------------------------------------------------------------- big integers


def test_bigint_encoding(rt_ext, ours):
    assert _run(rt_ext, ["bigint"], ours) == [
        "five: type=1 words=1 [5]",
        "empty: type=1 words=1 [0]",
        "minus-one-padded: type=1 words=1 [-1]",
        "2^64-padded: type=78 words=2 [0 1]",
        "2^63: type=78 words=2 [-9223372036854775808 0]",
        "-2^65: type=78 words=2 [0 -2]",
        "int64-min: type=1 words=1 [-9223372036854775808]",
        "7 bytes: ERR ValueError: BigInt content must contain whole 64-bit words",
        "content of a float: size=0",
        "live objects back to start: 1",
    ]


# ---------------------------------------------------------------- data types

DTYPE_STRINGS = [
    "int8",
    "i32",
    "u8",
    "uint64",
    "f16",
    "float32x4",
    "bf16",
    "bfloat16",
    "bool",
    "boolx4",
    "bool1",
    "handle",
    "handle32",
    "float8_e4m3fn",
    "fp8_e5m2x2",
    "f8_e4m3b11fnuz",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e5m2",
    "float8_e8m0fnu",
    "float8_e5m2fnuz",
    "float8_e4m3fnuz",
    "float4_e2m1fn_x2",
    "f4_e2m1fnx2",
    "fp4_e2m1fn",
    "float6_e2m3fn",
    "f6_e3m2fn",
    "fp6_e3m2fnx8",
    "int32xvscalex4",
    "float32xvscalex2",
    "int32xvscale",
    "void",
    "",
    "int",
    "float",
    "uint",
    "int0",
    "int64x65535",
    # errors
    "int256",
    "int8x0",
    "int8x70000",
    "complex64",
    "foo",
    "int8x",
    "custom[foo]32",
    "float16x4xvscale",
    "float8",
    "float8_",
    "fp8_e4m3fnx",
    "fp4_e2m1fn_",
    "int99999999999",
    "int8x99999999999",
    "i",
    "u",
    "f",
    "bf",
    "b",
    "int8 ",
    "Int8",
    # printing raw codes: code,bits,lanes
    "@0,32,1",
    "@5,64,1",
    "@6,1,1",
    "@6,8,4",
    "@3,0,0",
    "@3,64,4",
    "@2,32,-4",
    "@2,32,-1",
    "@7,8,1",
    "@17,4,2",
    "@18,8,1",
    "@100,8,1",
    "@4,16,0",
    "@1,1,1",
]

# What each of our answers must be (spot checks independent of the official runtime).
DTYPE_EXPECT = {
    "'i32' -> 0 32 1 'int32'",
    "'float32x4' -> 2 32 4 'float32x4'",
    "'bf16' -> 4 16 1 'bfloat16'",
    "'bool' -> 6 8 1 'bool'",
    "'bool1' -> 6 1 1 'bool1'",
    "'handle' -> 3 64 1 'handle'",
    "'fp8_e5m2x2' -> 12 8 2 'float8_e5m2x2'",
    "'float4_e2m1fn_x2' -> 17 4 2 'float4_e2m1fnx2'",
    "'int32xvscalex4' -> 0 32 -4 'int32xvscalex4'",
    "'void' -> 3 0 0 ''",
    "'int8x0' -> ERR ValueError: Invalid lanes specification in dtype 'int8x0'. Lanes must be a "
    "positive integer.",
    "'int256' -> ERR ValueError: Bits value 256 is out of range for uint8_t in dtype 'int256'",
    "'complex64' -> ERR ValueError: unknown dtype `complex64`",
    "'custom[foo]32' -> ERR ValueError: Function dtype.get_custom_type_code not found",
    "@5,64,1 -> ERR ValueError: DLDataType contains unknown type_code=5",
    "@3,64,4 -> 'handle'",
    "@2,32,-1 -> 'float32'",
}


def test_dtype_strings_exact(ours):
    out = _run(_program("dtype_probe"), DTYPE_STRINGS, ours)
    assert len(out) == len(DTYPE_STRINGS)
    missing = DTYPE_EXPECT - set(out)
    assert not missing, "\n".join(out)
    # every accepted spelling prints a string that parses back to the same dtype
    canon = [
        line.split(" -> ")[1].rsplit(" ", 1)[1].strip("'")
        for line in out
        if line.startswith("'") and " ERR " not in line
    ]
    again = _run(_program("dtype_probe"), [c for c in canon if c], ours)
    for line in again:
        parsed, printed = line.split(" -> ")
        assert printed.endswith(parsed), line


def test_dtype_strings_match_official(ours, official_runtime):
    mine = _run(_program("dtype_probe"), DTYPE_STRINGS, ours)
    ref = _run(_program("dtype_probe", headers="official"), DTYPE_STRINGS, official_runtime.parent)
    assert mine == ref


# ---------------------------------------------------------------- containers


def test_container_layouts_exact(ours):
    out = _run(_program("container_probe"), [], ours)
    text = "\n".join(out)
    assert out[:10] == [
        "array: type=71 size=3 capacity=3 inline=1 deleter_null=1",
        "  items: 1/1 65/'a string longer than 7' 11/'short'",
        "  ArrayGetItem(1)='a string longer than 7'",
        "  ArrayGetItem(3): ERR IndexError: Index 3 out of bounds 3",
        "  ArrayGetItem(-1): ERR IndexError: Index -1 out of bounds 3",
        "  ArraySize=3",
        "  ArraySize(7): ERR TypeError: Mismatched type on argument #0 when calling: "
        "`ffi.ArraySize(0: ffi.Array) -> int`. Expected `ffi.Array` but got `int`",
        "empty array: size=0 capacity=0",
        "shape: type=69 size=4 inline=1 dims=[2, 3, -4, 1]",
        "shape(2.5): ERR ValueError: Expect shape to take list of int arguments",
    ]
    # small up to 4 entries (2 then 4 inline slots), dense from 5 on
    assert "map2: size=2 small=1 slots=2 inline=1 order=['k0':0, 'k1':10]" in out
    assert (
        "map3: size=3 small=1 slots=4 inline=1 order=['k0':0, 'k1':10, 'a-longer-key-2':20]" in out
    )
    assert "map5: size=5 small=0 slots=8 fib_shift=61 head=5 tail=4" in out
    assert "map8: size=8 small=0 slots=16 fib_shift=60 head=11 tail=3" in out
    assert "map40: size=40 small=0 slots=64 fib_shift=58" in text
    # every map iterates in insertion order and finds each of its keys
    for n in (5, 17, 40):
        i = out.index(next(line for line in out if line.startswith(f"map{n}:")))
        it = next(line for line in out[i:] if line.startswith("  iter:"))
        keys = [kv.rsplit(":", 1)[0] for kv in it.split()[1:]]
        assert keys == [f"'a-longer-key-{k}'" if k % 3 == 2 else f"'k{k}'" for k in range(n)]
    assert "ERR KeyError" not in text.split("map40:")[1].split("MapGetItem(k1)")[0]
    # an updated key keeps its place in a small map; a full small map turns
    # dense and the key moves to the end
    assert "update-small: size=2 small=1 slots=2 inline=1 order=['a':3, 'b':2]" in out
    i = out.index("update-full: size=4 small=0 slots=8 fib_shift=61 head=4 tail=0")
    assert (
        next(line for line in out[i:] if line.startswith("  iter:"))
        == "  iter: 'b':2 'c':3 'd':4 'a':5"
    )
    assert out[-1].startswith("odd map: ERR InternalError: ")


def test_container_layouts_match_official(ours, official_runtime):
    mine = _run(_program("container_probe"), [], ours)
    ref = _run(_program("container_probe", headers="official"), [], official_runtime.parent)
    assert len(mine) == len(ref) > 1000
    # identical bytes: cells, slot counts, where each key sits in a dense
    # table, chain metadata and iteration links; only one message differs
    assert mine[:-1] == ref[:-1]
    assert mine[-1].split(":")[:2] == ref[-1].split(":")[:2]  # same error kind


# ---------------------------------------------------------------- libraries


@pytest.fixture(scope="module")
def ctor_lib():
    return fixturebuild.build("runtime/ctor.c", headers="ours")


def _libbin(*defines):
    # no DT_NEEDED on the runtime, like TVM compiler output
    return fixturebuild.build(
        "runtime/libbin.c",
        headers="ours",
        link_runtime=False,
        defines=defines,
        name="libbin-" + "-".join(d.lower() for d in defines),
    )


CTX = (
    '"context_symbols": ["__TVMFFIEnvModLookupFromImports", "__TVMFFIErrorSetRaisedFromCStr", '
    '"__TVMFFIFunctionCall", "__TVMFFIStringFromByteArray", "__fixture_custom_ctx"]'
)

COMMON = [
    "add(40, 2) = 42",
    "add(40, 2.0): ERR TypeError: add expects two ints",
    "missing function -> NULL",
    "ctx_bits = 63",
    "sub_fn without imports -> NULL",
]

MODULE_GLOBALS = [
    "ModuleGetKind = 'library'",
    "ModuleGetFunction(add) type=68",
    "ModuleGetFunction(nope) type=0",
    "ModuleGetFunctionDoc(add) = 'Adds two integers (fixture doc).'",
    "ModuleGetFunctionMetadata(add) type=0",
    "ffi.ModuleGetKind: ERR TypeError: Mismatched type on argument #0 when calling: "
    "`ffi.ModuleGetKind(0: ffi.Module) -> str`. Expected `ffi.Module` but got `int`",
    "ffi.ModuleImportModule: ERR RuntimeError: Cyclic dependency detected during import",
    "ModuleLoadFromFile(.so) type=73",
    "fixture.ctor.triple(14) = 42",
    "fixture.CtorType registered=1",
    "ffi.ModuleLoadFromFile: ERR RuntimeError: Loader for `.weird` files is not registered, "
    "resolved to (ffi.Module.load_from_file.weird) in the global registry.",
]


def test_library_bin_with_unknown_kinds_still_usable(rt_ext, ours, ctor_lib):
    lib = _libbin()
    out = _run(rt_ext, ["load", lib, ctor_lib], ours)
    assert out[0] == "module type=73"
    assert out[1] == (
        'describe: {"kind": "library", "path": "%s", "imports": [{"kind": "testkind", "loaded": '
        'false, "nbytes": 5, "imports": []}, {"kind": "mystery", "loaded": false, "nbytes": 3, '
        '"imports": []}], "missing_loaders": ["testkind", "mystery"], %s, "library_bin": true, '
        '"errors": []}' % (lib, CTX)
    )
    assert out[2:7] == COMMON
    assert out[7:10] == [
        "sub_fn with imports -> NULL",
        "sub_fn: ERR RuntimeError: Cannot find function sub_fn in the imported modules or global "
        "registry.",
        "fixture.ctor.triple: ERR RuntimeError: Cannot find function fixture.ctor.triple in the "
        "imported modules or global registry.",
    ]
    assert out[11:22] == MODULE_GLOBALS


def test_library_bin_loader_builds_import_tree(rt_ext, ours, ctor_lib):
    lib = _libbin()
    out = _run(rt_ext, ["load", lib, ctor_lib, "loader"], ours)
    assert out[1] == (
        'describe: {"kind": "library", "path": "%s", "imports": [{"kind": "library", "path": "%s", '
        '"imports": [], "missing_loaders": [], "context_symbols": [], "library_bin": false, '
        '"errors": []}, {"kind": "mystery", "loaded": false, "nbytes": 3, "imports": []}], '
        '"missing_loaders": ["mystery"], %s, "library_bin": true, "errors": []}'
        % (lib, ctor_lib, CTX)
    )
    assert out[2:7] == COMMON
    assert out[7:12] == [
        "sub_fn with imports -> found",
        "sub_fn(7) = 700",
        # the library's own code resolves names through __tvm_ffi__library_ctx
        "call_import(sub_fn, 5) = 500",
        "call_import(fixture.ctor.triple, 5) = 15",
        "no.such.function: ERR RuntimeError: Cannot find function no.such.function in the "
        "imported modules or global registry.",
    ]
    assert out[12:23] == MODULE_GLOBALS


@pytest.mark.parametrize(
    "variant,errors",
    [
        ("LIE_NBYTES", ["nbytes 1099511627776 exceeds the symbol size; read within the symbol"]),
        (
            "TRUNCATED",
            [
                "nbytes 131 exceeds the symbol size; read within the symbol",
                "truncated in the payload of module kind mystery",
                "import edge to a module that is not available",
            ],
        ),
    ],
)
def test_library_bin_bounded_by_symbol_size(rt_ext, ours, ctor_lib, variant, errors):
    lib = _libbin(variant)
    out = _run(rt_ext, ["load", lib, ctor_lib, "loader"], ours)
    describe = out[1]
    listed = ", ".join(f'"__tvm_ffi__library_bin: {e}"' for e in errors)
    assert describe.endswith(f'"errors": [{listed}]}}'), describe
    # the library's own functions and the decodable imports work whatever
    # the blob claims
    assert out[2:7] == COMMON
    assert out[7:9] == ["sub_fn with imports -> found", "sub_fn(7) = 700"]
    if variant == "TRUNCATED":
        assert '"missing_loaders": []' in describe
        assert '"kind": "mystery"' not in describe
    else:
        assert '"missing_loaders": ["mystery"]' in describe


def test_official_header_cxx_reads_and_writes_our_containers(rt_ext, ours, official_include):
    cxx = fixturebuild.build(
        "runtime/official_containers.cc", headers="official", flags=("-Wno-unused-parameter",)
    )
    out = _run(rt_ext, ["cxx", cxx], ours)
    assert out == [
        "sum_array -> 4321",
        "extend -> <type 71>",
        "extended array: size=6 1 20 300 4000 'tail' 'from c++'",
        "ArrayGetItem(ext, 5) = 'from c++'",
        "sum_array: ERR TypeError: Mismatched type on argument #0 when calling: `sum_array(0: "
        "Array<int>) -> int`. Expected `Array<int>` but got `Array[index 0: ffi.SmallStr]`",
        "map_join -> 'k0,key-number-1,k2|3'",
        "map_get -> 1",
        "map_get -> 2",
        "map_get -> -1",
        "map_set -> <type 72>",
        "  map_set result: size=4 'k0':0 'key-number-1':1 'k2':2 'new-key-from-c':99",
        "map_join -> 'k0,key-number-1,k2,key-number-3,k4,key-number-5,k6,key-number-7,k8,"
        "key-number-9,k10|55'",
        "map_get -> 1",
        "map_get -> 2",
        "map_get -> -1",
        "map_set -> <type 72>",
        "  map_set result: size=12 'k0':0 'key-number-1':1 'k2':2 'key-number-3':3 'k4':4 "
        "'key-number-5':5 'k6':6 'key-number-7':7 'k8':8 'key-number-9':9 'k10':10 "
        "'new-key-from-c':99",
        "make_map(2): size=2 'c0':0 'c1':1",
        "  MapGetItem(c1) = 1",
        "make_map(4): size=4 'c0':0 'c1':1 'c2':4 'c3':9",
        "  MapGetItem(c1) = 1",
        "make_map(9): size=9 'c0':0 'c1':1 'c2':4 'c3':9 'c4':16 'c5':25 'c6':36 'c7':49 'c8':64",
        "  MapGetItem(c1) = 1",
        "shape_prod -> 42003",
        "make_shape(3): type=69 size=3 dims=[2,3,4]",
        "tensor_sum -> 78",
        "tensor_info -> 'ndim=2 shape=3,4, strides=4,1, contiguous'",
        "tensor_sum -> 78",
        "tensor_info -> 'ndim=2 shape=4,3, strides=1,4, strided'",
        "make_tensor(2,5): type=70 shape=[2,5] strides=[5,1] q[9]=9",
        "tensor_sum -> 45",
        "exported tensor still readable: 9",
        "live objects delta: 0",
    ]
