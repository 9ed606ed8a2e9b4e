"""Function type schemas: parse the `type_schema` JSON a library's metadata
getter returns into a small type tree, and render readable signatures such as
`mul3(int, int, int) -> int` or `scale(float, Optional[float]) -> float`.

Schema shape (one node): {"type": "<key>", "args": [node...]} and, for
functions, {"type": "ffi.Function", "named_args": {"return": [node],
"params": [node...]}}. Keys are the runtime's static type keys (int, float,
bool, None, Any, ffi.String, ffi.Tensor, DLTensor*, ffi.Array, ffi.Map,
Optional, Variant, ...) or a registered object type key.

`TypeSpec` is also the hook for the `call` command: `convert_literal(spec,
value)` checks and converts a JSON/CLI value against a parsed type.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

from ..errors import FormatError, InputError

_Specs = tuple["TypeSpec", ...]  # the params of a function type (never None there)

MAX_DEPTH = 64  # deeper than any real signature; bounds recursion on hostile input

# static type key -> short name shown to people
SHORT: dict[str, str] = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "None": "None",
    "Any": "Any",
    "ffi.String": "str",
    "std::string": "str",
    "const char*": "str",
    "ffi.SmallStr": "str",
    "ffi.Bytes": "bytes",
    "TVMFFIByteArray*": "bytes",
    "ffi.SmallBytes": "bytes",
    "ffi.Tensor": "Tensor",
    "DLTensor*": "DLTensor*",
    "ffi.Shape": "Shape",
    "ffi.Array": "Array",
    "std::vector": "Array",
    "std::array": "Array",
    "ffi.List": "List",
    "ffi.Map": "Map",
    "std::map": "Map",
    "std::unordered_map": "Map",
    "ffi.Dict": "Dict",
    "Optional": "Optional",
    "std::optional": "Optional",
    "Variant": "Variant",
    "std::variant": "Variant",
    "Tuple": "Tuple",
    "std::tuple": "Tuple",
    "ffi.Function": "Function",
    "std::function": "Function",
    "DataType": "dtype",
    "Device": "Device",
    "void*": "void*",
    "ffi.Object": "Object",
    "ffi.Module": "Module",
    "ffi.Error": "Error",
    "ffi.BigInt": "BigInt",
    "Expected": "Expected",
    "ObjectRValueRef": "ObjectRValueRef",
    "UnchangedOr": "UnchangedOr",
}


class TypeSpec:
    """One node of a type tree: `.key` is the schema's type key, `.name` its
    short name, `.args` the type arguments; functions also have `.params`
    and `.ret`."""

    __slots__ = ("key", "name", "args", "params", "ret")

    key: str
    name: str
    args: tuple[TypeSpec, ...]
    params: tuple[TypeSpec, ...] | None
    ret: TypeSpec | None

    def __init__(
        self,
        key: str,
        args: Iterable[TypeSpec] = (),
        params: Iterable[TypeSpec] | None = None,
        ret: TypeSpec | None = None,
    ) -> None:
        self.key = key
        self.name = SHORT.get(key, key)
        self.args = tuple(args)
        self.params = None if params is None else tuple(params)
        self.ret = ret

    @property
    def is_function(self) -> bool:
        return self.params is not None

    def render(self) -> str:
        if self.is_function:
            ps = ", ".join(p.render() for p in cast(_Specs, self.params))
            r = self.ret.render() if self.ret is not None else "Any"
            return f"Callable[[{ps}], {r}]"
        if self.args:
            return f"{self.name}[{', '.join(a.render() for a in self.args)}]"
        return self.name

    def signature(self, name: str) -> str:
        """`name(p1, p2) -> ret` for a function type."""
        if not self.is_function:
            raise FormatError(f"type schema of {name} is {self.render()}, not a function")
        ps = ", ".join(p.render() for p in cast(_Specs, self.params))
        r = self.ret.render() if self.ret is not None else "Any"
        return f"{name}({ps}) -> {r}"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.key}
        if self.args:
            d["args"] = [a.to_json() for a in self.args]
        if self.is_function:
            d["params"] = [p.to_json() for p in cast(_Specs, self.params)]
            d["return"] = self.ret.to_json() if self.ret is not None else None
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeSpec) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True))

    def __repr__(self) -> str:
        return f"TypeSpec({self.render()})"


def _node(obj: object, depth: int) -> TypeSpec:
    if depth > MAX_DEPTH:
        raise FormatError(f"type schema nests deeper than {MAX_DEPTH} levels")
    if not isinstance(obj, dict):
        raise FormatError(f"type schema node must be an object, got {type(obj).__name__}")
    key = obj.get("type")
    if not isinstance(key, str) or not key:
        raise FormatError('type schema node has no "type" string')
    args = obj.get("args", [])
    if not isinstance(args, list):
        raise FormatError(f'"args" of {key} must be a list')
    sub = [_node(a, depth + 1) for a in args]
    named = obj.get("named_args")
    if named is None:
        return TypeSpec(key, sub)
    if not isinstance(named, dict):
        raise FormatError(f'"named_args" of {key} must be an object')
    ret = named.get("return", [])
    params = named.get("params", [])
    if not isinstance(ret, list) or len(ret) > 1:
        raise FormatError(f'"return" of {key} must be a list of at most one type')
    if not isinstance(params, list):
        raise FormatError(f'"params" of {key} must be a list')
    return TypeSpec(
        key, sub, [_node(p, depth + 1) for p in params], _node(ret[0], depth + 1) if ret else None
    )


def parse_type(schema: object) -> TypeSpec:
    """Parse a type schema given as a JSON string or an already decoded object."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except (ValueError, RecursionError) as e:
            raise FormatError(f"type schema is not valid JSON ({str(e)[:80]})") from None
    return _node(schema, 0)


