"""The same fixture calls through the official libtvm_ffi.so and through ours
(each in its own subprocess: one runtime per process) give identical results
and error kinds."""

import json
import subprocess
import sys

import pytest

import fixturebuild
from tvmffi_cli.errors import InputError
from tvmffi_cli.ffi import runtime
from tvmffi_cli.sandbox import process as sandbox

# Runs in a child: argv = runtime, basic.so, kitchen.so. Prints one JSON
# object {call label: canonical outcome}.
DRIVER = r"""
import json, math, sys
import numpy as np
import tvmffi_cli
from tvmffi_cli.ffi import errors as ffi_errors
from tvmffi_cli.ffi import objects, values

rt_path, basic_path, kitchen_path = sys.argv[1:4]
basic = tvmffi_cli.load(basic_path, runtime=rt_path)
kitchen = tvmffi_cli.load(kitchen_path)

def canon(v):
    if isinstance(v, ffi_errors.FFIErrorBase):
        return {"error_value": [v.kind, v.message]}
    if isinstance(v, objects.DataType):  # before str: DataType is a str subclass
        return {"dtype": [str(v), v.code, v.bits, v.lanes]}
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return {"float": repr(v)}
    if isinstance(v, bytes):
        return {"bytes": v.hex()}
    if isinstance(v, objects.Device):
        return {"device": [v.device_type, v.device_id]}
    if isinstance(v, objects.Shape):
        return {"shape": list(v)}
    if isinstance(v, list):
        return [canon(x) for x in v]
    if isinstance(v, dict):
        return {"map": sorted([canon(k), canon(x)] for k, x in v.items())}
    if isinstance(v, values.Tensor):
        return {"tensor": [str(v.dtype), list(v.shape), str(v.device), v.numpy().tolist()]}
    if isinstance(v, values.Function):
        return {"function": True}
    if isinstance(v, values.Object):
        return {"object": v.type_key, "fields": {k: canon(x) for k, x in v.fields.items()}}
    return {"other": type(v).__name__}

out = {}
def run(label, fn, *args, mode=None):
    try:
        r = fn.call(list(args), tensor_mode=mode) if mode else fn(*args)
        out[label] = {"ok": canon(r)}
    except ffi_errors.FFIErrorBase as e:
        c = e.__cause__
        out[label] = {"raised": e.kind, "message": e.message,
                      "cause": [c.kind, c.message] if isinstance(c, ffi_errors.FFIErrorBase) else None}

x = np.arange(4, dtype="float32")
y = np.zeros(4, dtype="float32")
run("basic.add_one", basic.add_one, x, y)
out["basic.add_one.y"] = y.tolist()
run("basic.add_one.obj", basic.add_one, x, y, mode="object")
for v in [0, -7, (1 << 63) - 1, 2.5, True, None, "s", "longer string value", b"", b"\x00\xff",
          [1, [2, "x"]], {"k": [1]}, objects.Shape(2, 3), objects.DataType("bfloat16"), objects.Device("cuda:2"),
          1 << 70]:
    run(f"basic.echo({v!r})", basic.echo, v)
    run(f"basic.type_index_of({v!r})", basic.type_index_of, v)
for n in [0, 7, 8, 100]:
    run(f"basic.heap_string({n})", basic.heap_string, n)
run("basic.alloc_tensor", basic.alloc_tensor, 3)
run("basic.sum", basic.sum, 1, 2, 3)
run("basic.call_back", basic.call_back, lambda v: [v, v], 5)
run("basic.echo_str", basic.echo_str, "a\0b")
run("basic.dtype_x4", basic.dtype_x4, objects.DataType("int8"))
for kind in ["ValueError", "TypeError", "IndexError", "KeyError", "CustomKind"]:
    run(f"basic.raise_kind({kind})", basic.raise_kind, kind, "msg " + kind)
run("basic.add_int.argc", basic.add_int, 1)
run("basic.echo_int.type", basic.echo_int, "x")

run("kitchen.add", kitchen.add, 2, 3)
run("kitchen.scale", kitchen.scale, 1.5, None)
run("kitchen.greet", kitchen.greet, "bob")
run("kitchen.opt_name", kitchen.opt_name, None)
run("kitchen.reverse", kitchen.reverse, b"abcdefghijkl")
run("kitchen.widen", kitchen.widen, objects.DataType("float16"))
run("kitchen.next_device", kitchen.next_device, objects.Device("cuda:0"))
run("kitchen.echo_any", kitchen.echo_any, [1, {"a": b"b"}, objects.Shape(1)])
run("kitchen.sum_array", kitchen.sum_array, [1, 2, 3])
run("kitchen.range", kitchen.range, 5)
run("kitchen.map_get", kitchen.map_get, {"a": 1, "b": 2}, "b")
run("kitchen.map_get.missing", kitchen.map_get, {"a": 1}, "z")
run("kitchen.counts", kitchen.counts, ["a", "b", "a"])
run("kitchen.make_shape", kitchen.make_shape, 4, 5)
run("kitchen.shape_numel", kitchen.shape_numel, objects.Shape(2, 3, 4))
run("kitchen.tensor_sum", kitchen.tensor_sum, x, mode="object")
run("kitchen.tensor_shape", kitchen.tensor_shape, np.zeros((2, 5), "float32"), mode="object")
run("kitchen.iota", kitchen.iota, 3)
run("kitchen.apply", kitchen.apply, lambda v: v + 100, 1)
run("kitchen.make_adder", kitchen.make_adder, 3)
for f, a in [("fail_value", "x"), ("fail_type", 1), ("fail_index", 2), ("fail_runtime", "y"),
             ("fail_custom", "z"), ("fail_with_cause", "w")]:
    run("kitchen." + f, kitchen[f], a)
run("kitchen.make_point", kitchen.make_point, 3, 4.0, "p")
run("kitchen.point_norm", kitchen.point_norm, kitchen.make_point(3, 4.0, "p"))
run("kitchen.add.badtype", kitchen.add, "x", 1)
run("kitchen.global.add", kitchen.get_global("kitchen.add"), 5, 6)
out["kitchen.globals"] = kitchen.globals_registered
out["kitchen.types"] = kitchen.types_registered
out["kitchen.names"] = kitchen.function_names()
out["kitchen.doc.add"] = kitchen.doc("add")
out["kitchen.metadata.scale"] = kitchen.metadata("scale")
print(json.dumps(out, sort_keys=True))
"""


