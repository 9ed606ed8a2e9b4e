"""Value conversion both ways, through the C fixture (our header) and the
runtime's own global functions. Exact values, every static type."""

import gc
import math

import pytest

import tvmffi_cli
from test_library import pick_runtime
from tvmffi_cli.abi import structs as abi
from tvmffi_cli.ffi import errors as ffi_errors
from tvmffi_cli.ffi import runtime, tensors, values
from tvmffi_cli.ffi.objects import DataType, Device, OpaquePtr, Shape

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


@pytest.fixture(scope="module")
def rt():
    return runtime.get_runtime(pick_runtime())


@pytest.fixture(scope="module")
def lib(rt, build_lib):
    return tvmffi_cli.load(build_lib("c/basic.c", headers="ours"))


@pytest.mark.parametrize("value", [0, 1, -1, I64_MIN, I64_MAX, 123456789012345])
def test_int(lib, value):
    assert lib.echo_int(value) == value
    r = lib.echo(value)
    assert r == value and type(r) is int


@pytest.mark.parametrize("value", [True, False])
def test_bool(lib, value):
    assert lib.negate_bool(value) is (not value)
    assert lib.echo(value) is value
    assert lib.type_index_of(value) == abi.kTVMFFIBool


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, -2.25e300, 5e-324, math.inf, -math.inf])
def test_float(lib, value):
    r = lib.echo_float(value)
    assert r == value and math.copysign(1, r) == math.copysign(1, value)


def test_float_nan(lib):
    assert math.isnan(lib.echo(math.nan))


def test_none(lib):
    assert lib.echo(None) is None
    assert lib.type_index_of(None) == abi.kTVMFFINone


@pytest.mark.parametrize(
    "value", ["", "a", "seven77", "eight888", "x" * 1000, "h\u00e9llo \u4e16\u754c \U0001f600"]
)
def test_str(lib, value):
    assert lib.echo_str(value) == value
    assert lib.echo(value) == value
    assert lib.str_len(value) == len(value.encode())
    assert lib.type_index_of(value) == abi.kTVMFFIRawStr


def test_str_with_nul_goes_as_string_object(lib):
    assert lib.type_index_of("a\0b") == abi.kTVMFFISmallStr  # the runtime picks the form
    assert lib.type_index_of("a\0" + "b" * 20) == abi.kTVMFFIStr
    assert lib.echo_str("a\0b") == "a\0b"
    assert lib.str_len("a\0b\0") == 4


@pytest.mark.parametrize("n", [0, 1, 7, 8, 63, 4096])
def test_heap_and_small_strings_from_library(lib, n):
    expect = "".join(chr(ord("a") + i % 26) for i in range(n))
    assert lib.heap_string(n) == expect


@pytest.mark.parametrize("value", [b"", b"\x00", b"abc", b"\x00\xff" * 4, bytes(range(256))])
def test_bytes(lib, value):
    assert lib.echo_bytes(value) == value
    assert lib.echo(value) == value
    assert lib.echo_bytes(bytearray(value)) == value
    assert lib.type_index_of(value) == abi.kTVMFFIByteArrayPtr


@pytest.mark.parametrize(
    "name,triple",
    [
        ("float32", (2, 32, 1)),
        ("int8", (0, 8, 1)),
        ("uint16", (1, 16, 1)),
        ("bfloat16", (4, 16, 1)),
        ("bool", (6, 8, 1)),
        ("int8x4", (0, 8, 4)),
        ("float16x2", (2, 16, 2)),
    ],
)
def test_dtype(lib, name, triple):
    d = DataType(name)
    assert (d.code, d.bits, d.lanes) == triple
    r = lib.echo_dtype(d)
    assert isinstance(r, DataType) and r == name and (r.code, r.bits, r.lanes) == triple
    assert lib.type_index_of(d) == abi.kTVMFFIDataType


def test_dtype_lanes_from_library(lib):
    assert lib.dtype_x4(DataType("float32")) == "float32x4"


def test_dtype_from_numpy(lib):
    np = pytest.importorskip("numpy")
    assert lib.echo_dtype(np.dtype("int16")) == "int16"


@pytest.mark.parametrize(
    "text,pair", [("cpu", (1, 0)), ("cuda:1", (2, 1)), ("rocm:3", (10, 3)), ("metal:0", (8, 0))]
)
def test_device(lib, text, pair):
    d = Device(text)
    assert (d.device_type, d.device_id) == pair
    r = lib.echo_device(d)
    assert isinstance(r, Device) and r == d and (r.device_type, r.device_id) == pair
    assert str(r) == (text if ":" in text else text + ":0")


