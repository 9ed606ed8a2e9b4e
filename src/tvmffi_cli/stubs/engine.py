"""`tvmffi stubs`: a `.pyi` for a library's exports, registered globals and
object types, typed from their type schemas.

Layout of the stub (deterministic: sorted names, no paths or times):

* a preamble of stand-in classes for the runtime's value kinds (`Object`,
  `Tensor`, `Shape`, `DataType`, `Device`, `Function`, `Module`), so the
  stub is self-contained and checks with `mypy --strict` on its own;
* each export `__tvm_ffi_<name>` as a module-level function;
* each dotted name (globals such as `kitchen.add`, object types such as
  `kitchen.Point`) as nested namespace classes: `kitchen.add` is the static
  method `add` of class `kitchen`, `kitchen.Point` the class `Point` inside it.
  A namespace that has the name of an export is renamed (`_2`, see below).

Names from the library that are not Python identifiers are sanitized (every
other character becomes `_`, a leading digit gets a `_` in front, keywords
and names the stub itself uses get a trailing `_`; clashes get `_2`, `_3`);
each renamed item carries a comment with its real name. Functions without a
type schema take `*args: Any` and return `Any`.

Two kinds of names would change what Python or a type checker reads, so they
are renamed or referred to another way (real compiler libraries have both):

* Python's object model: a name of the form `__x__` belongs to Python (a
  reflected field `__dict__` would override `object.__dict__`), and the
  builtins the annotations use (`int`, `str`, ...) must not be shadowed by a
  member: such names get a trailing `_` (`__dict___`, `int_`). TVM-FFI's own
  dunders (`__ffi_...__`) are kept.
* Namespaces: in a class body a member hides a module-level name of the same
  spelling (inside class `relax`, a namespace `relax.transform` hides the
  top-level `transform`, so `transform.Pass` would not resolve). A top-level
  name that some class also has as a member is referred to through a
  module-level alias, `_root_<name> = <name>`, written at the end of the stub.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from ..abi.symbols import INIT_METHOD
from ..inspect.api import Api, Field, Func, Method, ObjectType, TypeRef

PREAMBLE_CLASSES = ("Object", "Tensor", "Shape", "DataType", "Device", "Function", "Module")
RESERVED = frozenset(PREAMBLE_CLASSES) | {
    "SupportsDLPack",
    "TensorLike",
    "Protocol",
    "Any",
    "Callable",
    "Mapping",
    "Sequence",
    "overload",
    "self",
    "cls",
    # builtins that annotations use: a member of this name would shadow them
    "int",
    "float",
    "str",
    "bool",
    "bytes",
    "tuple",
}
MAX_DOC = 4000  # longer docstrings are cut (text from the library)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# schema key (after the parser's short name) -> annotation
_SIMPLE = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "None": "None",
    "Any": "Any",
    "str": "str",
    "bytes": "bytes",
    "Tensor": "Tensor",
    "DLTensor*": "Tensor",
    "Shape": "Shape",
    "dtype": "DataType",
    "Device": "Device",
    "Object": "Object",
    "Module": "Module",
    "Error": "Object",
    "BigInt": "int",
    "void*": "int | None",
}


@dataclass(frozen=True)
class StubResult:
    text: str
    exports: int
    globals: int
    types: int
    typed: int  # functions (exports + globals) with a type schema
    untyped: tuple[str, ...]  # names typed as (*args: Any) -> Any
    renamed: tuple[tuple[str, str], ...]  # (name in the library, name in the stub)
    mode: str


def sanitize(name: str, taken: Iterable[str] = ()) -> str:
    """A Python identifier for `name` (see the module docstring)."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name) or "_"
    if s[0].isdigit():
        s = "_" + s
    if keyword.iskeyword(s) or s in RESERVED or _python_dunder(s):
        s += "_"
    base, n, used = s, 2, set(taken)
    while s in used:
        s = f"{base}_{n}"
        n += 1
    return s


def _python_dunder(name: str) -> bool:
    """`__x__` names are Python's (its data model); TVM-FFI's `__ffi_*__` are not."""
    return len(name) > 4 and name[:2] == name[-2:] == "__" and not name.startswith("__ffi_")


