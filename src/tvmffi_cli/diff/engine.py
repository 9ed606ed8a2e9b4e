"""`tvmffi diff OLD NEW`: is NEW a drop-in replacement for OLD?

Both libraries are described by the inspect engine (static facts from the
file; types, globals and metadata from the loaded view unless `static`) and
turned into the API model (inspect.api.Api). Every difference is a `Change`
with a stable `kind` id (KINDS below) and a verdict: compatible (a caller of
OLD keeps working with NEW) or not. Removing or retyping anything a caller
can use is incompatible; additions are compatible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..abi.capi import C_API_NAMES
from ..inspect.api import Api, EmbeddedModule, Func, ObjectType, TypeRef

# kind id -> (compatible, what it means). The ids are part of the JSON output.
KINDS: dict[str, tuple[bool, str]] = {
    "export.removed": (False, "an exported function is gone"),
    "export.added": (True, "a new exported function"),
    "export.param_count_changed": (False, "an export takes a different number of parameters"),
    "export.param_type_changed": (False, "a parameter of an export has another type"),
    "export.result_type_changed": (False, "an export returns another type"),
    "export.type_added": (True, "an export gained a type schema"),
    "export.type_removed": (True, "an export lost its type schema (no longer checkable)"),
    "export.doc_changed": (True, "an export's docstring changed"),
    "global.removed": (False, "a registered global function is gone"),
    "global.added": (True, "a new registered global function"),
    "global.param_count_changed": (False, "a global takes a different number of parameters"),
    "global.param_type_changed": (False, "a parameter of a global has another type"),
    "global.result_type_changed": (False, "a global returns another type"),
    "global.type_added": (True, "a global gained a type schema"),
    "global.type_removed": (True, "a global lost its type schema (no longer checkable)"),
    "type.removed": (False, "an object type is no longer registered"),
    "type.added": (True, "a new object type"),
    "type.parent_changed": (False, "an object type derives from another type"),
    "type.field_removed": (False, "a field of an object type is gone"),
    "type.field_added": (True, "a new field of an object type"),
    "type.field_type_changed": (False, "a field has another type"),
    "type.field_readonly": (False, "a writable field became read-only"),
    "type.method_removed": (False, "a method of an object type is gone"),
    "type.method_added": (True, "a new method of an object type"),
    "type.method_type_changed": (False, "a method's parameters or result changed"),
    "type.method_type_added": (True, "a method gained a type schema"),
    "type.method_type_removed": (True, "a method lost its type schema (no longer checkable)"),
    "module.removed": (False, "an embedded module is gone"),
    "module.added": (True, "a new embedded module"),
    "kernel.removed": (False, "a kernel of an embedded module is gone"),
    "kernel.added": (True, "a new kernel in an embedded module"),
    "kernel.args_changed": (False, "a kernel's argument types changed"),
    "cubin.removed": (False, "an embedded GPU binary (__tvm_ffi__cubin_) is gone"),
    "cubin.added": (True, "a new embedded GPU binary"),
    "runtime.newer_required": (False, "NEW imports runtime functions OLD's runtime may lack"),
    "runtime.cxx_imports_added": (
        False,
        "NEW needs runtime symbols the builtin runtime lacks (abi/release_exports.py)",
    ),
    "runtime.import_added": (True, "NEW uses another C API function of the stable ABI"),
}


@dataclass(frozen=True)
class Change:
    kind: str  # a key of KINDS
    subject: str  # what changed: "export add", "type kitchen.Point field x", ...
    old: str | None  # the OLD side, readable ("add(int, int) -> int"), None when absent
    new: str | None
    compatible: bool
    detail: str  # one sentence
    suppressed: bool = False  # accepted by a --suppress pattern: does not decide the exit code

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "old": self.old,
            "new": self.new,
            "compatible": self.compatible,
            "detail": self.detail,
            "suppressed": self.suppressed,
        }


@dataclass(frozen=True)
class DiffResult:
    old_path: str
    new_path: str
    mode: str  # "static" when either side was read statically, else "loaded"
    changes: tuple[Change, ...]
    warnings: tuple[str, ...]

    @property
    def compatible(self) -> bool:
        """No change that breaks callers, apart from suppressed ones."""
        return all(c.compatible or c.suppressed for c in self.changes)

    @property
    def exit_code(self) -> int:
        return 0 if self.compatible else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old_path,
            "new": self.new_path,
            "mode": self.mode,
            "compatible": self.compatible,
            "summary": {
                "changes": len(self.changes),
                "incompatible": sum(not c.compatible for c in self.changes),
                "suppressed": sum(c.suppressed for c in self.changes),
            },
            "changes": [c.to_json() for c in self.changes],
            "warnings": list(self.warnings),
        }


class _Acc:
    def __init__(self) -> None:
        self.changes: list[Change] = []

    def add(
        self, kind: str, subject: str, old: str | None, new: str | None, detail: str = ""
    ) -> None:
        ok, meaning = KINDS[kind]
        self.changes.append(Change(kind, subject, old, new, ok, detail or meaning))


def _sig(name: str, t: TypeRef | None) -> str:
    if t is None or t.params is None:
        return f"{name}(...)"
    r = t.ret.render() if t.ret is not None else "Any"
    return f"{name}({', '.join(p.render() for p in t.params)}) -> {r}"


def _compare_func_types(
    acc: _Acc, family: str, name: str, old: TypeRef | None, new: TypeRef | None
) -> None:
    subject = f"{family} {name}"
    # Gaining or losing a signature changes what can be checked, not what a
    # caller may pass: compatible, the same for exports, globals and methods.
    if old is None or old.params is None:
        if new is not None and new.params is not None:
            acc.add(f"{family}.type_added", subject, _sig(name, old), _sig(name, new))
        return
    if new is None or new.params is None:
        acc.add(f"{family}.type_removed", subject, _sig(name, old), _sig(name, new))
        return
    if len(old.params) != len(new.params):
        acc.add(
            f"{family}.param_count_changed",
            subject,
            _sig(name, old),
            _sig(name, new),
            f"{len(old.params)} parameter(s) before, {len(new.params)} now",
        )
        return
    for i, (a, b) in enumerate(zip(old.params, new.params)):
        if a != b:
            acc.add(
                f"{family}.param_type_changed",
                f"{subject} parameter {i}",
                a.render(),
                b.render(),
                f"parameter {i} of {name} was {a.render()}, is {b.render()}",
            )
    ra = old.ret.render() if old.ret is not None else "Any"
    rb = new.ret.render() if new.ret is not None else "Any"
    if old.ret != new.ret:
        acc.add(
            f"{family}.result_type_changed",
            f"{subject} result",
            ra,
            rb,
            f"{name} returned {ra}, returns {rb}",
        )


def _funcs(acc: _Acc, family: str, old: Iterable[Func], new: Iterable[Func]) -> None:
    a = {f.name: f for f in old}
    b = {f.name: f for f in new}
    for n in sorted(a.keys() - b.keys()):
        acc.add(f"{family}.removed", f"{family} {n}", _sig(n, a[n].type), None)
    for n in sorted(b.keys() - a.keys()):
        acc.add(f"{family}.added", f"{family} {n}", None, _sig(n, b[n].type))
    for n in sorted(a.keys() & b.keys()):
        _compare_func_types(acc, family, n, a[n].type, b[n].type)
        if family == "export" and (a[n].doc or None) != (b[n].doc or None):
            acc.add("export.doc_changed", f"export {n} doc", a[n].doc, b[n].doc)


def _render(t: TypeRef | None) -> str:
    return "Any" if t is None else t.render()


def _types(acc: _Acc, old: Iterable[ObjectType], new: Iterable[ObjectType]) -> None:
    a = {t.key: t for t in old}
    b = {t.key: t for t in new}
    for k in sorted(a.keys() - b.keys()):
        acc.add("type.removed", f"type {k}", k, None)
    for k in sorted(b.keys() - a.keys()):
        acc.add("type.added", f"type {k}", None, k)
    for k in sorted(a.keys() & b.keys()):
        ta, tb = a[k], b[k]
        if ta.parent != tb.parent:
            acc.add("type.parent_changed", f"type {k}", ta.parent, tb.parent)
        fa = {f.name: f for f in ta.fields}
        fb = {f.name: f for f in tb.fields}
        for n in sorted(fa.keys() - fb.keys()):
            acc.add("type.field_removed", f"type {k} field {n}", _render(fa[n].type), None)
        for n in sorted(fb.keys() - fa.keys()):
            acc.add("type.field_added", f"type {k} field {n}", None, _render(fb[n].type))
        for n in sorted(fa.keys() & fb.keys()):
            if fa[n].type != fb[n].type:
                acc.add(
                    "type.field_type_changed",
                    f"type {k} field {n}",
                    _render(fa[n].type),
                    _render(fb[n].type),
                    f"{k}.{n} was {_render(fa[n].type)}, is {_render(fb[n].type)}",
                )
            if fa[n].writable and not fb[n].writable:
                acc.add("type.field_readonly", f"type {k} field {n}", "writable", "read-only")
        ma = {m.name: m for m in ta.methods}
        mb = {m.name: m for m in tb.methods}
        for n in sorted(ma.keys() - mb.keys()):
            acc.add("type.method_removed", f"type {k} method {n}", _sig(n, ma[n].type), None)
        for n in sorted(mb.keys() - ma.keys()):
            acc.add("type.method_added", f"type {k} method {n}", None, _sig(n, mb[n].type))
        for n in sorted(ma.keys() & mb.keys()):
            x, y = ma[n].type, mb[n].type
            subject = f"type {k} method {n}"
            typed_x = x is not None and x.params is not None
            typed_y = y is not None and y.params is not None
            if ma[n].is_static != mb[n].is_static or (typed_x and typed_y and x != y):
                acc.add("type.method_type_changed", subject, _sig(n, x), _sig(n, y))
            elif typed_y and not typed_x:
                acc.add("type.method_type_added", subject, _sig(n, x), _sig(n, y))
            elif typed_x and not typed_y:
                acc.add("type.method_type_removed", subject, _sig(n, x), _sig(n, y))


def _kernel_sig(name: str, args: Iterable[str]) -> str:
    return f"{name}({', '.join(args)})"


def _modules(acc: _Acc, old: Iterable[EmbeddedModule], new: Iterable[EmbeddedModule]) -> None:
    a = {m.ident: m for m in old}
    b = {m.ident: m for m in new}
    for i in sorted(a.keys() - b.keys()):
        acc.add(
            "module.removed",
            f"module {i}",
            a[i].kind,
            None,
            f"embedded {a[i].kind} module {i} is gone"
            + (f" with {len(a[i].kernels)} kernel(s)" if a[i].kernels else ""),
        )
    for i in sorted(b.keys() - a.keys()):
        acc.add("module.added", f"module {i}", None, b[i].kind)
    for i in sorted(a.keys() & b.keys()):
        ka = {k.name: k for k in a[i].kernels}
        kb = {k.name: k for k in b[i].kernels}
        for n in sorted(ka.keys() - kb.keys()):
            acc.add(
                "kernel.removed", f"module {i} kernel {n}", _kernel_sig(n, ka[n].arg_types), None
            )
        for n in sorted(kb.keys() - ka.keys()):
            acc.add("kernel.added", f"module {i} kernel {n}", None, _kernel_sig(n, kb[n].arg_types))
        for n in sorted(ka.keys() & kb.keys()):
            if ka[n].arg_types != kb[n].arg_types:
                acc.add(
                    "kernel.args_changed",
                    f"module {i} kernel {n}",
                    _kernel_sig(n, ka[n].arg_types),
                    _kernel_sig(n, kb[n].arg_types),
                )


def _runtime(
    acc: _Acc, old: Api, new: Api, known: Callable[[str], bool] = C_API_NAMES.__contains__
) -> None:
    added = sorted(set(new.runtime_imports) - set(old.runtime_imports))
    for n in added:
        if known(n):
            acc.add("runtime.import_added", f"runtime import {n}", None, n)
        else:
            acc.add(
                "runtime.newer_required",
                f"runtime import {n}",
                None,
                n,
                f"{n} is not one of the {len(C_API_NAMES)} C API functions a runtime of "
                f"OLD's ABI provides",
            )
    for n in sorted(set(new.unsupported_imports) - set(old.unsupported_imports)):
        acc.add("runtime.cxx_imports_added", f"runtime import {n}", None, n)


def _static_view(api: Api) -> Api:
    return replace(
        api, mode="static", globals=(), types=(), exports=tuple(Func(f.name) for f in api.exports)
    )


def compare(old: Api, new: Api) -> DiffResult:
    """All changes from OLD to NEW (pure: no files, no processes)."""
    warnings = []
    if old.mode != new.mode:
        # One side could not be loaded: compare what both have, the static facts.
        old, new = _static_view(old), _static_view(new)
        warnings.append("one library was read statically only; comparing static facts")
    acc = _Acc()
    _funcs(acc, "export", old.exports, new.exports)
    _funcs(acc, "global", old.globals, new.globals)
    _types(acc, old.types, new.types)
    _modules(acc, old.modules, new.modules)
    for n in sorted(set(old.cubins) - set(new.cubins)):
        acc.add("cubin.removed", f"cubin {n}", n, None)
    for n in sorted(set(new.cubins) - set(old.cubins)):
        acc.add("cubin.added", f"cubin {n}", None, n)
    _runtime(acc, old, new)
    mode = "loaded" if old.mode == new.mode == "loaded" else "static"
    if mode == "static":
        warnings.append(
            "compared statically: globals, object types and type schemas need "
            "the loaded view and were not compared"
        )
    for side, api in (("OLD", old), ("NEW", new)):
        warnings += [f"{side}: {p}" for p in api.problems]
    return DiffResult(old.path, new.path, mode, tuple(acc.changes), tuple(warnings))


@dataclass(frozen=True)
class Suppression:
    """One accepted change: a kind pattern and an optional subject pattern
    (shell-style globs, e.g. `export.removed export legacy*`)."""

    kind: str
    subject: str = "*"

    def matches(self, c: Change) -> bool:
        from fnmatch import fnmatchcase

        return fnmatchcase(c.kind, self.kind) and fnmatchcase(c.subject, self.subject)


def parse_suppressions(text: str, where: str = "suppress file") -> tuple[Suppression, ...]:
    """Lines `KIND [SUBJECT]` (globs); blank lines and lines starting with `#`
    are skipped.
    InputError when a kind pattern matches no known kind (a typo)."""
    from fnmatch import fnmatchcase

    from ..errors import InputError

    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):  # subjects may hold '#': no inline comments
            continue
        kind, _, subject = line.partition(" ")
        if not any(fnmatchcase(k, kind) for k in KINDS):
            raise InputError(f"{where}:{n}: {kind!r} matches no change kind")
        out.append(Suppression(kind, subject.strip() or "*"))
    return tuple(out)


def suppress(result: DiffResult, rules: Iterable[Suppression]) -> DiffResult:
    rules = tuple(rules)
    changes = tuple(
        replace(c, suppressed=True) if any(r.matches(c) for r in rules) else c
        for c in result.changes
    )
    return replace(result, changes=changes)


def run(
    old_path: str,
    new_path: str,
    static: bool = False,
    timeout: float = 30.0,
    runtime: str | None = None,
) -> DiffResult:
    """Describe both libraries (the inspect engine) and compare them. Problems
    reading either file raise InputError/FormatError (exit 2); a library that
    fails to load leaves its side static (and says so)."""
    from ..inspect.api import load_api

    old, rep_old = load_api(old_path, static=static, timeout=timeout, runtime=runtime)
    new, rep_new = load_api(new_path, static=static, timeout=timeout, runtime=runtime)
    result = compare(old, new)
    extra = []
    for side, rep in (("OLD", rep_old), ("NEW", rep_new)):
        extra += [f"{side}: {e['message']}" for e in _errors(rep)]
    if extra:
        result = DiffResult(
            result.old_path,
            result.new_path,
            result.mode,
            result.changes,
            result.warnings + tuple(extra),
        )
    return result


def _errors(rep: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    errs = rep.get("errors") or []
    return [e for e in errs if isinstance(e, Mapping) and "message" in e]