def test_device_constructor_forms():
    assert Device("cuda", 2) == Device(2, 2) == Device("cuda:2") == "cuda:2"
    with pytest.raises(ValueError):
        Device("warp:1")


def test_opaque_ptr(lib):
    r = lib.opaque_ptr(0x1234)
    assert isinstance(r, OpaquePtr) and r == 0x1234
    assert lib.type_index_of(r) == abi.kTVMFFIOpaquePtr
    assert lib.echo(r) == 0x1234


def test_shape(lib):
    s = Shape(2, 3, 4)
    assert lib.type_index_of(s) == abi.kTVMFFIShape
    r = lib.echo(s)
    assert isinstance(r, Shape) and r == (2, 3, 4)
    assert lib.echo(Shape()) == ()
    assert Shape([5, 6]) == (5, 6)


def test_array(lib):
    v = [1, 2.5, "s", b"b", None, True, [1, [2, []]], {"k": [3]}, Shape(1), DataType("int32")]
    assert lib.type_index_of(v) == abi.kTVMFFIArray
    r = lib.echo(v)
    assert r == v
    assert lib.echo((1, 2)) == [1, 2]  # tuples go as Arrays too
    assert lib.echo([]) == []


def test_map(lib):
    v = {"a": 1, "b": [1, 2], "c": {"d": None}, "e": "long string value"}
    assert lib.type_index_of(v) == abi.kTVMFFIMap
    assert lib.echo(v) == v
    assert lib.echo({}) == {}
    assert lib.echo({1: "one", 2: "two"}) == {1: "one", 2: "two"}


def test_function_roundtrip(lib, rt):
    seen = []

    def cb(x):
        seen.append(x)
        return x * 2

    assert lib.call_back(cb, 21) == 42
    assert lib.call_back(lambda s: s + "!", "hey") == "hey!"
    assert lib.call_back(lambda v: v, [1, "x"]) == [1, "x"]
    assert seen == [21]
    assert lib.type_index_of(cb) == abi.kTVMFFIFunction
    f = values.function_from_callable(rt, lambda a, b: a - b)
    assert isinstance(f, values.Function) and f(5, 3) == 2
    assert lib.echo(f)(10, 4) == 6  # the same function comes back callable


def test_callback_error_propagates(lib):
    def bad(x):
        raise KeyError("missing thing")

    with pytest.raises(KeyError) as ei:
        lib.call_back(bad, 1)
    assert ei.value.kind == "KeyError" and "missing thing" in str(ei.value)


def test_error_value_roundtrip(lib):
    e = ffi_errors.FFIValueError("ValueError", "as a value", "")
    r = lib.echo(e)
    assert isinstance(r, ValueError) and r.kind == "ValueError" and str(r) == "as a value"


@pytest.mark.parametrize(
    "kind,cls",
    [
        ("ValueError", ValueError),
        ("TypeError", TypeError),
        ("RuntimeError", RuntimeError),
        ("IndexError", IndexError),
        ("KeyError", KeyError),
        ("AttributeError", AttributeError),
        ("NotImplementedError", NotImplementedError),
        ("InternalError", ffi_errors.FFIError),
        ("MyLibError", ffi_errors.FFIError),
    ],
)
def test_error_kinds(lib, kind, cls):
    with pytest.raises(cls) as ei:
        lib.raise_kind(kind, f"message for {kind}")
    e = ei.value
    assert isinstance(e, ffi_errors.FFIErrorBase)
    assert e.kind == kind and str(e) == f"message for {kind}"
    if cls is ffi_errors.FFIError:
        assert isinstance(e, RuntimeError)


def test_error_message_exact(lib):
    with pytest.raises(ValueError) as ei:
        lib.raise_value_error("oops")
    assert str(ei.value) == "basic: oops" and ei.value.kind == "ValueError"
    with pytest.raises(TypeError, match="^add_int expects 2 arguments, got 1$"):
        lib.add_int(1)


def test_errors_pickle_with_their_kind():
    import pickle

    e = pickle.loads(pickle.dumps(ffi_errors.FFIValueError("ValueError", "m", "bt")))
    assert isinstance(e, ValueError) and (e.kind, e.message, e.backtrace) == (
        "ValueError",
        "m",
        "bt",
    )


