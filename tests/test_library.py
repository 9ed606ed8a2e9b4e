"""tvmffi_cli.load(): the in-process Library API over both fixtures.

The process hosts one runtime: ours when it exports the whole C API, else the
official one (TVMFFI_TEST_RUNTIME=official|ours forces the choice)."""

import json
import os
import threading

import pytest

import fixturebuild
import tvmffi_cli
from tvmffi_cli.errors import InputError
from tvmffi_cli.ffi import errors as ffi_errors
from tvmffi_cli.ffi import objects, registry, runtime, values

KITCHEN_DEFINES = ["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"]
KITCHEN_FLAGS = ["-Wno-unused-parameter"]


def pick_runtime():
    loaded = runtime.loaded_runtime()
    if loaded is not None:
        return loaded.path
    forced = os.environ.get("TVMFFI_TEST_RUNTIME")
    official = fixturebuild.official_runtime()
    try:
        ours = fixturebuild.our_runtime()
    except InputError:
        ours = None
    if forced == "ours" or (forced != "official" and ours and runtime.exports_c_api(ours)):
        return ours
    if official is None:
        pytest.skip("neither our runtime (incomplete) nor apache-tvm-ffi is available")
    return official


@pytest.fixture(scope="module")
def rt():
    return runtime.get_runtime(pick_runtime())


@pytest.fixture(scope="module")
def kitchen_path(build_lib, official_include):
    return build_lib(
        "cpp/kitchen.cc", headers="official", defines=KITCHEN_DEFINES, flags=KITCHEN_FLAGS
    )


@pytest.fixture(scope="module")
def kitchen(rt, kitchen_path):
    return tvmffi_cli.load(kitchen_path)


@pytest.fixture(scope="module")
def basic(rt, build_lib):
    return tvmffi_cli.load(build_lib("c/basic.c", headers="ours"))


BASIC_FUNCS = [
    "add_int",
    "add_one",
    "alloc_tensor",
    "call_back",
    "dtype_x4",
    "echo",
    "echo_bytes",
    "echo_device",
    "echo_dtype",
    "echo_float",
    "echo_int",
    "echo_str",
    "heap_string",
    "negate_bool",
    "opaque_ptr",
    "raise_kind",
    "raise_value_error",
    "str_len",
    "sum",
    "tensor_info",
    "type_index_of",
]


def test_function_names_from_symbols(basic):
    assert basic.function_names() == BASIC_FUNCS  # __tvm_ffi__basic_marker is not a function


def test_attribute_and_item_access(basic):
    assert basic.add_int(40, 2) == 42
    assert basic["add_int"](1, 2) == 3
    assert basic.add_int is basic["add_int"]
    assert "sum" in basic and "nope" not in basic
    with pytest.raises(AttributeError, match="no function 'nope'"):
        basic.nope
    with pytest.raises(KeyError):
        basic["nope"]


def test_missing_file_is_input_error(rt, tmp_path):
    with pytest.raises(InputError, match="no such file"):
        tvmffi_cli.load(tmp_path / "absent.so")


def test_not_a_library_is_input_error(rt, tmp_path):
    p = tmp_path / "junk.so"
    p.write_bytes(b"not an ELF file at all")
    with pytest.raises(InputError):
        tvmffi_cli.load(p)


def test_other_runtime_in_same_process_is_refused(rt, official_runtime, tmp_path):
    other = (
        fixturebuild.our_runtime() if rt.path == official_runtime.resolve() else official_runtime
    )
    with pytest.raises(InputError, match="already loaded"):
        runtime.get_runtime(other)