def _doc_lines(doc: str | None, indent: str) -> list[str]:
    if not doc:
        return []
    text = "".join(c if c in "\n\t" or c.isprintable() else "\ufffd" for c in doc[:MAX_DOC]).strip()
    if not text:
        return []
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    lines = text.split("\n")
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return (
        [f'{indent}"""{lines[0]}']
        + [f"{indent}{ln}".rstrip() for ln in lines[1:]]
        + [f'{indent}"""']
    )


class _Writer:
    def __init__(self, api: Api) -> None:
        self.api = api
        # registered type key -> dotted Python path in the stub
        self.type_paths: dict[str, str] = {}
        self.renamed: list[tuple[str, str]] = []
        self.untyped: list[str] = []
        self.typed = 0
        # top-level names hidden in some class body -> their module-level alias
        self.aliases: dict[str, str] = {}

    def ref(self, path: str) -> str:
        """`path` (a dotted stub path, or a top-level class) as written where a
        class member may hide its first component: in namespace `diagnostics`
        a static method `Diagnostic` hides the top-level class `Diagnostic`."""
        head, dot, rest = path.partition(".")
        alias = self.aliases.get(head)
        return f"{alias}{dot}{rest}" if alias is not None else path

    # -- annotations ------------------------------------------------------
    def ann(self, t: TypeRef | None, depth: int = 0) -> str:
        if t is None or depth > 32:
            return "Any"
        if t.params is not None:
            return self.callable_ann(t, depth)
        k = t.short
        a = t.args
        if k in _SIMPLE:
            return _SIMPLE[k]
        if k in ("Array", "List"):
            return f"Sequence[{self.ann(a[0], depth + 1) if a else 'Any'}]"
        if k in ("Map", "Dict"):
            if len(a) == 2:
                return f"Mapping[{self.ann(a[0], depth + 1)}, {self.ann(a[1], depth + 1)}]"
            return "Mapping[Any, Any]"
        if k == "Optional":
            inner = self.ann(a[0], depth + 1) if a else "Any"
            return (
                inner if inner in ("Any", "None") or inner.endswith("| None") else f"{inner} | None"
            )
        if k == "Variant":
            parts: list[str] = []
            for x in a:
                s = self.ann(x, depth + 1)
                if s not in parts:
                    parts.append(s)
            return "Any" if not parts or "Any" in parts else " | ".join(parts)
        if k == "Tuple":
            return (
                f"tuple[{', '.join(self.ann(x, depth + 1) for x in a)}]" if a else "tuple[Any, ...]"
            )
        if k == "Function":
            return "Function"
        if k in ("Expected", "ObjectRValueRef", "UnchangedOr"):
            return self.ann(a[0], depth + 1) if a else "Any"
        if t.key in self.type_paths:
            return self.ref(self.type_paths[t.key])
        return "Object" if "." in t.key else "Any"

    def callable_ann(self, t: TypeRef, depth: int) -> str:
        ps = ", ".join(self.ann(p, depth + 1) for p in t.params or ())
        return f"Callable[[{ps}], {self.ann(t.ret, depth + 1)}]"

    # -- functions --------------------------------------------------------
    def signature(self, f: Func | Method, skip_self: bool = False) -> tuple[str, str] | None:
        t = f.type
        if t is None or t.params is None:
            return None
        params = list(t.params)
        names = list(f.arg_names) if isinstance(f, Func) else []
        if skip_self and params:
            params = params[1:]
            names = names[1:] if len(names) == len(t.params) else names
        if len(names) != len(params):
            names = []
        taken: list[str] = []
        out = []
        for i, p in enumerate(params):
            n = sanitize(names[i] if names else f"arg{i}", taken)
            taken.append(n)
            ann = self.ann(p)
            # A tensor parameter takes whatever exports DLPack (NumPy arrays...).
            out.append(f"{n}: {'TensorLike' if ann == 'Tensor' else ann}")
        if out:
            out.append("/")
        return ", ".join(out), self.ann(t.ret) if t.ret is not None else "Any"

    def func_lines(self, f: Func, pyname: str, indent: str, static: bool, qual: str) -> list[str]:
        sig = self.signature(f)
        lines = [f"{indent}@staticmethod"] if static else []
        if sig is None:
            self.untyped.append(qual)
            head = f"{indent}def {pyname}(*args: Any) -> Any:"
        else:
            self.typed += 1
            head = f"{indent}def {pyname}({sig[0]}) -> {sig[1]}:"
        doc = _doc_lines(f.doc, indent + "    ")
        if pyname != f.name.rsplit(".", 1)[-1]:
            lines.append(f"{indent}# {qual!r} in the library")
        return lines + ([head] + doc + [f"{indent}    ..."] if doc else [head + " ..."])

    # -- object types -----------------------------------------------------
    def field_lines(self, f: Field, indent: str, taken: list[str]) -> list[str]:
        n = sanitize(f.name, taken)
        taken.append(n)
        note = [f"{indent}# field {f.name!r}"] if n != f.name else []
        doc = _doc_lines(f.doc, indent + "    ")
        if f.writable and not doc:
            return note + [f"{indent}{n}: {self.ann(f.type)}"]
        head = f"{indent}def {n}(self) -> {self.ann(f.type)}:"
        decorators = [f"{indent}@property"]
        body = [head] + doc + [f"{indent}    ..."] if doc else [head + " ..."]
        setter: list[str] = []
        if f.writable:
            setter = [
                f"{indent}@{n}.setter",
                f"{indent}def {n}(self, value: {self.ann(f.type)}, /) -> None: ...",
            ]
        return note + decorators + body + setter

    def method_lines(self, m: Method, indent: str, taken: list[str], qual: str) -> list[str]:
        if m.name == INIT_METHOD and m.is_static:
            return self.init_lines(m, indent, taken, qual)
        n = sanitize(m.name, taken)
        taken.append(n)
        note = [f"{indent}# method {m.name!r}"] if n != m.name else []
        sig = self.signature(m, skip_self=not m.is_static)
        if sig is None:
            self.untyped.append(qual)
            args, ret = ("*args: Any" if m.is_static else "self, *args: Any"), "Any"
        else:
            self.typed += 1
            args = sig[0] if m.is_static else ("self, " + sig[0] if sig[0] else "self")
            ret = sig[1]
        deco = [f"{indent}@staticmethod"] if m.is_static else []
        head = f"{indent}def {n}({args}) -> {ret}:"
        doc = _doc_lines(m.doc, indent + "    ")
        return note + deco + ([head] + doc + [f"{indent}    ..."] if doc else [head + " ..."])

    def init_lines(self, m: Method, indent: str, taken: list[str], qual: str) -> list[str]:
        """The constructor (a static `__ffi_init__` returning the object) as `__init__`."""
        taken.append("__init__")
        sig = self.signature(m)
        if sig is None:
            self.untyped.append(qual)
            args = "self, *args: Any"
        else:
            self.typed += 1
            args = "self, " + sig[0] if sig[0] else "self"
        head = f"{indent}def __init__({args}) -> None:"
        doc = _doc_lines(m.doc, indent + "    ")
        return [head] + doc + [f"{indent}    ..."] if doc else [head + " ..."]

    def class_lines(self, o: ObjectType, pyname: str, indent: str) -> list[str]:
        parent = self.ref(self.type_paths.get(o.parent or "", "Object"))
        out = [f"{indent}class {pyname}({parent}):"]
        if pyname != o.key.rsplit(".", 1)[-1]:
            out.insert(0, f"{indent}# type {o.key!r} in the library")
        inner = indent + "    "
        body = _doc_lines(o.doc or f"Object type {o.key}.", inner)
        taken: list[str] = []
        for f in o.fields:
            body += self.field_lines(f, inner, taken)
        for m in sorted(o.methods, key=lambda m: m.name):
            body += self.method_lines(m, inner, taken, f"{o.key}.{m.name}")
        return out + body