def test_bigint(lib, rt):
    for v in [1 << 64, -(1 << 70) + 3, I64_MAX + 1, I64_MIN - 1, (1 << 200) - 1]:
        assert lib.echo(v) == v
    assert lib.type_index_of(1 << 64) == abi.kTVMFFIBigInt


def test_numpy_as_dltensor_and_object(lib):
    np = pytest.importorskip("numpy")
    a = np.zeros((2, 3), "float64")
    assert lib.type_index_of(a) == abi.kTVMFFIDLTensorPtr
    assert lib.tensor_info(a) == 2064
    assert lib.type_index_of.call([a], tensor_mode="object") == abi.kTVMFFITensor
    assert lib.tensor_info.call([a], tensor_mode="object") == 2064
    assert lib.tensor_info(np.zeros((), "int8")) == 8  # 0-d


def test_owned_tensor_view_keeps_array_alive(lib, rt):
    np = pytest.importorskip("numpy")
    a = np.arange(4, dtype="float32")
    t = values.numpy_to_tensor(rt, a)
    del a
    gc.collect()
    assert t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.strides == (1,) and t.shape == (4,) and t.dtype == "float32"


def test_strided_array_passes_strides(lib, rt):
    np = pytest.importorskip("numpy")
    base = np.arange(12, dtype="float32").reshape(3, 4)
    view = base[:, ::2]
    t = values.numpy_to_tensor(rt, view)
    assert t.shape == (3, 2) and t.strides == (4, 2)
    assert t.numpy().tolist() == view.tolist()
    y = np.zeros(6, "float32")
    with pytest.raises(ValueError, match="compact"):
        lib.add_one(view, y)


def test_tensor_result_numpy_zero_copy(lib):
    pytest.importorskip("numpy")
    t = lib.alloc_tensor(5)
    assert isinstance(t, values.Tensor)
    assert t.dtype == "float32" and t.shape == (5,) and t.device == Device("cpu:0")
    v = t.numpy()
    assert v.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    v[0] = 9.0  # writes go to the tensor's memory
    assert t.numpy()[0] == 9.0
    del t
    gc.collect()
    assert v.tolist() == [9.0, 1.0, 2.0, 3.0, 4.0]  # the view kept the tensor alive
    assert isinstance(v.base, tensors._ArrayHolder)


def test_bool_and_int_arrays(lib):
    np = pytest.importorskip("numpy")
    assert lib.tensor_info(np.zeros(3, dtype=bool)) == 1008
    assert lib.tensor_info(np.zeros((1, 1, 1), dtype="uint16")) == 3016
    with pytest.raises(TypeError):
        lib.tensor_info(np.zeros(2, dtype=object))


def test_runtime_containers_directly(rt):
    arr = values.global_func(rt, "ffi.Array")(1, "two", [3])
    assert arr == [1, "two", [3]]
    assert values.global_func(rt, "ffi.ArraySize")([1, 2, 3]) == 3
    assert values.global_func(rt, "ffi.ArrayGetItem")([5, 6], 1) == 6
    with pytest.raises(IndexError):
        values.global_func(rt, "ffi.ArrayGetItem")([5, 6], 7)
    assert values.global_func(rt, "ffi.MapGetItem")({"a": 1}, "a") == 1
    assert values.global_func(rt, "ffi.MapCount")({"a": 1}, "b") == 0
    assert values.global_func(rt, "ffi.Shape")(4, 5) == (4, 5)
    assert values.global_func(rt, "ffi.String")("abcdefghij") == "abcdefghij"
    assert values.global_func(rt, "ffi.Bytes")(b"\x00\x01") == b"\x00\x01"


def test_unsupported_python_value(lib):
    with pytest.raises(TypeError, match="cannot pass a object"):
        lib.echo(object())


def test_no_leaks_through_conversions(lib, rt):
    if rt.live_objects() is None:
        pytest.skip("the loaded runtime has no live-object counter (not ours)")
    np = pytest.importorskip("numpy")

    def churn():
        lib.echo([1, "long string here!!", {"k": [b"v", Shape(1, 2)]}])
        lib.call_back(lambda x: [x, x], 3)
        lib.tensor_info.call([np.zeros(3, "float32")], tensor_mode="object")
        t = lib.alloc_tensor(3)
        t.numpy()
        try:
            lib.raise_value_error("x")
        except ValueError:
            pass

    churn()
    gc.collect()
    before = rt.live_objects()
    for _ in range(20):
        churn()
    gc.collect()
    assert rt.live_objects() == before
