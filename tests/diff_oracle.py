"""The official runtime's view of a library's API, for judging `tvmffi diff`.

`official_view(release, lib)` loads `lib` in a fresh interpreter whose
`tvm_ffi` is the official release `release` (tests/releases.py extracts its
wheel) and lists, through that release's own Python API, what the library
registered while loading: globals with their metadata, object types with
their parent, fields, methods and the constructor/copy type attributes.
`official_breaks(old, new)` derives the incompatible changes from two such
views by what a caller of the official API can use: a type's members are its
own and its ancestors', and a member that left the method table but is still
reachable as a type attribute of the same name (`__ffi_init__`,
`__ffi_shallow_copy__`) is still there. Type schemas are compared after
parsing (abi/typeschema.py reads every release's format), nothing else of
tvmffi is used.

Run as a script to judge one pair (the official breaks, then `tvmffi diff`'s,
by default and with --symbols-range; exit 0 when the default's equal them):
    python tests/diff_oracle.py RELEASE_OLD OLD.so RELEASE_NEW NEW.so [--testing]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

#: Type attributes that stand for a member a caller uses (constructor, copy).
MEMBER_ATTRS = ("__ffi_init__", "__ffi_shallow_copy__")

DRIVER = r"""
import ctypes, json, sys
lib, standin = sys.argv[1], sys.argv[2]
if standin:  # answers the release's extension's DT_NEEDED libtvm_ffi_testing.so
    ctypes.CDLL(standin, ctypes.RTLD_GLOBAL)
import tvm_ffi
from tvm_ffi import core

def names():
    return set(tvm_ffi.registry.list_global_func_names())
keys = tvm_ffi.get_global_func("ffi.GetRegisteredTypeKeys", allow_missing=True)
g0, t0 = names(), set(map(str, keys())) if keys is not None else set()
try:
    ctypes.CDLL(lib, ctypes.RTLD_GLOBAL)
except OSError as e:
    print(json.dumps({"loaded": False, "error": str(e)}))
    sys.exit(0)
meta = tvm_ffi.get_global_func("ffi.GetGlobalFuncMetadata", allow_missing=True)
out = {"loaded": True, "globals": {}, "types": {}}
for g in sorted(names() - g0):
    m = None
    if meta is not None:
        try:
            m = meta(g) or None
        except Exception:
            m = None
    out["globals"][g] = m
ATTRS = %(attrs)r
for k in sorted(set(map(str, keys())) - t0 if keys is not None else ()):
    info = core._lookup_or_register_type_info_from_type_key(k)
    par = info.parent_type_info
    attrs = []
    for a in ATTRS:
        try:
            if core._lookup_type_attr(info.type_index, a) is not None:
                attrs.append(a)
        except Exception:
            pass
    out["types"][k] = {
        "parent": par.type_key if par is not None else None,
        "fields": {f.name: {"schema": (f.metadata or {}).get("type_schema"),
                            "writable": not f.frozen} for f in info.fields},
        "methods": {m.name: {"schema": (m.metadata or {}).get("type_schema"),
                             "static": bool(m.is_static)} for m in info.methods},
        "attrs": attrs,
    }
