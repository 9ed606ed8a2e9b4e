"""Type schemas and metadata of every official release, parsed into one model.

A library's metadata (an export's `__tvm_ffi__metadata_<name>` getter, a
global's `ffi.GetGlobalFuncMetadata`, the `metadata` of a reflected field or
method) is a JSON object. Its "type_schema" holds the type, as JSON text in a
string (every release) or, for the `__ffi_init__` that 0.1.10's auto-init
registers, as an object. The other keys are the writer's own (int, bool or
string values; 0.1.10 adds "auto_init": true).

One schema node is {"type": "<key>", "args": [node, ...]}. Keys are the
runtime's static type keys (int, float, bool, None, Any, ffi.String,
ffi.Tensor, DLTensor*, ffi.Array, ffi.Map, Optional, Variant, ...), a C++
spelling from tvm/ffi/extra/stl.h (std::vector, std::optional, ...) or a
registered object type key. A function type was written three ways (facts
read from each release's headers and from what its test library writes):

* 0.1.0 to 0.1.14 (and libraries built with them, e.g. xgrammar 0.2.8):
  {"type": "ffi.Function", "args": [RETURN, PARAM, ...]};
  std::function: {"type": "std::function", "args": [RETURN, [PARAM, ...]]}
  (the parameters as a bare list);
* 0.1.15 on: {"type": "ffi.Function", "named_args": {"return": [RETURN],
  "params": [PARAM, ...]}}, std::function alike;
* every release: {"type": "ffi.Function"} alone, a function whose signature
  is not known (a packed function; `Function` in signatures).

A method's parameters start with the object itself; a constructor
(`__ffi_init__`, static) returns ffi.Object. Every format parses into the
same `TypeSpec`: functions carry `params`/`ret`, never `args`. This module is
the one place these facts live; inspect, call, stubs, conform and diff all
read types through it.

`TypeSpec` is also the hook for the `call` command: `convert_literal(spec,
value)` checks and converts a JSON/CLI value against a parsed type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import FormatError, InputError
from ..text import JsonDict

MAX_DEPTH = 64  # deeper than any real signature; bounds recursion on hostile input

#: Type keys of function types (their schemas carry a signature, or none).
FUNCTION_KEYS = frozenset({"ffi.Function", "std::function"})

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


@dataclass(frozen=True)
class TypeSpec:
    """One node of a type tree, the same whichever release wrote it: `.key`
    is the schema's type key, `.name` (also `.short`) its short name, `.args`
    the type arguments; a function type with a known signature has `.params`
    (a tuple) and `.ret` (None: returns Any); an untyped one has params None."""

    key: str
    args: tuple[TypeSpec, ...] = ()
    params: tuple[TypeSpec, ...] | None = None
    ret: TypeSpec | None = None

    def __post_init__(self) -> None:
        # Callers may pass lists; the model holds tuples (hashable, frozen).
        object.__setattr__(self, "args", tuple(self.args))
        if self.params is not None:
            object.__setattr__(self, "params", tuple(self.params))

    @property
    def name(self) -> str:
        return SHORT.get(self.key, self.key)

    @property
    def short(self) -> str:
        """The short name people read (str for ffi.String, Array for ffi.Array)."""
        return self.name

    @property
    def is_function(self) -> bool:
        """A function type whose signature is known."""
        return self.params is not None

    @property
    def is_untyped_function(self) -> bool:
        """A function type that says nothing of its arguments ({"type": "ffi.Function"})."""
        return self.params is None and self.key in FUNCTION_KEYS

    def _sig_parts(self) -> tuple[str, str]:
        ps = ", ".join(p.render() for p in self.params or ())
        return ps, self.ret.render() if self.ret is not None else "Any"

    def render(self) -> str:
        if self.is_function:
            ps, r = self._sig_parts()
            return f"Callable[[{ps}], {r}]"
        if self.args:
            return f"{self.name}[{', '.join(a.render() for a in self.args)}]"
        return self.name

    def signature(self, name: str) -> str:
        """`name(p1, p2) -> ret` for a function type; `name(...) -> Any` for an
        untyped one. FormatError for a type that is no function at all."""
        if self.is_untyped_function:
            return f"{name}(...) -> Any"
        if not self.is_function:
            raise FormatError(f"type schema of {name} is {self.render()}, not a function")
        ps, r = self._sig_parts()
        return f"{name}({ps}) -> {r}"

    def to_json(self) -> JsonDict:
        """The model as JSON ({"type", "args"}, functions {"params", "return"}):
        one shape for every release's format (schemas/inspect.schema.json)."""
        d: JsonDict = {"type": self.key}
        if self.args:
            d["args"] = [a.to_json() for a in self.args]
        if self.params is not None:
            d["params"] = [p.to_json() for p in self.params]
            d["return"] = self.ret.to_json() if self.ret is not None else None
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TypeSpec:
        """Back from to_json() (already validated when it was written)."""
        args = tuple(TypeSpec.from_json(a) for a in d.get("args") or ())
        if "params" in d:
            ret = d.get("return")
            return TypeSpec(
                str(d["type"]),
                args,
                tuple(TypeSpec.from_json(p) for p in d["params"] or ()),
                TypeSpec.from_json(ret) if isinstance(ret, Mapping) else None,
            )
        return TypeSpec(str(d["type"]), args)

    def __repr__(self) -> str:
        return f"TypeSpec({self.render()})"