@dataclass
class _Node:
    """A namespace class being built from dotted names."""

    children: dict[str, _Node] = field(default_factory=dict)
    funcs: list[Func] = field(default_factory=list)
    types: list[ObjectType] = field(default_factory=list)


def _tree(api: Api) -> _Node:
    root = _Node()
    for g in api.globals:
        parts = g.name.split(".")
        node = root
        for p in parts[:-1]:
            node = node.children.setdefault(p, _Node())
        node.funcs.append(g)
    for o in api.types:
        parts = o.key.split(".")
        node = root
        for p in parts[:-1]:
            node = node.children.setdefault(p, _Node())
        node.types.append(o)
    return root


def _assign_paths(
    w: _Writer, node: _Node, prefix: str, taken: list[str], names: dict[int, dict[str, str]]
) -> None:
    """Python names for every namespace/type/global under `node` (types first,
    so annotations can refer to them wherever they are)."""
    mine: dict[str, str] = {}
    for o in sorted(node.types, key=lambda o: o.key):
        last = o.key.rsplit(".", 1)[-1]
        n = sanitize(last, taken)
        taken.append(n)
        mine["type:" + o.key] = n
        w.type_paths[o.key] = f"{prefix}{n}"
        if n != last:
            w.renamed.append((o.key, f"{prefix}{n}"))
    for key in sorted(node.children):
        n = sanitize(key, taken)
        taken.append(n)
        mine["ns:" + key] = n
        if n != key:
            w.renamed.append((key, f"{prefix}{n}"))
        _assign_paths(w, node.children[key], f"{prefix}{n}.", [], names)
    for g in sorted(node.funcs, key=lambda g: g.name):
        last = g.name.rsplit(".", 1)[-1]
        n = sanitize(last, taken)
        taken.append(n)
        mine["func:" + g.name] = n
        if n != last:
            w.renamed.append((g.name, f"{prefix}{n}"))
    names[id(node)] = mine