print(json.dumps(out))
""" % {"attrs": MEMBER_ATTRS}


def official_view(
    release: str, lib: str, timeout: float = 600, testing: bool = False
) -> dict[str, Any]:
    """What `lib` registers on official release `release` ({"loaded": False,
    "error": ...} when it does not load; {"loaded": False, "crashed": ...}
    when loading kills the interpreter). `testing`: lib is a release's own
    test library, which the release's Python extension links (DT_NEEDED): a
    stand-in with its SONAME is loaded first (tests/release_meta.py)."""
    import subprocess

    import release_meta
    import releases

    standin = str(release_meta.standin_library()) if testing else ""
    env = dict(os.environ, PYTHONPATH=str(releases.release_root(release)))
    r = subprocess.run(
        [sys.executable, "-c", DRIVER, os.path.abspath(lib), standin],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    if r.returncode != 0:
        tail = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return {"loaded": False, "crashed": r.returncode, "error": " ".join(tail[-3:])[:400]}
    return json.loads(r.stdout.strip().splitlines()[-1])


LOAD_DRIVER = r"""
import ctypes, sys
ctypes.CDLL(sys.argv[1], ctypes.RTLD_GLOBAL)
ctypes.CDLL(sys.argv[2], ctypes.RTLD_GLOBAL)
print("LOADED")
"""


def official_loads(release: str, lib: str, timeout: float = 300) -> tuple[bool, str]:
    """Does `lib` load on release `release`'s libtvm_ffi.so (plain dlopen in a
    fresh interpreter, no tvm_ffi package: its import loads the release's own
    test library)? (True, "") or (False, what it said)."""
    import subprocess

    import releases

    r = subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_DRIVER,
            str(releases.release_runtime(release)),
            os.path.abspath(lib),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if r.returncode == 0 and r.stdout.strip() == "LOADED":
        return True, ""
    said = [ln.strip() for ln in r.stderr.splitlines() if ln.strip() and "File " not in ln]
    return False, " ".join(said[-2:])[:300]


def official_range(lib: str) -> dict[str, str]:
    """release -> "" (loads) or what loading said, for every known release
    (an interpreter each, as many at a time as there are CPUs)."""
    from concurrent.futures import ThreadPoolExecutor

    import releases

    for v in releases.RELEASES:
        releases.release_runtime(v)  # fetched (or found) one at a time, before
    with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        got = dict(
            zip(releases.RELEASES, pool.map(lambda v: official_loads(v, lib), releases.RELEASES))
        )
    return {v: "" if ok else said or "did not load" for v, (ok, said) in got.items()}


def _sig(schema: Any) -> Any:
    """A comparable form of a type schema (None when absent or unreadable)."""
    from tvmffi_cli.abi import typeschema
    from tvmffi_cli.errors import FormatError

    if schema is None:
        return None
    try:
        t = typeschema.parse_type(json.loads(schema) if isinstance(schema, str) else schema)
    except (FormatError, ValueError):
        return None
    if t is None or t.is_untyped_function:
        return None  # a function without a signature: nothing to compare
    return t.render()


def _members(view: dict[str, Any], key: str, what: str) -> dict[str, tuple[Any, str]]:
    """Own and inherited `what` ("fields"/"methods") of type `key`, each with
    the type defining it; the nearest definition wins."""
    chain, k = [], key
    while k in view["types"] and k not in chain:
        chain.append(k)
        k = view["types"][k]["parent"]
    out: dict[str, tuple[Any, str]] = {}
    for k in reversed(chain):
        out.update({n: (m, k) for n, m in view["types"][k][what].items()})
    return out


def _function_sig(meta: Any) -> Any:
    if meta is None:
        return None
    try:
        md = json.loads(meta) if isinstance(meta, str) else meta
    except ValueError:
        return None
    return _sig(md.get("type_schema")) if isinstance(md, dict) else None


def official_breaks(old: dict[str, Any], new: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, subject) of every incompatible change, in tvmffi diff's kinds
    and subjects, from two official views."""
    out: set[tuple[str, str]] = set()
    for g in old["globals"]:
        if g not in new["globals"]:
            out.add(("global.removed", f"global {g}"))
            continue
        a, b = _function_sig(old["globals"][g]), _function_sig(new["globals"][g])
        if a is not None and b is not None and a != b:
            out.add(("global.signature_changed", f"global {g}"))
    for k, ta in old["types"].items():
        tb = new["types"].get(k)
        if tb is None:
            out.add(("type.removed", f"type {k}"))
            continue
        if ta["parent"] != tb["parent"]:
            out.add(("type.parent_changed", f"type {k}"))
        # A member inherited in OLD through a parent both views have is judged
        # at that parent (one finding per member, not one per subtype).
        up = ta["parent"] in old["types"] and ta["parent"] in new["types"]
        fa, fb = _members(old, k, "fields"), _members(new, k, "fields")
        for n, (f, origin) in fa.items():
            if origin != k and up:
                continue
            if n not in fb:
                out.add(("type.field_removed", f"type {k} field {n}"))
                continue
            x, y = _sig(f["schema"]), _sig(fb[n][0]["schema"])
            if x is not None and y is not None and x != y:
                out.add(("type.field_type_changed", f"type {k} field {n}"))
            if f["writable"] and not fb[n][0]["writable"]:
                out.add(("type.field_readonly", f"type {k} field {n}"))
        ma, mb = _members(old, k, "methods"), _members(new, k, "methods")
        for n, (m, origin) in ma.items():
            if origin != k and up:
                continue
            if n not in mb:
                if n not in tb["attrs"]:
                    out.add(("type.method_removed", f"type {k} method {n}"))
                continue
            x, y = _sig(m["schema"]), _sig(mb[n][0]["schema"])
            if m["static"] != mb[n][0]["static"] or (x is not None and y is not None and x != y):
                out.add(("type.method_type_changed", f"type {k} method {n}"))
    return out


