"""Each official release's test library seen two ways: by that release's own
`tvm_ffi` (the oracle) and by tvmffi on the builtin runtime. Shared by
tests/test_releases_meta.py and tools/release_table.py.

The oracle runs in one subprocess per release (releases.run_release_python).
The release's Python extension has DT_NEEDED libtvm_ffi_testing.so, so
importing `tvm_ffi` registers the test library before anything can be
listed. A stand-in library with that SONAME, loaded first, takes its place;
the real test library is then loaded by path, and what it registers is the
difference of the registry before and after. 0.1.0 has no
ffi.GetRegisteredTypeKeys: there the type keys are the strings of the file
that resolve to a type index after loading and not before.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import releases
from tvmffi_cli.diff import engine as diff_engine
from tvmffi_cli.inspect import api as inspect_api
from tvmffi_cli.stubs import engine as stubs_engine

#: (function, positional arguments as typed on the command line, the same as
#: Python values for the oracle); a release runs those its library has.
CALLS: list[tuple[str, list[str], list[Any]]] = [
    ("testing.add_one", ["41"], [41]),
    ("testing.schema_id_float", ["2"], [2.0]),
    ("testing.schema_id_arr_int", ["[1,2,3]"], [[1, 2, 3]]),
    ("testing_dll_schema_id_int", ["5"], [5]),
]

_ORACLE = r"""
import ctypes, json, re, sys
standin, lib_path, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ctypes.CDLL(standin, ctypes.RTLD_GLOBAL)  # answers the extension's DT_NEEDED
import tvm_ffi
from tvm_ffi import core
reg = tvm_ffi.registry

def type_keys(candidates):
    f = tvm_ffi.get_global_func("ffi.GetRegisteredTypeKeys", allow_missing=True)
    if f is not None:
        return {str(k) for k in f()}
    return {k for k in candidates if core._object_type_key_to_index(k) is not None}

data = open(lib_path, "rb").read()
cands = {m.decode() for m in re.findall(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)+", data)}
g0, t0 = set(reg.list_global_func_names()), type_keys(cands)
mod = tvm_ffi.load_module(lib_path)
g1, t1 = set(reg.list_global_func_names()), type_keys(cands)

def rep(ts):
    if ts is None:
        return None
    s = core.TypeSchema.from_json_str(ts) if isinstance(ts, str) else core.TypeSchema.from_json_obj(ts)
    return s.repr()

out = {"globals": {}, "types": {}, "exports": {}, "calls": {}, "docs": {}, "type_keys_by": (
    "ffi.GetRegisteredTypeKeys" if tvm_ffi.get_global_func("ffi.GetRegisteredTypeKeys", allow_missing=True)
    else "strings of the file resolved by type key")}
for g in sorted(g1 - g0):
    out["globals"][g] = rep(reg.get_global_func_metadata(g).get("type_schema"))
for key in sorted(t1 - t0):
    info = core._lookup_or_register_type_info_from_type_key(key)
    parent = info.parent_type_info.type_key if info.parent_type_info is not None else None
    out["types"][key] = {
        "parent": parent,
        "fields": {f.name: [rep((f.metadata or {}).get("type_schema")), bool(f.frozen)] for f in info.fields},
        "methods": {m.name: [rep((m.metadata or {}).get("type_schema")), bool(m.is_static)] for m in info.methods},
    }
    for kind, members in (("field", info.fields), ("method", info.methods)):
        for x in members:
            if x.doc:
                out["docs"][f"{kind} {key}.{x.name}"] = x.doc
if hasattr(mod, "get_function_metadata"):
    syms = sorted({m.decode()[len("__tvm_ffi__metadata_"):] for m in re.findall(rb"__tvm_ffi__metadata_[A-Za-z0-9_]+", data)})
    for name in syms:
        md = mod.get_function_metadata(name)
        if md is not None:
            out["exports"][name] = rep(md.get("type_schema"))
    for name in sorted(set(out["exports"]) | {m.decode()[len("__tvm_ffi__doc_"):] for m in re.findall(rb"__tvm_ffi__doc_[A-Za-z0-9_]+", data)}):
        doc = mod.get_function_doc(name)
        if doc:
            out["docs"][f"export {name}"] = doc
for name, args in calls:
    if name in g1:
        f = tvm_ffi.get_global_func(name)
    elif name in out["exports"]:
        f = mod[name]
    else:
        continue
    r = f(*args)
    out["calls"][name] = list(r) if not isinstance(r, (int, float, str)) else r
print(json.dumps(out))
"""


@cache
def standin_library() -> Path:
    """A library with the SONAME libtvm_ffi_testing.so and the one symbol
    the release's Python extension calls from it."""
    d = releases.cache_dir() / "standin"
    lib = d / "libtvm_ffi_testing.so"
    if not lib.is_file():
        d.mkdir(parents=True, exist_ok=True)
        src = d / "standin.c"
        src.write_text("int TVMFFITestingDummyTarget(void) { return 0; }\n")
        tmp = d / f"libtvm_ffi_testing.so.tmp{os.getpid()}"
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-Wl,-soname,libtvm_ffi_testing.so", "-o", tmp, src],
            check=True,
        )
        tmp.rename(lib)
    return lib


