"""The comparisons of `tvmffi diff`, one family each (pure: no files, no
processes): exports and globals, object types through their hierarchy,
embedded modules and kernels, runtime imports and the runtime range."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..abi.capi import C_API_NAMES
from ..abi.symbols import GENERATED_METHODS
from ..abi.versions import KNOWN_RELEASES, releases_text
from ..inspect.api import Api, EmbeddedModule, Func, Members, ObjectType, TypeRef, members
from ..inspect.ranges import FAILS, LOADS, Coverage
from .kinds import KINDS, Change, SideRange


class Acc:
    def __init__(self) -> None:
        self.changes: list[Change] = []

    def add(
        self, kind: str, subject: str, old: str | None, new: str | None, detail: str = ""
    ) -> None:
        ok, meaning = KINDS[kind]
        self.changes.append(Change(kind, subject, old, new, ok, detail or meaning))


def same(a: TypeRef | None, b: TypeRef | None) -> bool:
    """The same type for a caller: compared as rendered, so spellings of one
    ABI type (std::string and ffi.String are both `str`, std::vector and
    ffi.Array both `Array`) are equal."""
    if a is None or b is None:
        return a is b
    return a.render() == b.render()


def sig(name: str, t: TypeRef | None) -> str:
    if t is None or t.params is None:
        return f"{name}(...)"
    r = t.ret.render() if t.ret is not None else "Any"
    return f"{name}({', '.join(p.render() for p in t.params)}) -> {r}"


def _compare_func_types(
    acc: Acc, family: str, name: str, old: TypeRef | None, new: TypeRef | None
) -> None:
    subject = f"{family} {name}"
    # Gaining or losing a signature changes what can be checked, not what a
    # caller may pass: compatible, the same for exports, globals and methods.
    if old is None or old.params is None:
        if new is not None and new.params is not None:
            acc.add(f"{family}.type_added", subject, sig(name, old), sig(name, new))
        return
    if new is None or new.params is None:
        acc.add(f"{family}.type_removed", subject, sig(name, old), sig(name, new))
        return
    if len(old.params) != len(new.params):
        acc.add(
            f"{family}.param_count_changed",
            subject,
            sig(name, old),
            sig(name, new),
            f"{len(old.params)} parameter(s) before, {len(new.params)} now",
        )
        return
    for i, (a, b) in enumerate(zip(old.params, new.params)):
        if not same(a, b):
            acc.add(
                f"{family}.param_type_changed",
                f"{subject} parameter {i}",
                a.render(),
                b.render(),
                f"parameter {i} of {name} was {a.render()}, is {b.render()}",
            )
    ra = old.ret.render() if old.ret is not None else "Any"
    rb = new.ret.render() if new.ret is not None else "Any"
    if not same(old.ret, new.ret):
        acc.add(
            f"{family}.result_type_changed",
            f"{subject} result",
            ra,
            rb,
            f"{name} returned {ra}, returns {rb}",
        )


def funcs(acc: Acc, family: str, old: Iterable[Func], new: Iterable[Func]) -> None:
    a = {f.name: f for f in old}
    b = {f.name: f for f in new}
    for n in sorted(a.keys() - b.keys()):
        acc.add(f"{family}.removed", f"{family} {n}", sig(n, a[n].type), None)
    for n in sorted(b.keys() - a.keys()):
        acc.add(f"{family}.added", f"{family} {n}", None, sig(n, b[n].type))
    for n in sorted(a.keys() & b.keys()):
        _compare_func_types(acc, family, n, a[n].type, b[n].type)
        if family == "export" and (a[n].doc or None) != (b[n].doc or None):
            acc.add("export.doc_changed", f"export {n} doc", a[n].doc, b[n].doc)


def _render(t: TypeRef | None) -> str:
    return "Any" if t is None else t.render()


def types(acc: Acc, old: Iterable[ObjectType], new: Iterable[ObjectType]) -> None:
    """Object types, each with the members a caller can use on it: its own and
    its ancestors' (inspect.api.members). A member a type inherits in OLD
    through a parent both sides have is left to that parent's rows: one row
    per member, on the first type that has it, not one per subtype."""
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
        ma, mb = members(a, k), members(b, k)

        def elsewhere(what: str, name: str, ma: Members = ma, ta: ObjectType = ta) -> bool:
            """Inherited in OLD through a parent both sides have: judged there
            (or further up), once."""
            inherited = f"{what} {name}" in ma.inherited_from
            return inherited and ta.parent is not None and ta.parent in a and ta.parent in b

        fa, fb = ma.fields, mb.fields
        for n in sorted(fa.keys() - fb.keys()):
            if not elsewhere("field", n):
                acc.add("type.field_removed", f"type {k} field {n}", _render(fa[n].type), None)
        for n in sorted(fb.keys() - fa.keys()):
            if f"field {n}" not in mb.inherited_from:
                acc.add("type.field_added", f"type {k} field {n}", None, _render(fb[n].type))
        for n in sorted(fa.keys() & fb.keys()):
            if elsewhere("field", n):
                continue
            if not same(fa[n].type, fb[n].type):
                acc.add(
                    "type.field_type_changed",
                    f"type {k} field {n}",
                    _render(fa[n].type),
                    _render(fb[n].type),
                    f"{k}.{n} was {_render(fa[n].type)}, is {_render(fb[n].type)}",
                )
            if fa[n].writable and not fb[n].writable:
                acc.add("type.field_readonly", f"type {k} field {n}", "writable", "read-only")
        _methods(acc, k, ma, mb, elsewhere)


def _methods(
    acc: Acc, k: str, ma: Members, mb: Members, elsewhere: Callable[[str, str], bool]
) -> None:
    xa, xb = ma.methods, mb.methods
    for n in sorted(xa.keys() - xb.keys()):
        if elsewhere("method", n):
            continue
        subject = f"type {k} method {n}"
        if n in GENERATED_METHODS:
            kept = " (NEW has it as a type attribute)" if n in mb.attrs else ""
            acc.add(
                "type.generated_method_removed",
                subject,
                sig(n, xa[n].type),
                f"type attribute {n}" if n in mb.attrs else None,
                f"{n} is generated by the headers for every type, not written by the "
                f"library; it is no longer in {k}'s method table{kept}",
            )
        elif n in mb.attrs:
            acc.add(
                "type.method_now_attr",
                subject,
                sig(n, xa[n].type),
                f"type attribute {n}",
                f"{k}.{n} is no longer a method but a type attribute of the same name "
                "(registered by the headers): callers still reach it",
            )
        else:
            acc.add("type.method_removed", subject, sig(n, xa[n].type), None)
    for n in sorted(xb.keys() - xa.keys()):
        if f"method {n}" in mb.inherited_from:
            continue
        kind = "type.generated_method_added" if n in GENERATED_METHODS else "type.method_added"
        acc.add(kind, f"type {k} method {n}", None, sig(n, xb[n].type))
    for n in sorted(xa.keys() & xb.keys()):
        if elsewhere("method", n):
            continue
        x, y = xa[n].type, xb[n].type
        subject = f"type {k} method {n}"
        typed_x = x is not None and x.params is not None
        typed_y = y is not None and y.params is not None
        if xa[n].is_static != xb[n].is_static or (typed_x and typed_y and not same(x, y)):
            acc.add("type.method_type_changed", subject, sig(n, x), sig(n, y))
        elif typed_y and not typed_x:
            acc.add("type.method_type_added", subject, sig(n, x), sig(n, y))
        elif typed_x and not typed_y:
            acc.add("type.method_type_removed", subject, sig(n, x), sig(n, y))


def _kernel_sig(name: str, args: Iterable[str]) -> str:
    return f"{name}({', '.join(args)})"


def modules(acc: Acc, old: Iterable[EmbeddedModule], new: Iterable[EmbeddedModule]) -> None:
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


def cubins(acc: Acc, old: Api, new: Api) -> None:
    for n in sorted(set(old.cubins) - set(new.cubins)):
        acc.add("cubin.removed", f"cubin {n}", n, None)
    for n in sorted(set(new.cubins) - set(old.cubins)):
        acc.add("cubin.added", f"cubin {n}", None, n)


def runtime(
    acc: Acc, old: Api, new: Api, known: Callable[[str], bool] = C_API_NAMES.__contains__
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


def _by(basis: str) -> str:
    return f"by {basis}"


def _basis(runs: Iterable[str], loaded: set[str]) -> str:
    """ "loading" when every release was loaded, "symbols" when none was."""
    runs = set(runs)
    if not runs & loaded:
        return "symbols"
    return "loading" if runs <= loaded else "loading and symbols"


def releases(
    acc: Acc, old: Api, new: Api, cov: Coverage | None = None
) -> tuple[SideRange, SideRange]:
    """NEW must run wherever OLD runs. Without `cov`, by symbols: every
    release of OLD's range (its exports, less the releases auto saw fail) must
    be in NEW's. With it (inspect/ranges.py cover: NEW loaded on each release
    of OLD's range, OLD where NEW failed), by loading: a release where OLD
    loads and NEW does not is dropped. Returns both sides' ranges."""
    order = {r: i for i, r in enumerate(KNOWN_RELEASES)}
    why = dict(new.range_failures)
    if cov is None or cov.same_file:
        ra, rb = list(old.runtime_releases), list(new.runtime_releases)
        sides = (SideRange(tuple(ra), old.range_basis), SideRange(tuple(rb), new.range_basis))
        dropped = [r for r in ra if r not in set(rb)]
    else:
        mine = {c.release for c in cov.rows}
        ra = [c.release for c in cov.rows if c.old != FAILS]
        rb = [c.release for c in cov.rows if c.new == LOADS]
        rb += [r for r in new.runtime_releases if r not in mine]
        rb.sort(key=lambda r: order.get(r, -1))
        sides = (
            SideRange(tuple(ra), _basis(ra, {c.release for c in cov.rows if c.old == LOADS})),
            SideRange(tuple(rb), _basis(rb, {c.release for c in cov.rows if c.new == LOADS})),
        )
        dropped = list(cov.releases("dropped"))
        why = {c.release: c.new_message for c in cov.rows if c.new == FAILS}
    gained = [r for r in rb if r not in set(ra)]
    old_text = f"{releases_text(ra)} ({_by(sides[0].basis)})"
    new_text = f"{releases_text(rb)} ({_by(sides[1].basis)})"
    if dropped:
        first = next((r for r in dropped if why.get(r)), None)
        acc.add(
            "runtime.releases_dropped",
            "runtime range",
            old_text,
            new_text,
            f"NEW does not run on {releases_text(dropped)}, where OLD runs"
            + (f" (on {first}: {why[first]})" if first else ""),
        )
    if gained:
        acc.add(
            "runtime.releases_added",
            "runtime range",
            old_text,
            new_text,
            f"NEW also runs on {releases_text(gained)}",
        )
    return sides
