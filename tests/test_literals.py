"""Command-line literals of `tvmffi call`: typed flags, positional inference,
schema-typed conversion, tensor files and literals, dtypes and devices."""

import json

import numpy as np
import pytest

from tvmffi_cli.call import argv as A
from tvmffi_cli.call import literals as L
from tvmffi_cli.call.specs import Positional, StrArg, TensorArg, encode_spec
from tvmffi_cli.errors import FormatError, InputError

OPTS = {"--json": False, "--out": True, "-v": False}


def specs(*argv, cwd=None):
    return A.parse_argv(["lib.so", "f", *argv], OPTS, cwd=cwd).args


def strip(s):
    """The JSON form of a spec; of a positional, that of the type guessed."""
    return encode_spec(s.spec if isinstance(s, Positional) else s)


# -- dtypes and devices --------------------------------------------------------


@pytest.mark.parametrize(
    "text,triple,canon",
    [
        ("float32", (2, 32, 1), "float32"),
        ("bfloat16", (4, 16, 1), "bfloat16"),
        ("int8x4", (0, 8, 4), "int8x4"),
        ("uint1", (1, 1, 1), "uint1"),
        ("bool", (6, 8, 1), "bool"),
        ("handle", (3, 64, 1), "handle"),
        ("void", (3, 0, 0), "void"),
        ("float8_e4m3fn", (10, 8, 1), "float8_e4m3fn"),
        ("float4_e2m1fnx2", (17, 4, 2), "float4_e2m1fnx2"),
        ("complex64", (5, 64, 1), "complex64"),
        ("complex128x2", (5, 128, 2), "complex128x2"),
        ("float", (2, 32, 1), "float32"),
    ],
)
def test_dtype_parse_and_canonical_text(text, triple, canon):
    assert L.parse_dtype(text) == triple
    assert L.canonical_dtype(text) == canon
    assert L.parse_dtype(canon) == triple


@pytest.mark.parametrize(
    "text",
    ["x4", "int0", "int256", "float32x0", "float32x65536", "foo32", "", "float32x", "Float32"],
)
def test_bad_dtypes_are_input_errors(text):
    with pytest.raises(InputError, match="dtype"):
        L.parse_dtype(text)