def _nodes(items: object, key: str, what: str, depth: int) -> tuple[TypeSpec, ...]:
    if not isinstance(items, list):
        raise FormatError(f'"{what}" of {key} must be a list')
    return tuple(_node(a, depth + 1) for a in items)


def _function(key: str, obj: Mapping[str, Any], depth: int) -> TypeSpec:
    named = obj.get("named_args")
    if named is not None:  # 0.1.15 on
        if not isinstance(named, dict):
            raise FormatError(f'"named_args" of {key} must be an object')
        ret = _nodes(named.get("return", []), key, "return", depth)
        if len(ret) > 1:
            raise FormatError(f'"return" of {key} must be a list of at most one type')
        params = _nodes(named.get("params", []), key, "params", depth)
        return TypeSpec(key, (), params, ret[0] if ret else None)
    args = obj.get("args")
    if args is None or args == []:
        return TypeSpec(key)  # nothing said about the signature
    if not isinstance(args, list):
        raise FormatError(f'"args" of {key} must be a list')
    # Up to 0.1.14: [RETURN, PARAM, ...]; std::function: [RETURN, [PARAM, ...]].
    if key == "std::function" and len(args) == 2 and isinstance(args[1], list):
        return TypeSpec(key, (), _nodes(args[1], key, "args", depth), _node(args[0], depth + 1))
    ret_and_params = _nodes(args, key, "args", depth)
    return TypeSpec(key, (), ret_and_params[1:], ret_and_params[0])


def _node(obj: object, depth: int) -> TypeSpec:
    if depth > MAX_DEPTH:
        raise FormatError(f"type schema nests deeper than {MAX_DEPTH} levels")
    if not isinstance(obj, dict):
        raise FormatError(f"type schema node must be an object, got {type(obj).__name__}")
    key = obj.get("type")
    if not isinstance(key, str) or not key:
        raise FormatError('type schema node has no "type" string')
    if key in FUNCTION_KEYS:
        return _function(key, obj, depth)
    if obj.get("named_args") is not None:
        raise FormatError(f'"named_args" on {key}, which is not a function type')
    return TypeSpec(key, _nodes(obj.get("args", []), key, "args", depth))


def parse_type(schema: object) -> TypeSpec:
    """Parse a type schema given as a JSON string or an already decoded object."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except (ValueError, RecursionError) as e:
            raise FormatError(f"type schema is not valid JSON ({str(e)[:80]})") from None
    return _node(schema, 0)


def decode_metadata(metadata: object) -> JsonDict:
    """A metadata JSON text (or an already decoded object) as a dict;
    FormatError when it is not JSON or not an object."""
    if isinstance(metadata, (str, bytes)):
        try:
            metadata = json.loads(metadata)
        except (ValueError, RecursionError) as e:
            raise FormatError(f"metadata is not valid JSON ({str(e)[:80]})") from None
    if not isinstance(metadata, dict):
        raise FormatError("metadata must be a JSON object")
    return metadata


def parse_metadata(metadata: object) -> tuple[JsonDict, TypeSpec | None]:
    """Parse metadata (JSON text or a decoded object) holding "type_schema"
    (JSON in a string, or an object). Returns (metadata dict, TypeSpec or
    None when there is no type_schema)."""
    md = decode_metadata(metadata)
    ts = md.get("type_schema")
    if ts is None:
        return md, None
    if not isinstance(ts, (str, dict)):
        raise FormatError('"type_schema" must be JSON text or an object')
    return md, parse_type(ts)


def function_type(metadata: object) -> TypeSpec | None:
    """The signature a function's metadata declares: a TypeSpec with params,
    or None when the metadata declares none (no type_schema, or an untyped
    function). FormatError when it is malformed or no function type."""
    if metadata is None or metadata == "":
        return None
    _md, spec = parse_metadata(metadata)
    if spec is None or spec.is_untyped_function:
        return None
    if not spec.is_function:
        raise FormatError(f"type schema is {spec.render()}, not a function type")
    return spec


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
