"""People-facing output of `tvmffi inspect`: a rich tree with tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import text
from ..abi.symbols import LIBRARY_CTX
from .common import human_size, make_console

if TYPE_CHECKING:
    from rich.console import Console
    from rich.tree import Tree

    from ..inspect.ranges import RangeCheckJson
    from ..inspect.report import Function, Report


def _short_doc(doc: str | None, n: int = 70) -> str:
    if not doc:
        return ""
    line = doc.strip().splitlines()[0] if doc.strip() else ""
    return line if len(line) <= n else line[: n - 1] + "…"


#: The narrowest doc column the functions table is drawn with; narrower, each
#: function is a line of its own (signature, wrapped at its commas) with its
#: doc under it, so neither is cut.
DOC_MIN = 24
_TABLE_INDENT = 4  # the tree's guide in front of the table


def build(rep: Report, width: int | None = None) -> Tree:
    from rich.markup import escape as markup_escape

    def escape(s: str) -> str:
        # Names, kinds, messages: one line each, inert (newlines shown as \n).
        return markup_escape(text.one_line(s))

    from rich.table import Table
    from rich.tree import Tree

    mode = rep["mode"]
    if mode == "loaded" and any(e.get("where") == "load" for e in rep["errors"]):
        # Only the file's bytes were read: say so instead of "(loaded)".
        mode = "load failed: static facts only"
    head = (
        f"[bold]{escape(rep['path'])}[/]  {rep['format'].upper()} {rep['arch']} "
        f"{rep['kind']}  ({mode})"
    )
    tree = Tree(head)
    rt = rep.get("runtime")
    if rt:
        where = rt["path"] if rt["kind"] in ("path", "release") else rt["kind"]
        if rt.get("version") and rt["kind"] in ("path", "release"):
            where += f" (version {rt['version']})"
        node = tree.add(f"runtime: {escape(where)} [dim]({escape(rt['reason'])})[/]")
        if rt.get("missing"):
            node.add("lacks (an older release): " + escape(", ".join(rt["missing"])))
    deps = tree.add("[bold]Needs[/]")
    deps.add("libraries: " + (escape(", ".join(rep["needed"])) if rep["needed"] else "(none)"))
    if rep["runtime_imports"]:
        deps.add(
            f"runtime C functions ({len(rep['runtime_imports'])}): "
            + escape(", ".join(rep["runtime_imports"]))
        )
    elif rep["needs_runtime"]:
        deps.add("runtime: yes")
    else:
        deps.add("runtime C functions: none imported")
    if rep.get("min_runtime_version"):
        why = list(rep.get("min_runtime_reasons") or []) + list(
            rep.get("max_runtime_reasons") or []
        )
        top = rep.get("max_runtime_version")
        if "runtime_releases" in rep and not rep["runtime_releases"]:
            span = "[red]no known apache-tvm-ffi release provides every runtime import[/]"
        else:
            span = f"apache-tvm-ffi runtime >= {rep['min_runtime_version']}" + (
                f", <= {top}" if top else ""
            )
            span += ", by symbols"
        node = deps.add(span + (f" ({escape('; '.join(why))})" if why else ""))
        if rep.get("runtime_range_check"):
            _range_check(node, rep["runtime_range_check"])
    if rep["unsupported_imports"]:
        node = deps.add(
            f"[red]runtime symbols the builtin runtime lacks "
            f"({len(rep['unsupported_imports'])}): only the official runtime can "
            f"host this library[/]"
        )
        for n in rep["unsupported_imports"]:
            node.add(escape(n))

    funcs = rep["functions"]
    fnode = tree.add(f"[bold]Functions[/] ({len(funcs)})")
    rows = [_function_row(f, escape) for f in funcs]
    if rows and _table_fits(rows, width):
        t = Table(show_edge=False, pad_edge=False, box=None)
        t.add_column("name", style="cyan", no_wrap=True)
        t.add_column("signature", no_wrap=True)  # a signature reads only on one line
        t.add_column("doc")
        for row in rows:
            t.add_row(*row)
        fnode.add(t)
    else:
        # Narrow: each function on a line of its own (the signature starts
        # with the name; the tree wraps it at its blanks), its doc under it.
        for f, (fname, fsig, fdoc) in zip(funcs, rows):
            named = (f.get("signature") or "").startswith(f["name"] + "(") and " → " not in fname
            node = fnode.add(fsig if named else f"[cyan]{fname}[/]" + (f"  {fsig}" if fsig else ""))
            if fdoc:
                node.add(f"[dim]{fdoc}[/]")

    lb = rep["library_bin"]
    if lb is not None:  # (modules come from it)
        mnode = tree.add(
            f"[bold]Embedded modules[/] (library_bin {human_size(lb.get('symbol_size'))}"
            f", root {lb.get('root')})"
        )
        for m in rep["modules"]:
            label = f"#{m['index']} {escape(m['kind'])}"
            if m["blob_size"] is not None:
                label += f"  {human_size(m['blob_size'])}"
            if m["imports"]:
                label += f"  imports {m['imports']}"
                if m.get("import_count"):
                    label = label[:-1] + f", ... {m['import_count']:,} in all]"
            node = mnode.add(label)
            d = m.get("details")
            if d is None:
                pass
            elif "format" in d:
                p = d.get("payload") or {}
                line = f"format {escape(d['format'])}, payload {human_size(d.get('payload_size'))}"
                if p.get("type"):
                    line += f" ({p['type']}{', ' + p['arch'] if p.get('arch') else ''})"
                node.add(line)
                for fn in d.get("functions", []):
                    node.add(
                        f"{escape(fn['name'])}({', '.join(fn['arg_types'])})"
                        + (
                            f"  launch: {', '.join(fn['launch_param_tags'])}"
                            if fn.get("launch_param_tags")
                            else ""
                        )
                    )
            elif "preview" in d:
                node.add(f"[dim]{escape(d['preview']['ascii'])}  {d['preview']['hex'][:48]}[/]")
        if lb.get("truncated"):
            rest = lb["module_count"] - lb["modules_listed"]
            kinds = ", ".join(f"{escape(k)} {n:,}" for k, n in lb["kinds"].items())
            mnode.add(
                f"[yellow]... {rest:,} more modules not listed[/] "
                f"({lb['module_count']:,} in all; by kind: {kinds})"
            )

    if rep["cubins"]:
        cnode = tree.add(f"[bold]Embedded CUDA binaries[/] ({len(rep['cubins'])})")
        for c in rep["cubins"]:
            cnode.add(
                f"{escape(c['name'])}  {human_size(c['size'])}  {c.get('type', '?')}"
                + (f" {c['arch']}" if c.get("arch") else "")
            )
    cuda = rep.get("cuda")
    if cuda:
        from .cuda import add_cuda

        add_cuda(tree, cuda, escape)
    if rep["context_symbols"] or rep["library_ctx"]:
        knode = tree.add("[bold]Context symbols[/]")
        if rep["library_ctx"]:
            knode.add(LIBRARY_CTX)
        for ctx in rep["context_symbols"]:
            knode.add(escape(ctx["name"]) + ("" if ctx["known"] else " [yellow](unknown API)[/]"))
    if rep["globals"]:
        gnode = tree.add(f"[bold]Global functions registered on load[/] ({len(rep['globals'])})")
        info = rep.get("global_info") or {}
        for g in rep["globals"]:
            name = g if isinstance(g, str) else str(g.get("name", g))
            sig = _global_signature(name, info.get(name))
            gnode.add(escape(sig) if sig else escape(name))
    if rep["types"]:
        tnode = tree.add(f"[bold]Object types registered on load[/] ({len(rep['types'])})")
        for ty in rep["types"]:
            node = tnode.add(
                f"{escape(str(ty.get('type_key')))}"
                + (f" : {escape(str(ty['parent_type_key']))}" if ty.get("parent_type_key") else "")
            )
            for fld in ty.get("fields") or []:
                node.add("field " + escape(fld if isinstance(fld, str) else str(fld.get("name"))))
            for me in ty.get("methods") or []:
                node.add("method " + escape(me if isinstance(me, str) else str(me.get("name"))))
    for w in rep["warnings"]:
        tree.add(f"[yellow]warning:[/] {escape(w)}")
    if rep["errors"]:
        enode = tree.add(f"[red bold]Problems[/] ({len(rep['errors'])})")
        for e in rep["errors"]:
            at = f" @{e['offset']}" if "offset" in e else ""
            enode.add(f"[red]{escape(e['where'])}{at}:[/] {escape(e['message'])}")
    return tree


def _function_row(f: Function, escape: Any) -> tuple[str, str, str]:
    """(name, signature, doc) of one function, as rich markup."""
    sig = f.get("signature") or ""
    if not sig:
        bits: list[str] = []
        if f.get("has_metadata"):
            bits.append("metadata")
        if f.get("has_doc"):
            bits.append("doc")
        sig = "[dim](" + ", ".join(bits) + " getter" if bits else ""
        sig = sig + (")[/]" if bits else "")
    else:
        sig = escape(sig)
    name = escape(f["name"])
    if f.get("aliases") is not None:
        name += " → " + escape(", ".join(f["aliases"])) if f["aliases"] else ""
    return name, sig, escape(_short_doc(f.get("doc")))


def _table_fits(rows: list[tuple[str, str, str]], width: int | None) -> bool:
    """Do name and signature fit on one line each with a doc column of at
    least DOC_MIN beside them (or with no doc at all)? Columns are two apart."""
    if width is None:
        return True
    from rich.text import Text

    name_w = max(Text.from_markup(n).cell_len for n, _, _ in rows)
    sig_w = max(Text.from_markup(s).cell_len for _, s, _ in rows)
    any_doc = any(d for _, _, d in rows)
    need = _TABLE_INDENT + name_w + 2 + sig_w + (2 + DOC_MIN if any_doc else 0)
    return need <= width


def _global_signature(name: str, info: Any) -> str | None:
    """A typed global's signature from its metadata (GlobalDef().def(...)
    records the type schema), as exports show theirs; None when untyped."""
    from ..abi import typeschema
    from ..errors import FormatError

    md = info.get("metadata") if isinstance(info, dict) else None
    if not md:
        return None
    try:
        _, spec = typeschema.parse_metadata(md)
    except FormatError:
        return None  # the JSON report carries the raw metadata; the tree stays readable
    return None if spec is None else spec.signature(name)


def render(rep: Report, console: Console | None = None) -> None:
    console = console or make_console()
    console.print(build(rep, console.width))


def _range_check(node: Any, check: RangeCheckJson) -> None:
    """What loading the library on each release of its range showed."""
    from rich.markup import escape

    from ..abi.versions import releases_text

    loads = check.get("loads") or []
    ok = [x["release"] for x in loads if x["status"] == "loads"]
    bad = [x for x in loads if x["status"] == "fails"]
    skipped = [x for x in loads if x["status"] == "not-checked"]
    sub = node.add(
        f"by loading: runs on {escape(releases_text(check.get('runs_on') or []))}"
        + (f" (loaded on {escape(releases_text(ok))})" if skipped else "")
    )
    for x in bad:
        sub.add(f"[red]fails on {escape(x['release'])}[/]: {escape(x['message'])}")
    if skipped:
        sub.add(
            "not loaded (runtime not at hand): " + escape(", ".join(x["release"] for x in skipped))
        )