def parse_metadata(metadata: object) -> tuple[dict[str, Any], TypeSpec | None]:
    """Parse a metadata getter's result: a JSON object holding "type_schema"
    (itself JSON in a string, or an object). Returns (metadata dict, TypeSpec
    or None when there is no type_schema)."""
    if isinstance(metadata, (str, bytes)):
        try:
            metadata = json.loads(metadata)
        except (ValueError, RecursionError) as e:
            raise FormatError(f"function metadata is not valid JSON ({str(e)[:80]})") from None
    if not isinstance(metadata, dict):
        raise FormatError("function metadata must be a JSON object")
    ts = metadata.get("type_schema")
    if ts is None:
        return metadata, None
    return metadata, parse_type(ts)


def signature(name: str, metadata: object) -> str | None:
    """Readable signature of function `name` from its metadata (str or dict), or
    None when the metadata has no type schema."""
    _md, spec = parse_metadata(metadata)
    return None if spec is None else spec.signature(name)


# -- values against types (used by `tvmffi call`) ----------------------------
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def convert_literal(spec: TypeSpec, value: Any, where: str = "value") -> Any:
    """Check and convert a JSON/CLI value (str from the command line, or an
    already decoded JSON value) to what `spec` expects, for the simple and
    container types. Tensors, objects, devices and dtypes are passed through
    for the caller to convert. Raises InputError naming `where`."""
    k = spec.name
    if k == "Any":
        return value
    if k == "Optional":
        if value is None or (isinstance(value, str) and value in ("None", "null")):
            return None
        return convert_literal(spec.args[0], value, where) if spec.args else value
    if k == "None":
        if value is None or value in ("None", "null"):
            return None
        raise InputError(f"{where}: expected None, got {value!r}")
    if k == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
            return value.lower() in _TRUE
        raise InputError(f"{where}: expected bool, got {value!r}")
    if k == "int":
        if isinstance(value, bool):
            raise InputError(f"{where}: expected int, got bool {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value, 0)
            except ValueError:
                pass
        raise InputError(f"{where}: expected int, got {value!r}")
    if k == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise InputError(f"{where}: expected float, got {value!r}")
    if k == "str":
        if isinstance(value, str):
            return value
        raise InputError(f"{where}: expected str, got {value!r}")
    if k == "bytes":
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        if isinstance(value, str):
            try:
                # surrogateescape gives back the bytes of a non-UTF-8 argv word.
                return value.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                raise InputError(
                    f"{where}: {value!r} holds a lone surrogate, not text that encodes to bytes"
                ) from None
        raise InputError(f"{where}: expected bytes, got {value!r}")
    if k in ("Array", "List", "Shape", "Tuple"):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise InputError(f"{where}: expected a JSON list for {spec.render()}") from None
        if not isinstance(value, list):
            raise InputError(f"{where}: expected a list for {spec.render()}, got {value!r}")
        if k == "Shape":
            return [
                convert_literal(TypeSpec("int"), v, f"{where}[{i}]") for i, v in enumerate(value)
            ]
        if k == "Tuple" and spec.args:
            if len(value) != len(spec.args):
                raise InputError(
                    f"{where}: expected {len(spec.args)} items for "
                    f"{spec.render()}, got {len(value)}"
                )
            return [
                convert_literal(a, v, f"{where}[{i}]")
                for i, (a, v) in enumerate(zip(spec.args, value))
            ]
        if spec.args:
            return [convert_literal(spec.args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value
    if k in ("Map", "Dict"):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise InputError(f"{where}: expected a JSON object for {spec.render()}") from None
        if not isinstance(value, dict):
            raise InputError(f"{where}: expected an object for {spec.render()}, got {value!r}")
        if len(spec.args) == 2:
            kt, vt = spec.args
            return {
                convert_literal(kt, kk, f"{where} key"): convert_literal(vt, vv, f"{where}[{kk!r}]")
                for kk, vv in value.items()
            }
        return value
    if k == "Variant":
        for a in spec.args:
            try:
                return convert_literal(a, value, where)
            except InputError:
                continue
        raise InputError(f"{where}: {value!r} matches none of {spec.render()}")
    return value