def test_dtype_agrees_with_the_official_parser():
    import importlib.util
    import json
    import subprocess
    import sys

    # find_spec, not importorskip: importing tvm_ffi here would load the official
    # runtime into this process, next to ours.
    if importlib.util.find_spec("tvm_ffi") is None:
        pytest.skip("apache-tvm-ffi (reference) not installed")
    names = ["float32", "bfloat16", "int8x4", "bool", "float8_e5m2", "uint16x2", "float6_e3m2fn"]
    # The official package loads its own libtvm_ffi.so; it must not meet ours in one process.
    code = (
        "import json, sys, tvm_ffi\n"
        "out = []\n"
        "for s in json.loads(sys.argv[1]):\n"
        "    d = tvm_ffi.dtype(s)\n"
        "    out.append([d.type_code, d.bits, d.lanes, str(d)])\n"
        "print(json.dumps(out))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, json.dumps(names)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    for s, (code_, bits, lanes, canon) in zip(names, json.loads(r.stdout)):
        assert L.parse_dtype(s) == (code_, bits, lanes), s
        assert L.canonical_dtype(s) == canon


@pytest.mark.parametrize(
    "text,pair,canon",
    [
        ("cpu", (1, 0), "cpu:0"),
        ("cuda:1", (2, 1), "cuda:1"),
        ("CUDA:2", (2, 2), "cuda:2"),
        ("rocm", (10, 0), "rocm:0"),
        ("cuda_host:0", (3, 0), "cuda_host:0"),
        ("trn:3", (18, 3), "trn:3"),
        ("2:5", (2, 5), "cuda:5"),
        ("gpu", (2, 0), "cuda:0"),
    ],
)
def test_devices(text, pair, canon):
    assert L.parse_device(text) == pair
    assert L.device_str(*pair) == canon


@pytest.mark.parametrize("text", ["tpu", "cuda:-1", "cuda:x", "cuda:99999999999", ""])
def test_bad_devices(text):
    with pytest.raises(InputError, match="device"):
        L.parse_device(text)


# -- typed flags ----------------------------------------------------------------


def test_typed_flags_keep_command_line_order():
    got = specs(
        "--int",
        "0x10",
        "--float",
        "nan",
        "--bool",
        "yes",
        "--str",
        "--json",
        "--none",
        "--dtype",
        "int8x4",
        "--device",
        "cuda:1",
        "--bytes",
        "de ad:BE_ef",
        "--shape",
        "2,3",
        "--value",
        '[1, {"a": [2.5, null]}]',
        "--int=-7",
        "--json",
    )
    got = [encode_spec(s) for s in got]
    assert [s["kind"] for s in got] == [
        "int",
        "float",
        "bool",
        "str",
        "none",
        "dtype",
        "device",
        "bytes",
        "shape",
        "array",
        "int",
    ]
    assert got[0]["value"] == 16
    assert got[1]["text"] == "nan"
    assert got[2]["value"] is True
    assert got[3]["value"] == "--json"  # a flag's value is taken verbatim
    assert got[5]["value"] == "int8x4"
    assert (got[6]["device_type"], got[6]["device_id"]) == (2, 1)
    assert got[7]["hex"] == "deadbeef"
    assert got[8]["value"] == [2, 3]
    assert got[9] == {
        "kind": "array",
        "items": [
            {"kind": "int", "value": 1},
            {
                "kind": "map",
                "items": [
                    [
                        {"kind": "str", "value": "a"},
                        {
                            "kind": "array",
                            "items": [{"kind": "float", "text": "2.5"}, {"kind": "none"}],
                        },
                    ]
                ],
            },
        ],
    }
    assert got[10]["value"] == -7


def test_options_are_separated_from_arguments():
    p = A.parse_argv(["lib.so", "f", "--int", "1", "--json", "--out", "d", "-vv"], OPTS)
    assert p.lib == "lib.so" and p.func == "f"
    assert p.options == {"--json": True, "--out": "d", "-v": 2}
    assert len(p.args) == 1


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--int", "1.5"], "bad int"),
        (["--int", "9223372036854775808"], "int64 range"),
        (["--float", "abc"], "bad float"),
        (["--bool", "maybe"], "bad bool"),
        (["--bytes", "abc"], "even number of hex digits"),
        (["--bytes", "@/nonexistent/file"], "no such file"),
        (["--value", "[1,"], "not valid JSON"),
        (["--int"], "needs a value"),
        (["--none=1"], "takes no value"),
        (["--frobnicate"], "unknown option"),
        (["--jsn"], "did you mean --json"),
        (["1", "--int", "2"], "mixing positional"),
        (["--tensor", "float32[2,3]:nope"], "fill must be"),
        (["--tensor", "float33[2]"], "dtype"),
        (["--tensor", "nothere.npy"], "no such file"),
    ],
)
def test_flag_errors_are_one_line_input_errors(argv, msg):
    with pytest.raises(InputError, match=msg) as ei:
        specs(*argv)
    assert "\n" not in str(ei.value)


def test_missing_func_is_a_usage_error():
    with pytest.raises(InputError, match="FUNC is missing"):
        A.parse_argv(["lib.so"], OPTS)


def test_double_dash_ends_options():
    got = specs("--", "--json", "-v")
    assert [strip(s) for s in got] == [
        {"kind": "str", "value": "--json"},
        {"kind": "str", "value": "-v"},
    ]


def test_help_flag_is_recognised_anywhere():
    assert A.parse_argv(["lib.so", "--help"], OPTS).help
    assert A.parse_argv(["-h"], OPTS).help


# -- positional inference -------------------------------------------------------