def _member_names(api: Api, root: _Node, names: dict[int, dict[str, str]]) -> set[str]:
    """Every name a class body of the stub defines (namespace members, fields,
    methods), as sanitized; a top-level name among them is hidden there."""
    out: set[str] = set()
    stack = list(root.children.values())
    while stack:
        node = stack.pop()
        out.update(names[id(node)].values())
        stack.extend(node.children.values())
    for o in api.types:
        out.update(sanitize(f.name) for f in o.fields)
        out.update(sanitize(m.name) for m in o.methods)
    return out


def _emit_node(w: _Writer, node: _Node, indent: str, names: dict[int, dict[str, str]]) -> list[str]:
    mine = names[id(node)]
    out: list[str] = []
    for o in sorted(node.types, key=lambda o: o.key):
        out += [""] + w.class_lines(o, mine["type:" + o.key], indent)
    for key in sorted(node.children):
        n = mine["ns:" + key]
        out += ["", f"{indent}class {n}:"]
        out += _doc_lines(f"Namespace {key!r} of registered names.", indent + "    ")
        out += _emit_node(w, node.children[key], indent + "    ", names)
    for g in sorted(node.funcs, key=lambda g: g.name):
        out += w.func_lines(g, mine["func:" + g.name], indent, static=bool(indent), qual=g.name)
    return out


PREAMBLE = '''
class Object:
    """A TVM-FFI object (ffi.Object); registered object types derive from it."""

class SupportsDLPack(Protocol):
    """Anything that exports DLPack: NumPy arrays, PyTorch, JAX, CuPy tensors."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> Any: ...

class Tensor(Object):
    """An ffi.Tensor (a DLPack tensor); DLTensor* parameters take one too."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

TensorLike = Tensor | SupportsDLPack

class Shape(Object, Sequence[int]):
    """An ffi.Shape: a sequence of int."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int, /) -> int: ...
    @overload
    def __getitem__(self, index: slice, /) -> Shape: ...

class DataType:
    """A dtype (DLDataType), e.g. float32."""

class Device:
    """A device (DLDevice), e.g. cuda:0."""

class Function(Object):
    """An ffi.Function."""

    def __call__(self, *args: Any) -> Any: ...

class Module(Object):
    """An ffi.Module."""
'''