def test_kitchen_metadata_and_docs(kitchen):
    md = kitchen.metadata("add")
    schema = json.loads(md["type_schema"])
    assert schema == {
        "type": "ffi.Function",
        "named_args": {"return": [{"type": "int"}], "params": [{"type": "int"}, {"type": "int"}]},
    }
    scale = json.loads(kitchen.metadata("scale")["type_schema"])
    assert scale["named_args"]["params"][1] == {"type": "Optional", "args": [{"type": "float"}]}
    assert kitchen.doc("add") == "Add two integers.\n\nReturns a + b."
    assert kitchen.doc("sum_array") == "Sum of an array of integers."
    assert kitchen.doc("greet") is None
    assert kitchen.metadata("no_such_function") is None
    raw = kitchen.metadata_raw("greet")
    assert json.loads(raw) == kitchen.metadata("greet")
    assert json.loads(kitchen.metadata("greet")["type_schema"])["named_args"]["params"] == [
        {"type": "ffi.String"}
    ]


def test_kitchen_globals_and_types(kitchen):
    assert kitchen.globals_registered == ["kitchen.add", "kitchen.greet", "kitchen.make_point"]
    assert kitchen.types_registered == ["kitchen.Point"]
    assert kitchen.get_global("kitchen.add")(20, 22) == 42
    assert kitchen.get_global("kitchen.greet")("ann") == "hello, ann"
    assert kitchen.get_global("kitchen.nope") is None
    assert "kitchen.add" in registry.list_globals(kitchen.runtime)


def test_kitchen_scalars(kitchen):
    assert kitchen.add(2, 3) == 5
    assert kitchen.add(-(1 << 62), -(1 << 62)) == -(1 << 63)
    assert kitchen.scale(1.5, None) == 3.0
    assert kitchen.scale(1.5, 3.0) == 4.5
    assert kitchen.is_even(4) is True and kitchen.is_even(3) is False
    assert kitchen.noop() is None
    assert kitchen.greet("bob") == "hello, bob"
    assert kitchen.greet("x" * 100) == "hello, " + "x" * 100
    assert kitchen.opt_name(None) == "<none>" and kitchen.opt_name("z") == "z"
    assert kitchen.reverse(b"abc") == b"cba"
    assert kitchen.reverse(b"\x00\x01" * 20) == b"\x01\x00" * 20
    w = kitchen.widen(objects.DataType("float16"))
    assert (
        w == "float32"
        and isinstance(w, objects.DataType)
        and (w.code, w.bits, w.lanes) == (2, 32, 1)
    )
    assert kitchen.next_device(objects.Device("cuda:1")) == objects.Device("cuda", 2)


def test_kitchen_containers(kitchen):
    assert kitchen.sum_array([1, 2, 3, 4]) == 10
    assert kitchen.sum_array([]) == 0
    assert kitchen.range(5) == [0, 1, 2, 3, 4]
    assert kitchen.range(0) == []
    assert kitchen.map_get({"a": 5, "b": 6}, "b") == 6
    assert kitchen.counts(["a", "b", "a", "c", "a"]) == {"a": 3, "b": 1, "c": 1}
    s = kitchen.make_shape(2, 3)
    assert isinstance(s, objects.Shape) and s == (2, 3)
    assert kitchen.shape_numel(objects.Shape(2, 3, 4)) == 24
    assert kitchen.echo_any([1, "two", [3.0, None], {"k": b"v"}]) == [
        1,
        "two",
        [3.0, None],
        {"k": b"v"},
    ]


def test_kitchen_tensors(kitchen):
    np = pytest.importorskip("numpy")
    a = np.arange(6, dtype="float32").reshape(2, 3)
    f = kitchen["tensor_sum"]
    assert f.call([a], tensor_mode="object") == 15.0
    assert kitchen.tensor_shape.call([a], tensor_mode="object") == (2, 3)
    t = kitchen.iota(4)
    assert isinstance(t, values.Tensor)
    assert t.dtype == "float32" and t.shape == (4,) and str(t.device) == "cpu:0"
    assert t.numpy().tolist() == [0.0, 0.5, 1.0, 1.5]
    assert kitchen.tensor_sum(t) == 3.0  # a Tensor result passed back in
    b = np.ones(3, "float32")
    kitchen.double_in_place(b)  # DLTensor* view: written in place
    assert b.tolist() == [2.0, 2.0, 2.0]


