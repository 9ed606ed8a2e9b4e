"""Random JSON object graphs read by one runtime; prints what each one gives
back (the value written out again, or the error kind and message). Run as a
script in its own process, once per runtime; the test compares the outputs:

    python tests/serial_graph_fuzz.py LIBTVM_FFI SEED COUNT [values]

With `values` it builds random values instead (Arrays, Lists, Maps, Dicts
and Shapes made through the runtime's own globals, sharing sub-values, maps
large enough for the hashed layout) and prints what ToJSONGraphString makes
of them.

Nodes refer only to nodes before them (the official reader recurses without
end on a cycle), and base64 payloads use only characters below '{' (the
official decoder reads its table out of bounds beyond that); everything else
is fair game: wrong types, missing keys, bad indices, odd map data, bad
dtypes, devices and shapes, builtin reflection types with bad fields.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from registry_calls import Runtime

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_!"
TYPES = [
    "None",
    "bool",
    "int",
    "float",
    "DataType",
    "Device",
    "ffi.String",
    "ffi.Bytes",
    "ffi.Array",
    "ffi.List",
    "ffi.Map",
    "ffi.Dict",
    "ffi.Shape",
    "ffi.reflection.AccessStep",
    "ffi.reflection.AccessPath",
    "ffi.IntEnum",
    "ffi.StrEnum",
    "ffi.Object",
]
DTYPES = ["float32", "int8x4", "bool", "uint1", "bfloat16", "float8_e4m3fn", "floatx", "int", ""]


def ref(rng: random.Random, i: int) -> Any:
    r = rng.random()
    if i == 0 or r < 0.04:
        return rng.choice([-1, 10**6 + i, 2**40, "0", None, 0.5])
    return rng.randrange(i)


def scalar(rng: random.Random) -> Any:
    return rng.choice([0, 1, -7, 2**40, 1.5, -0.0, True, False, None, "s", "longer text", [], {}])


def node(rng: random.Random, i: int) -> Any:
    t = rng.choice(TYPES)
    r = rng.random()
    data: Any
    if t in ("bool", "int", "float", "None"):
        data = scalar(rng)
    elif t == "DataType":
        data = rng.choice(DTYPES) if r < 0.9 else scalar(rng)
    elif t == "Device":
        data = [rng.randrange(-1, 20) for _ in range(rng.choice([2, 2, 2, 1, 3]))]
        if r < 0.1:
            data = scalar(rng)
    elif t == "ffi.String":
        data = rng.choice(["", "a", "seven77", "x" * 20, "é"]) if r < 0.9 else scalar(rng)
    elif t == "ffi.Bytes":
        n = rng.choice([0, 4, 8, 3, 5, 12])
        data = "".join(rng.choice(B64) for _ in range(n)) if r < 0.9 else scalar(rng)
    elif t in ("ffi.Array", "ffi.List"):
        data = [ref(rng, i) for _ in range(rng.randrange(4))] if r < 0.9 else scalar(rng)
    elif t in ("ffi.Map", "ffi.Dict"):
        data = [ref(rng, i) for _ in range(rng.choice([0, 2, 4, 3]))] if r < 0.9 else scalar(rng)
    elif t == "ffi.Shape":
        data = [rng.choice([0, 1, 7, -2, True]) for _ in range(rng.randrange(4))]
        if r < 0.1:
            data = ["a"]
    elif t == "ffi.reflection.AccessStep":
        data = {"kind": rng.randrange(6), "key": ref(rng, i)}
        if r < 0.2:
            data.pop(rng.choice(["kind", "key"]))
        elif r < 0.3:
            data["kind"] = "x"
    elif t == "ffi.reflection.AccessPath":
        data = {"parent": ref(rng, i), "step": ref(rng, i), "depth": rng.randrange(4)}
        if r < 0.2:
            data.pop("depth")
    else:
        data = scalar(rng)
    out: dict[str, Any] = {"type": t, "data": data}
    if rng.random() < 0.05:
        out.pop(rng.choice(["type", "data"]))
    return out


def graph(rng: random.Random) -> str:
    n = rng.randrange(1, 7)
    nodes = [node(rng, i) for i in range(n)]
    root: Any = n - 1 if rng.random() < 0.9 else rng.choice([n, -1, True, "0"])
    g: dict[str, Any] = {"root_index": root, "nodes": nodes}
    if rng.random() < 0.03:
        g.pop("nodes")
    return json.dumps(g)


SCALARS: list[Any] = [
    0,
    1,
    -5,
    2**62,
    0.25,
    -0.0,
    1e300,
    True,
    False,
    None,
    "",
    "k",
    "key-long-9",
    3.5,
]


def values(rt: Runtime, rng: random.Random, count: int) -> list[Any]:
    pool: list[Any] = []
    out: list[Any] = []

    def pick() -> Any:
        if pool and rng.random() < 0.5:
            return rng.choice(pool)
        if rng.random() < 0.1:
            return rt.make_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(10))))
        return rng.choice(SCALARS)

    for _ in range(count):
        kind = rng.choice(["ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict", "ffi.Shape"])
        n = rng.choice([0, 1, 3, 5, 12, 40])
        args: list[Any] = []
        if kind == "ffi.Shape":
            args = [rng.randrange(-3, 1000) for _ in range(n)]
        elif kind in ("ffi.Map", "ffi.Dict"):
            for j in range(n):
                key = rng.choice([f"k{rng.randrange(60)}", rng.randrange(60), j])
                args += [key, pick()]
        else:
            args = [pick() for _ in range(n)]
        v = rt.call(kind, *args)
        if isinstance(v, dict):
            out.append(["build", kind, v])
            continue
        pool.append(v)
        meta = rng.choice([None, None, pick()])
        text = rt.call("ffi.ToJSONGraphString", v, meta)
        out.append(text if isinstance(text, dict) else rt.canon(text))
    return out


def main() -> None:
    rt = Runtime(sys.argv[1])
    rng = random.Random(int(sys.argv[2]))
    if sys.argv[4:] == ["values"]:
        json.dump(values(rt, rng, int(sys.argv[3])), sys.stdout)
        return
    out = []
    for _ in range(int(sys.argv[3])):
        text = graph(rng)
        value = rt.call("ffi.FromJSONGraphString", text)
        if isinstance(value, dict):
            out.append([text, value])
            continue
        again = rt.call("ffi.ToJSONGraphString", value, None)
        out.append([text, again if isinstance(again, dict) else rt.canon(again)])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