@pytest.mark.parametrize(
    "text,expect",
    [
        ("42", {"kind": "int", "value": 42}),
        ("-3", {"kind": "int", "value": -3}),
        ("0x1F", {"kind": "int", "value": 31}),
        ("007", {"kind": "int", "value": 7}),
        ("2.5", {"kind": "float", "text": "2.5"}),
        ("1e3", {"kind": "float", "text": "1000.0"}),
        ("true", {"kind": "bool", "value": True}),
        ("False", {"kind": "bool", "value": False}),
        ("none", {"kind": "none"}),
        ("null", {"kind": "none"}),
        ('"5"', {"kind": "str", "value": "5"}),
        ("hello world", {"kind": "str", "value": "hello world"}),
        ("nan", {"kind": "str", "value": "nan"}),
        (
            "[1,2]",
            {"kind": "array", "items": [{"kind": "int", "value": 1}, {"kind": "int", "value": 2}]},
        ),
        (
            '{"k": true}',
            {
                "kind": "map",
                "items": [[{"kind": "str", "value": "k"}, {"kind": "bool", "value": True}]],
            },
        ),
        (
            "float32[2,3]:ones",
            {
                "kind": "tensor",
                "source": "literal",
                "dtype": "float32",
                "shape": [2, 3],
                "fill": "ones",
            },
        ),
        (
            "int8[4]",
            {"kind": "tensor", "source": "literal", "dtype": "int8", "shape": [4], "fill": "zeros"},
        ),
    ],
)
def test_positional_inference(text, expect):
    (s,) = specs(text)
    assert isinstance(s, Positional) and s.raw == text
    assert strip(s) == expect


def test_positional_bad_json_hints_at_str():
    # Left for the type schema (read in the child): a str parameter takes the
    # text as it is; without a schema the hint stands (call/task.py).
    (s,) = specs("[1, 2")
    assert s.spec is None and s.raw == "[1, 2" and "--str" in s.error
    assert encode_spec(s) == {
        "kind": "unread",
        "raw": "[1, 2",
        "positional": True,
        "error": s.error,
    }
    assert A.spec_for_type(s.raw, {"type": "ffi.String"}) == StrArg("[1, 2")
    from tvmffi_cli.call.task import materialize

    with pytest.raises(InputError, match="--str"):
        materialize(s)


def test_positional_npy_path_becomes_a_tensor(tmp_path):
    np.save(tmp_path / "x.npy", np.ones(3, dtype=np.float32))
    (s,) = specs("x.npy", cwd=str(tmp_path))
    assert strip(s) == {"kind": "tensor", "source": "npy", "path": str(tmp_path / "x.npy")}
    (s,) = specs("y.npy", cwd=str(tmp_path))  # not there: just a string
    assert strip(s) == {"kind": "str", "value": "y.npy"}


# -- tensors --------------------------------------------------------------------


def test_npy_is_mapped_copy_on_write(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    (s,) = specs("--tensor", str(tmp_path / "x.npy"))
    a = L.load_tensor(s)
    assert isinstance(a, np.memmap) and a.flags.writeable
    np.testing.assert_array_equal(a, x)
    a += 100  # writes private pages
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), x)


def test_fortran_npy_keeps_its_layout(tmp_path):
    x = np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    np.save(tmp_path / "f.npy", x)
    a = L.load_tensor(L.parse_tensor(str(tmp_path / "f.npy")))
    assert a.flags.f_contiguous
    np.testing.assert_array_equal(a, x)


def test_npz_keys(tmp_path):
    np.savez(tmp_path / "a.npz", w=np.arange(4, dtype=np.int32), b=np.ones(2))
    s = L.parse_tensor(f"{tmp_path}/a.npz:w")
    assert s == TensorArg("npz", path=str(tmp_path / "a.npz"), key="w")
    np.testing.assert_array_equal(L.load_tensor(s), np.arange(4, dtype=np.int32))
    with pytest.raises(InputError, match="pick one array"):
        L.parse_tensor(str(tmp_path / "a.npz"))
    with pytest.raises(InputError, match="no array 'zz'.*keys: w, b"):
        L.parse_tensor(f"{tmp_path}/a.npz:zz")
    np.savez_compressed(tmp_path / "one.npz", only=np.full(3, 7, dtype=np.uint8))
    s = L.parse_tensor(str(tmp_path / "one.npz"))
    np.testing.assert_array_equal(L.load_tensor(s), [7, 7, 7])