@cache
def oracle(version: str) -> dict[str, Any]:
    """What release `version`'s own runtime registers when it loads its test
    library: globals and exports with the signature its own TypeSchema
    renders, types with fields and methods, and the results of CALLS."""
    calls = [[n, py] for n, _cli, py in CALLS]
    code = "import sys; sys.argv[1:] = " + repr(
        [str(standin_library()), str(releases.release_testing_lib(version)), json.dumps(calls)]
    )
    r = releases.run_release_python(version, code + "\n" + _ORACLE)
    assert r.returncode == 0, r.stderr[-2000:]
    out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def tvmffi(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("tvmffi")
    return subprocess.run(
        [str(exe), *args], check=False, capture_output=True, text=True, timeout=timeout
    )


@cache
def inspect_doc(version: str, runtime: str = "builtin") -> tuple[int, dict[str, Any] | None]:
    """(exit code, `tvmffi inspect --json` document) of the release's test library."""
    rt = runtime if runtime == "builtin" else str(releases.release_runtime(version))
    r = tvmffi("inspect", "--json", "--runtime", rt, str(releases.release_testing_lib(version)))
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, None


def api(version: str) -> inspect_api.Api:
    code, doc = inspect_doc(version)
    assert doc is not None, f"inspect of {version} printed no JSON (exit {code})"
    return inspect_api.from_report(doc)


def official_arity(rendered: str | None) -> int | None:
    """Parameter count of an official TypeSchema rendering `Callable[[A, B], R]`;
    None for a function without a signature (`Callable[..., Any]`) or no function."""
    if not rendered or not rendered.startswith("Callable[[") or rendered.startswith("Callable[..."):
        return None
    depth, n, body = 0, 0, rendered[len("Callable[[") :]
    if body.startswith("]"):
        return 0
    for ch in body:
        if ch == "[":
            depth += 1
        elif ch == "]":
            if depth == 0:
                return n + 1
            depth -= 1
        elif ch == "," and depth == 0:
            n += 1
    return None


def declared(version: str) -> dict[str, int]:
    """Signatures the release's metadata declares, by the release's own parser:
    name -> parameter count (exports, globals, methods)."""
    o = oracle(version)
    out: dict[str, int] = {}
    for family in ("exports", "globals"):
        for name, rendered in o[family].items():
            n = official_arity(rendered)
            if n is not None:
                out[name] = n
    for key, t in o["types"].items():
        for name, (rendered, _static) in t["methods"].items():
            n = official_arity(rendered)
            if n is not None:
                out[f"{key}.{name}"] = n
    return out


def ours(version: str) -> dict[str, int]:
    """The same, as tvmffi's inspect parsed it (name -> parameter count)."""
    a = api(version)
    out: dict[str, int] = {}
    for f in a.exports + a.globals:
        if f.type is not None and f.type.params is not None:
            out[f.name] = len(f.type.params)
    for t in a.types:
        for m in t.methods:
            if m.type is not None and m.type.params is not None:
                out[f"{t.key}.{m.name}"] = len(m.type.params)
    return out


def docs(version: str) -> dict[str, str]:
    """Docstrings tvmffi's inspect reports, keyed like the oracle's "docs"."""
    code, doc = inspect_doc(version)
    assert doc is not None, f"inspect of {version} printed no JSON (exit {code})"
    out = {f"export {f['name']}": f["doc"] for f in doc["functions"] if f.get("doc")}
    for t in doc["types"]:
        for kind in ("field", "method"):
            for x in t[kind + "s"]:
                if x.get("doc"):
                    out[f"{kind} {t['type_key']}.{x['name']}"] = x["doc"]
    return out


def stub_typed(version: str) -> int:
    return stubs_engine.render(api(version), "lib.so").typed


def call_ours(version: str, name: str, argv: list[str]) -> dict[str, Any]:
    r = tvmffi("call", str(releases.release_testing_lib(version)), name, *argv, "--json")
    assert r.returncode == 0, r.stderr[-1000:]
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def _official(o: dict[str, Any], subject: str) -> Any:
    """The official view of a diff subject (what would have to differ for the
    change to be real); a sentinel when the subject is not there."""
    m = re.match(r"(export|global) (\S+)", subject)
    if m:
        return o["exports" if m.group(1) == "export" else "globals"].get(m.group(2), "<absent>")
    m = re.match(r"type (\S+)(?: (field|method) (\S+))?", subject)
    if m:
        t = o["types"].get(m.group(1))
        if t is None or m.group(2) is None:
            return t and t["parent"]
        return t[m.group(2) + "s"].get(m.group(3), "<absent>")
    return None


def false_breaks(old: str, new: str) -> list[diff_engine.Change]:
    """Breaking changes `diff` reports between two releases' test libraries
    that the releases' own views do not show (runtime imports are facts of
    the files and count as real)."""
    res = diff_engine.compare(api(old), api(new))
    oa, ob = oracle(old), oracle(new)
    out = []
    for c in res.changes:
        if c.compatible or c.kind.startswith("runtime."):
            continue
        if _official(oa, c.subject) == _official(ob, c.subject):
            out.append(c)
    return out


def breaks(old: str, new: str) -> list[diff_engine.Change]:
    return [c for c in diff_engine.compare(api(old), api(new)).changes if not c.compatible]