def tvmffi_breaks(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """`tvmffi diff --json`'s incompatible changes in official_breaks' terms:
    one item per global/method whose signature changed, the releases a range
    dropped ("NEW does not run on R,")."""
    import re

    out = set()
    for c in doc["changes"]:
        if c["compatible"]:
            continue
        kind, subject = c["kind"], c["subject"]
        if kind.endswith(("param_count_changed", "param_type_changed", "result_type_changed")):
            family = kind.split(".")[0]
            out.add(
                (f"{family}.signature_changed", re.sub(r" (parameter \d+|result)$", "", subject))
            )
        elif kind == "runtime.releases_dropped":
            out.add((kind, c["detail"].split(" where")[0]))
        else:
            out.add((kind, subject))
    return out


def official_items(
    rel_old: str, old: str, rel_new: str, new: str, testing: bool = False
) -> set[tuple[str, str]]:
    """official_breaks of the two views, plus the releases OLD loads on and
    NEW does not (official_range)."""
    import releases
    from tvmffi_cli.abi.versions import releases_text

    vo = official_view(rel_old, old, testing=testing)
    vn = official_view(rel_new, new, testing=testing)
    for side, v in (("OLD", vo), ("NEW", vn)):
        if not v["loaded"]:
            raise SystemExit(f"{side} does not load on its release: {v['error']}")
    items = official_breaks(vo, vn)
    ro, rn = official_range(old), official_range(new)
    dropped = [v for v in releases.RELEASES if not ro[v] and rn[v]]
    if dropped:
        items.add(("runtime.releases_dropped", f"NEW does not run on {releases_text(dropped)},"))
    return items


def main(argv: list[str]) -> int:
    """Official breaks of a pair against `tvmffi diff --json`'s, by default
    (the runtime range by loading) and with --symbols-range (shown, not
    judged: it promises less); exit 0 when the default's equal them."""
    import subprocess

    sys.path.insert(0, os.path.dirname(__file__))
    testing = "--testing" in argv
    rel_old, old_lib, rel_new, new_lib = [a for a in argv if a != "--testing"]
    official = official_items(rel_old, old_lib, rel_new, new_lib, testing)
    print(f"official ({rel_old} -> {rel_new}): {len(official)} break(s)")
    for kind, subject in sorted(official):
        print(f"  {kind}\t{subject}")
    equal = True
    for flags in ([], ["--symbols-range"]):
        r = subprocess.run(
            [sys.executable, "-m", "tvmffi_cli", "diff", "--json", old_lib, new_lib, *flags],
            capture_output=True,
            text=True,
            check=False,
        )
        doc = json.loads(r.stdout)
        ours = tvmffi_breaks(doc)
        equal = equal and (ours == official or bool(flags))
        print(
            f"tvmffi diff {' '.join(flags) or '(default)'}: exit {r.returncode}, "
            f"{doc['verdict']}, {len(ours)} break(s), {doc['summary']['notes']} note(s); "
            f"equal: {ours == official}"
            + (f"; only tvmffi: {sorted(ours - official)}" if ours - official else "")
            + (f"; only official: {sorted(official - ours)}" if official - ours else "")
        )
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