def test_truncated_npy_is_a_format_error(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros(1000, dtype=np.float64))
    data = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:500])
    with pytest.raises(FormatError, match="header says 8000 data bytes"):
        L.load_tensor(L.parse_tensor(str(tmp_path / "t.npy")))


def test_npz_member_claiming_more_data_than_it_holds(tmp_path):
    """The header's shape cannot make us allocate beyond the member's size."""
    import zipfile

    np.save(tmp_path / "m.npy", np.zeros(4, dtype=np.float64))
    raw = (tmp_path / "m.npy").read_bytes()
    hdr = raw.replace(b"(4,), }" + b" " * 8, b"(9999999999,),}")
    assert len(hdr) == len(raw)  # same header length: only the shape lies
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as z:
        z.writestr("m.npy", hdr)
    s = L.parse_tensor(f"{tmp_path}/bad.npz:m")
    with pytest.raises(FormatError, match="header says 79999999992 data bytes"):
        L.load_tensor(s)


def test_object_npy_is_refused(tmp_path):
    np.save(tmp_path / "o.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    with pytest.raises(FormatError, match="object arrays"):
        L.load_tensor(L.parse_tensor(str(tmp_path / "o.npy")))


def test_not_an_array_file(tmp_path):
    (tmp_path / "x.npy").write_bytes(b"hello")
    with pytest.raises(FormatError, match="not a .npy or .npz"):
        L.parse_tensor(str(tmp_path / "x.npy"))


@pytest.mark.parametrize(
    "fill,expect",
    [
        ("zeros", [[0, 0, 0], [0, 0, 0]]),
        ("ones", [[1, 1, 1], [1, 1, 1]]),
        ("arange", [[0, 1, 2], [3, 4, 5]]),
    ],
)
def test_tensor_literal_fills(fill, expect):
    a = L.load_tensor(L.parse_tensor(f"float32[2,3]:{fill}"))
    assert a.dtype == np.float32 and a.shape == (2, 3)
    np.testing.assert_array_equal(a, expect)


def test_tensor_literal_rand_is_reproducible():
    a = L.load_tensor(L.parse_tensor("float64[5]:rand"))
    b = L.load_tensor(L.parse_tensor("float64[5]:rand"))
    np.testing.assert_array_equal(a, b)
    assert ((a >= 0) & (a < 1)).all() and len(set(a.tolist())) == 5
    c = L.load_tensor(L.parse_tensor("int8[100]:rand"))
    assert c.dtype == np.int8 and c.min() >= -100 and c.max() <= 100


def test_scalar_and_empty_tensor_literals():
    assert L.load_tensor(L.parse_tensor("int64[]:ones")).shape == ()
    assert L.load_tensor(L.parse_tensor("int64[0,3]")).shape == (0, 3)


def test_tensor_literal_without_numpy_dtype():
    # bfloat16 and float8 come from ml_dtypes (tests/test_mldtypes.py); sub-byte
    # and vector types have no NumPy equivalent.
    with pytest.raises(InputError, match="float4_e2m1fn has no NumPy equivalent"):
        L.parse_tensor("float4_e2m1fn[4]:zeros")
    with pytest.raises(InputError, match="bfloat16x2 has no NumPy equivalent"):
        L.parse_tensor("bfloat16x2[4]:zeros")


def test_huge_tensor_literal_is_refused_before_allocating():
    with pytest.raises(InputError, match="larger than 1 TiB"):
        L.parse_tensor("float64[1000000,1000000]:zeros")


# -- schema-typed conversion ----------------------------------------------------


def T(name, *args):
    d = {"type": name}
    if args:
        d["args"] = list(args)
    return d


@pytest.mark.parametrize(
    "text,typ,expect",
    [
        ("5", T("int"), {"kind": "int", "value": 5}),
        ("5", T("float"), {"kind": "float", "text": "5.0"}),
        ("5", T("ffi.String"), {"kind": "str", "value": "5"}),
        ("true", T("ffi.String"), {"kind": "str", "value": "true"}),
        ("yes", T("bool"), {"kind": "bool", "value": True}),
        ("00ff", T("ffi.Bytes"), {"kind": "bytes", "hex": "00ff"}),
        ("int8x4", T("DataType"), {"kind": "dtype", "value": "int8x4"}),
        (
            "cuda:1",
            T("Device"),
            {"kind": "device", "value": "cuda:1", "device_type": 2, "device_id": 1},
        ),
        ("2,3", T("ffi.Shape"), {"kind": "shape", "value": [2, 3]}),
        ("[2,3]", T("ffi.Shape"), {"kind": "shape", "value": [2, 3]}),
        ("none", T("Optional", T("int")), {"kind": "none"}),
        ("4", T("Optional", T("int")), {"kind": "int", "value": 4}),
        (
            "[1,2]",
            T("ffi.Array", T("float")),
            {
                "kind": "array",
                "items": [{"kind": "float", "text": "1.0"}, {"kind": "float", "text": "2.0"}],
            },
        ),
        (
            '{"1": "a"}',
            T("ffi.Map", T("int"), T("ffi.String")),
            {
                "kind": "map",
                "items": [[{"kind": "int", "value": 1}, {"kind": "str", "value": "a"}]],
            },
        ),
        (
            '["int8", "float32"]',
            T("ffi.Array", T("DataType")),
            {
                "kind": "array",
                "items": [
                    {"kind": "dtype", "value": "int8"},
                    {"kind": "dtype", "value": "float32"},
                ],
            },
        ),
        ("3", T("Variant", T("int"), T("ffi.String")), {"kind": "int", "value": 3}),
        ("abc", T("Variant", T("int"), T("ffi.String")), {"kind": "str", "value": "abc"}),
        ("7", T("Any"), {"kind": "int", "value": 7}),
    ],
)
def test_schema_typed_conversion(text, typ, expect):
    assert encode_spec(A.spec_for_type(text, typ)) == expect


def test_schema_tensor_types_choose_how_tensors_pass():
    assert A.spec_for_type("float32[2]", T("ffi.Tensor")).owned is True
    assert A.spec_for_type("float32[2]", T("DLTensor*")).owned is False


@pytest.mark.parametrize(
    "text,typ,msg",
    [
        ("x", T("int"), "expected int"),
        ("1.5", T("int"), "expected int"),
        ("[1,true]", T("ffi.Array", T("int")), "true is not an int"),
        ("[1]", T("ffi.Map", T("ffi.String"), T("int")), "not a JSON object"),
        ("f", T("ffi.Function"), "cannot pass a value of type ffi.Function"),
        ("x", T("Variant", T("int"), T("bool")), "fits none"),
    ],
)
def test_schema_typed_errors(text, typ, msg):
    with pytest.raises(InputError, match=msg):
        A.spec_for_type(text, typ)


def test_schema_typespec_objects_from_schema_module():
    schema = pytest.importorskip("tvmffi_cli.abi.typeschema", reason="schema module not present")
    spec = schema.parse_type(json.dumps(T("ffi.Array", T("ffi.Array", T("int")))))
    assert encode_spec(A.spec_for_type("[[1],[2,3]]", spec)) == {
        "kind": "array",
        "items": [
            {"kind": "array", "items": [{"kind": "int", "value": 1}]},
            {"kind": "array", "items": [{"kind": "int", "value": 2}, {"kind": "int", "value": 3}]},
        ],
    }
    assert A.type_label(spec) == "Array[Array[int]]"