def render(api: Api, source_name: str) -> StubResult:
    """The stub text for `api` (source_name: what the header says it was made from)."""
    w = _Writer(api)
    root = _tree(api)
    names: dict[int, dict[str, str]] = {}
    export_names: list[str] = []
    export_py: dict[str, str] = {}
    for f in api.exports:
        n = sanitize(f.name, export_names)
        export_names.append(n)
        export_py[f.name] = n
        if n != f.name:
            w.renamed.append((f.name, n))
    _assign_paths(w, root, "", list(export_names), names)
    top = {v for v in names[id(root)].values() if not v.startswith("_")}
    hidden = sorted(top & _member_names(api, root, names))
    taken_top = set(names[id(root)].values()) | set(export_names)
    for n in hidden:
        w.aliases[n] = sanitize(f"_root_{n}", taken_top)
        taken_top.add(w.aliases[n])
    body = _emit_node(w, root, "", names)
    funcs: list[str] = []
    for f in api.exports:
        funcs += w.func_lines(f, export_py[f.name], "", static=False, qual=f.name)
    safe_src = re.sub(r"[^\w.+-]", "_", source_name)
    head = [
        f'"""Type stubs of {safe_src}: its exports, registered globals and object types.',
        "",
        "Generated by `tvmffi stubs`; do not edit.",
        '"""',
        "",
        "from collections.abc import Callable, Mapping, Sequence",
        "from typing import Any, Protocol, overload",
        "",
    ]
    text_lines = head + PREAMBLE.strip("\n").split("\n") + body
    if funcs:
        text_lines += ["", "# Exports (__tvm_ffi_<name>)"] + funcs
    if w.aliases:
        text_lines += ["", "# Top-level names a class member hides where they are used"]
        text_lines += [f"{a} = {n}" for n, a in sorted(w.aliases.items())]
    text = "\n".join(text_lines).rstrip("\n") + "\n"
    return StubResult(
        text=text,
        exports=len(api.exports),
        globals=len(api.globals),
        types=len(api.types),
        typed=w.typed,
        untyped=tuple(w.untyped),
        renamed=tuple(w.renamed),
        mode=api.mode,
    )


def generate(
    path: str, static: bool = False, timeout: float = 30.0, runtime: str | None = None
) -> StubResult:
    """Stub of the library at `path`; `static` reads the file only (exports,
    untyped), otherwise the library is loaded in a child process for types
    (CheckFailed, exit 1, when that fails)."""
    from ..errors import CheckFailed
    from ..inspect.api import load_api, load_failure

    api, rep = load_api(path, static=static, timeout=timeout, runtime=runtime)
    failed = load_failure(rep)
    if failed is not None:
        raise CheckFailed(f"{path}: {failed}; --static writes an untyped stub from the file")
    return render(api, PurePath(path).name)


@dataclass(frozen=True)
class CheckResult:
    path: str
    up_to_date: bool
    reason: str  # "" when up to date, else "differs" | "missing"
    diff: str  # unified diff, existing -> expected


def check(result: StubResult, path: str) -> CheckResult:
    """Compare an existing stub file with what `result` would write."""
    import difflib
    import os

    if os.path.isdir(path):
        from ..errors import InputError

        raise InputError(f"{path}: is a directory")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            old = fh.read()
    except FileNotFoundError:
        return CheckResult(path, False, "missing", "")
    except (OSError, UnicodeDecodeError) as e:
        from ..errors import InputError

        raise InputError(f"{path}: cannot read ({e})") from None
    if old == result.text:
        return CheckResult(path, True, "", "")
    d = "".join(
        difflib.unified_diff(
            old.splitlines(True), result.text.splitlines(True), fromfile=path, tofile="expected"
        )
    )
    return CheckResult(path, False, "differs", d)


def write(result: StubResult, path: str) -> None:
    """Write the stub atomically (temp file + rename in the same directory)."""
    import os
    import tempfile

    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tvmffi-stub-", suffix=".pyi", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(result.text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def summary(result: StubResult) -> dict[str, Any]:  # stubs --json (a JSON boundary)
    return {
        "exports": result.exports,
        "globals": result.globals,
        "types": result.types,
        "typed": result.typed,
        "untyped": list(result.untyped),
        "renamed": [list(r) for r in result.renamed],
        "mode": result.mode,
    }