def _run_side(rt, basic, kitchen):
    # The same child environment as sandbox workers (static TLS reserve, PYTHONPATH).
    env = sandbox._child_env(None, None)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(rt), str(basic), str(kitchen)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if proc.returncode != 0:
        pytest.fail(f"driver failed on {rt} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def both_runtimes(official_runtime):
    try:
        ours = fixturebuild.our_runtime()
    except InputError as e:
        pytest.skip(f"our runtime is not built: {e}")
    if not runtime.exports_c_api(ours):
        pytest.skip("our runtime does not export all 50 C API functions yet")
    return official_runtime, ours


def test_same_results_on_both_runtimes(both_runtimes, build_lib, official_include):
    official, ours = both_runtimes
    basic = build_lib("c/basic.c", headers="ours")
    kitchen = build_lib(
        "cpp/kitchen.cc",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
        flags=["-Wno-unused-parameter"],
    )
    ref = _run_side(official, basic, kitchen)
    got = _run_side(ours, basic, kitchen)
    assert len(ref) > 80
    assert ref["basic.add_one.y"] == [1.0, 2.0, 3.0, 4.0]  # the driver really ran
    diffs = [
        f"{k}: official={ref.get(k)!r} ours={got.get(k)!r}"
        for k in sorted(set(ref) | set(got))
        if ref.get(k) != got.get(k)
    ]
    assert not diffs, "\n".join(diffs)