def test_kitchen_functions(kitchen):
    assert kitchen.apply(lambda x: x * 10, 4) == 40
    adder = kitchen.make_adder(5)
    assert isinstance(adder, values.Function)
    assert adder(1) == 6
    assert kitchen.apply(adder, 10) == 15


def test_kitchen_registered_object(kitchen):
    p = kitchen.make_point(3, 4.0, "pt")
    assert isinstance(p, values.Object)
    assert p.type_key == "kitchen.Point"
    assert p.type_index >= 128
    assert p.fields == {"x": 3, "y": 4.0, "label": "pt"}
    assert p.x == 3 and p.label == "pt"
    assert kitchen.point_norm(p) == 5.0
    q = kitchen.get_global("kitchen.make_point")(1, 2.5, "g")
    assert q.fields == {"x": 1, "y": 2.5, "label": "g"}


@pytest.mark.parametrize(
    "func,arg,cls,kind,message",
    [
        ("fail_value", "x", ValueError, "ValueError", "kitchen failed: x"),
        ("fail_type", 7, TypeError, "TypeError", "bad type for 7"),
        ("fail_index", 3, IndexError, "IndexError", "index 3 out of range"),
        ("fail_runtime", "y", RuntimeError, "RuntimeError", "kitchen failed: y"),
        ("fail_custom", "z", ffi_errors.FFIError, "KitchenError", "z"),
    ],
)
def test_kitchen_errors(kitchen, func, arg, cls, kind, message):
    with pytest.raises(cls) as ei:
        kitchen[func](arg)
    e = ei.value
    assert isinstance(e, ffi_errors.FFIErrorBase)
    assert e.kind == kind and str(e) == message and e.message == message
    assert isinstance(e.backtrace, str)


def test_kitchen_error_cause_and_key_error(kitchen):
    with pytest.raises(RuntimeError) as ei:
        kitchen.fail_with_cause("q")
    assert str(ei.value) == "outer: q"
    cause = ei.value.__cause__
    assert isinstance(cause, ValueError) and cause.kind == "ValueError" and str(cause) == "inner: q"
    with pytest.raises(KeyError) as ki:
        kitchen.map_get({"a": 1}, "b")
    assert str(ki.value) == "no key b"


def test_kitchen_argument_type_errors(kitchen):
    with pytest.raises(TypeError) as ei:
        kitchen.add("x", 1)
    assert ei.value.kind == "TypeError" and "add" in str(ei.value)
    with pytest.raises(TypeError):
        kitchen.add(1)  # wrong argument count


def test_basic_add_one_modes(basic):
    np = pytest.importorskip("numpy")
    x = np.arange(5, dtype="float32")
    for mode in ("dltensor", "object"):
        y = np.zeros(5, dtype="float32")
        assert basic.add_one.call([x, y], tensor_mode=mode) is None
        assert y.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(TypeError, match="float32"):
        basic.add_one(np.zeros(2, "float64"), np.zeros(2, "float64"))


def test_library_tensor_mode_option(rt, build_lib):
    np = pytest.importorskip("numpy")
    lib = tvmffi_cli.load(build_lib("c/basic.c", headers="ours"), tensor_mode="object")
    assert lib.type_index_of(np.zeros(2, "float32")) == 70
    with pytest.raises(InputError):
        tvmffi_cli.load(build_lib("c/basic.c", headers="ours"), tensor_mode="bogus")


def test_threads_share_functions_and_keep_errors_apart(basic):
    errors = []

    def worker(i):
        try:
            for j in range(200):
                assert basic.add_int(i, j) == i + j
                try:
                    basic.raise_value_error(f"t{i}-{j}")
                except ValueError as e:
                    assert str(e) == f"basic: t{i}-{j}"
                else:
                    raise AssertionError("no error raised")
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
