"""Child-side task of `tvmffi call`: load the library, build the arguments from
their specs (tvmffi_cli.call.literals), call the function once, describe the result
and the arguments after the call, and write --out files.

request: {"path", "func", "args": [spec...], "tensor_mode": "dltensor"|"object",
          "runtime": path|None, "out": dir|None, "force": bool}
         or {"phase": "load", "path", "runtime", "tensor_mode"}: only load the
         library (the parent can then tell a failing load from a failing call);
         a later call in the same worker reuses the loaded library.
reply (every outcome is a reply; nothing escapes as an exception):
  {"status": "ok", "resolved": "export"|"global", "result": desc, "args": [desc...],
   "files": [{"what", "path"}], "call_ns": int}
  {"status": "raised", "error": {"kind", "message", "backtrace"}}
  {"status": "input_error", "message": str}        (exit 2 in the parent)
  {"status": "loaded"} | {"status": "load_failed", "message": str}   (phase "load")
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

from ..errors import CheckFailed, InputError, TvmffiError

if TYPE_CHECKING:
    from ..abi.typeschema import TypeSpec
    from ..ffi.errors import FFIErrorBase
    from ..ffi.library import Library
    from ..ffi.values import Function
    from .device import Devices
    from .literals import Array, Spec

# A request or reply of this task: a JSON-able dict (see the module docstring).
Message = Dict[str, Any]
# Tensor arguments by position: (the array, "DLTensor*"|"Tensor").
Tensors = Dict[int, Tuple[Any, str]]


class ResolveError(InputError):
    pass


def run(request: Message) -> Message:
    if request.get("phase") == "load":
        return _load_phase(request)
    try:
        return _run(request)
    except TvmffiError as e:
        return {"status": "input_error", "message": str(e), "exit_code": e.exit_code}


def _run(request: Message) -> Message:
    lib, fn, resolved = open_function(request)
    try:
        return _call(lib, fn, resolved, request)
    finally:
        # Values made by the library (a Tensor whose deleter is library code)
        # must die before the library module, which may unload the code.
        import gc

        gc.collect()
        _keep_loaded.append(lib)


# Libraries stay loaded for the life of the child process: see _run.
_keep_loaded: List[Library] = []
# (path, runtime, tensor_mode) -> Library loaded by the "load" phase.
_loaded: dict[tuple[str, str | None, str | None], Any] = {}


def _load_phase(request: dict[str, Any]) -> dict[str, Any]:
    from ..ffi.library import LibraryLoadError

    try:
        load_library(request)
    except LibraryLoadError as e:
        return {"status": "load_failed", "message": str(e)}
    except TvmffiError as e:
        return {"status": "input_error", "message": str(e), "exit_code": e.exit_code}
    return {"status": "loaded"}


def load_library(request: dict[str, Any]) -> Any:
    """The Library of request["path"], loaded once per worker process."""
    from ..ffi import library

    key = (request["path"], request.get("runtime"), request.get("tensor_mode"))
    lib = _loaded.get(key)
    if lib is None:
        lib = library.load(
            request["path"], runtime=request.get("runtime"), tensor_mode=request.get("tensor_mode")
        )
        _loaded[key] = lib
    return lib


def _call(lib: Library, fn: Function, resolved: str, request: Message) -> Message:
    from .device import Devices

    devices = Devices(request)
    try:
        return _call_on(lib, fn, resolved, request, devices)
    finally:
        devices.close()


def _call_on(
    lib: Library, fn: Function, resolved: str, request: Message, devices: Devices
) -> Message:
    from ..ffi import errors as ffi_errors

    notes: list[str] = []
    values, tensors = build_args(lib, request, resolved, notes, devices)
    mode = request.get("tensor_mode") or "dltensor"
    devices.start(lib.runtime)
    from .guard import arguments_at_guard_page

    argv_at = arguments_at_guard_page(bool(request.get("verbose")))
    t0 = time.perf_counter_ns()
    try:
        result = fn.call(values, tensor_mode=mode, argv_at=argv_at)
    except ffi_errors.FFIErrorBase as e:
        devices.settle(request["func"])  # its own error first; pending work still ends
        return {"status": "raised", "error": error_dict(e)}
    except ffi_errors.BadResult as e:
        # The library's result, not the user's arguments: a failed check.
        raise CheckFailed(f"{fn.name or 'the function'}: {e}") from None
    except (TypeError, ValueError, OverflowError) as e:
        # Raised by our conversion before the call: the arguments cannot be passed.
        raise InputError(f"cannot pass the arguments: {e}") from None
    call_ns = time.perf_counter_ns() - t0
    failed = devices.settle(request["func"])
    if failed is not None:
        return {"status": "raised", "error": failed, "cuda": devices.describe()}
    from .describe import describe, describe_array

    result_host = devices.copy_back(result)
    desc = describe(result)
    if result_host is not None:
        desc = dict(describe_array(result_host, desc["type"], desc["device"]))
    reply: Message = {
        "status": "ok",
        "resolved": resolved,
        "call_ns": call_ns,
        "result": desc,
        "args": [],
    }
    host: Dict[int, Any] = {}
    for i, v in enumerate(values):
        if i in tensors:
            arr, type_name = tensors[i]
            device = "cpu:0"
            if hasattr(arr, "to_numpy"):  # a DeviceTensor: as it is now on the device
                device, arr = f"cuda:{arr.device[1]}", arr.to_numpy()
            host[i] = arr
            reply["args"].append(describe_array(arr, type_name, device))
        else:
            reply["args"].append(describe(v))
    if notes:
        reply["notes"] = notes
    if devices.active:
        reply["cuda"] = devices.describe()
    if request.get("out"):
        reply["files"] = write_outputs(
            request["out"], host, result, bool(request.get("force")), result_host
        )
    return reply


def error_dict(e: FFIErrorBase) -> Dict[str, Any]:
    d: Dict[str, Any] = {"kind": e.kind, "message": e.message, "backtrace": e.backtrace or ""}
    cause: Any = e.__cause__
    if cause is not None and hasattr(cause, "kind"):
        d["cause"] = {"kind": cause.kind, "message": cause.message}
    return d


def open_function(request: Message) -> Tuple[Library, Function, str]:
    """(Library, Function, "export"|"global") for request["func"], or ResolveError
    naming the closest known names."""
    name = request["func"]
    lib = load_library(request)
    fn = None
    resolved = None
    if "." not in name:  # dotted names can only be globals
        fn = lib.get_function(name)
        resolved = "export"
    if fn is None:
        fn = lib.get_global(name)
        resolved = "global"
    if fn is None:
        raise ResolveError(not_found_message(lib, name))
    assert resolved is not None  # set together with fn
    return lib, fn, resolved


def not_found_message(lib: Library, name: str) -> str:
    import difflib

    try:
        exports = lib.function_names()
    except TvmffiError:
        exports = []
    candidates = list(exports) + list(lib.globals_registered)
    close = difflib.get_close_matches(name, candidates, n=5, cutoff=0.5)
    msg = f"{os.path.basename(str(lib.path))} has no function {name!r}"
    if "." not in name:
        msg += f" (no export __tvm_ffi_{name} and no global of that name)"
    if close:
        msg += "; closest: " + ", ".join(close)
    elif candidates:
        shown = candidates[:8]
        msg += "; it has: " + ", ".join(shown) + (", ..." if len(candidates) > 8 else "")
    else:
        msg += "; it exports no TVM-FFI functions"
    return msg


def param_types(lib: Library, name: str, resolved: str) -> Optional[List[TypeSpec]]:
    """The parameter types (schema.TypeSpec list) of a function's metadata type
    schema, or None when the library has no usable schema for it."""
    from ..abi import typeschema as schema

    try:
        raw = lib.metadata_raw(name) if resolved == "export" else global_metadata_raw(lib, name)
    except Exception:  # a failing metadata getter only costs us the schema
        return None
    if not raw:
        return None
    try:
        _md, spec = schema.parse_metadata(raw)
    except TvmffiError:
        return None
    if spec is None or not spec.is_function:
        return None
    assert spec.params is not None  # is_function says so
    return list(spec.params)


def global_metadata_raw(lib: Any, name: str) -> str | None:
    """The metadata JSON a global function was registered with (its
    "type_schema" among others), through the runtime's
    ffi.GetGlobalFuncMetadata; None when the runtime or the function has none."""
    from ..ffi import registry

    getter = registry.get_global(lib.runtime, "ffi.GetGlobalFuncMetadata")
    if getter is None:
        return None
    v = getter(name)
    return v if isinstance(v, str) and v else None


def resolve_specs(lib: Library, request: Message, resolved: str) -> List[Spec]:
    """Specs with positional ones re-read by the function's type schema."""
    from . import argv

    specs: List[Spec] = request.get("args") or []
    positional = [s for s in specs if s.get("positional")]
    if not positional:
        return specs
    params = param_types(lib, request["func"], resolved)
    if params is None:
        return specs
    if len(params) != len(specs):
        sig = ", ".join(argv.type_label(p) for p in params)
        raise InputError(
            f"{request['func']}({sig}) takes {len(params)} argument"
            f"{'' if len(params) == 1 else 's'}, got {len(specs)}"
        )
    cwd = request.get("cwd")
    return [
        argv.spec_for_type(s["raw"], p, cwd, where=f"argument {i}") if s.get("positional") else s
        for i, (s, p) in enumerate(zip(specs, params))
    ]


def build_args(
    lib: Library,
    request: Message,
    resolved: str,
    notes: Optional[List[str]] = None,
    devices: Optional[Devices] = None,
) -> Tuple[List[Any], Tensors]:
    """(values, {index: (ndarray or DeviceTensor, "DLTensor*"|"Tensor")}) for
    the call. `notes` collects what was assumed while reading files (e.g. the
    ml_dtypes type of raw .npy elements); `devices` places tensors whose spec
    names a CUDA device (call/device.py)."""
    specs = resolve_specs(lib, request, resolved)
    mode = request.get("tensor_mode") or "dltensor"
    values: List[Any] = []
    tensors: Tensors = {}
    for i, spec in enumerate(specs):
        if spec.get("kind") == "tensor":
            arr = _load_tensor(spec)
            if spec.get("device"):
                if devices is None:
                    raise InputError("CUDA tensors are not supported here")
                arr = devices.tensor(spec, arr)
            elif request.get("guard"):
                from .guard import guarded_copy

                arr = guarded_copy(arr)
            if spec.get("assumed") and notes is not None:
                notes.append(f"argument {i}: {spec['assumed']}")
            owned = spec.get("owned") or mode == "object"
            tensors[i] = (arr, "Tensor" if owned else "DLTensor*")
            values.append(_tensor_value(lib, arr, owned))
        else:
            values.append(materialize(spec, lib))
    return values, tensors


def _load_tensor(spec: Spec) -> Array:
    from . import literals

    try:
        return literals.load_tensor(spec)
    except MemoryError:
        raise InputError("not enough memory for a tensor argument") from None


def _tensor_value(lib: Library, arr: Array, owned: bool) -> Any:
    from ..ffi import tensors, values

    if owned and isinstance(arr, tensors.DeviceTensor):
        return values.Tensor(tensors.tensor_from_device(lib.runtime, arr), lib.runtime)
    if owned:
        return values.numpy_to_tensor(lib.runtime, arr)
    return arr


def materialize(spec: Spec, lib: Optional[Library] = None) -> Any:
    """A spec -> the Python value the ffi layer passes (DataType, Device, Shape...)."""
    from ..ffi import objects

    k = spec.get("kind")
    if k == "none":
        return None
    if k == "unread":  # a positional no schema read (call/argv.py _positional)
        raise InputError(spec["error"])
    if k in ("int", "bool", "str"):
        return spec["value"]
    if k == "float":
        return float(spec["text"]) if "text" in spec else float(spec["value"])
    if k == "bytes":
        if "hex" in spec:
            return bytes.fromhex(spec["hex"])
        try:
            with open(spec["path"], "rb") as f:
                return f.read()
        except OSError as e:
            raise InputError(f"--bytes @{spec['path']}: {e.strerror}") from None
    if k == "dtype":
        from . import literals

        return objects.DataType(spec["value"], literals.parse_dtype(spec["value"]))
    if k == "device":
        return objects.Device(spec["device_type"], spec["device_id"])
    if k == "shape":
        return objects.Shape(spec["value"])
    if k == "array":
        return [materialize(s, lib) for s in spec["items"]]
    if k == "map":
        out: Dict[Any, Any] = {}
        for ks, vs in spec["items"]:
            key = materialize(ks, lib)
            if isinstance(key, list):
                raise InputError("a Map key cannot be an Array")
            out[key] = materialize(vs, lib)
        return out
    if k == "tensor":
        if spec.get("device"):
            raise InputError("a CUDA tensor is passed as an argument, not inside an Array or Map")
        arr = _load_tensor(spec)
        return _tensor_value(lib, arr, bool(spec.get("owned"))) if lib is not None else arr
    raise InputError(f"unknown argument kind {k!r}")


# ---------------------------------------------------------------------------
# --out


def planned_outputs(
    out_dir: str, tensor_indices: Iterable[int], with_result: bool = True
) -> List[str]:
    names = [f"arg{i}.npy" for i in tensor_indices]
    if with_result:
        names.append("result.npy")
    return [os.path.join(out_dir, n) for n in names]


def write_outputs(
    out_dir: str,
    tensors: Dict[int, Any],
    result: Any,
    force: bool,
    result_host: Any = None,
) -> List[Dict[str, Any]]:
    """Write every tensor argument (index -> host array) as arg<i>.npy and a
    tensor result as result.npy (result_host: its copy from the device); each
    file is written to a temporary name and then renamed, so a reader never
    sees half a file and an existing one is kept unless `force`."""
    from ..ffi import values

    os.makedirs(out_dir, exist_ok=True)
    files: List[Dict[str, Any]] = []
    for i in sorted(tensors):
        path = os.path.join(out_dir, f"arg{i}.npy")
        _save_npy(path, tensors[i], force)
        files.append({"what": f"arg{i}", "path": path, "sha256": _sha256(path)})
    if isinstance(result, values.Tensor):
        path = os.path.join(out_dir, "result.npy")
        try:
            arr = result_host if result_host is not None else result.numpy()
        except (TypeError, ValueError) as e:
            files.append({"what": "result", "path": None, "error": f"not written: {e}"})
        else:
            _save_npy(path, arr, force)
            files.append({"what": "result", "path": path, "sha256": _sha256(path)})
    return files


def _sha256(path: str) -> str:
    from .files import sha256_file

    return sha256_file(path)


def _save_npy(path: str, arr: Array, force: bool) -> None:
    import tempfile

    import numpy as np

    from ..ffi import mldtypes

    d = os.path.dirname(path)
    tmp: Optional[str]
    fd, tmp = tempfile.mkstemp(prefix=".tvmffi-", suffix=".npy.tmp", dir=d)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
    except PermissionError:
        pass  # refused by the sandbox without read-only mounts: tvmffi copies it out
    try:
        with os.fdopen(fd, "wb") as f:
            arr = np.asarray(arr)
            if mldtypes.is_ml(arr.dtype):
                # np.save would write a raw "<V2"; name the type so it loads back as it.
                fortran = arr.flags.f_contiguous and not arr.flags.c_contiguous
                f.write(mldtypes.npy_header(arr))
                f.write((arr.T if fortran else np.ascontiguousarray(arr)).view(np.uint8).data)
            else:
                # np.save writes a C-contiguous array straight from its buffer (no copy).
                np.save(f, arr, allow_pickle=False)
        if force:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails when `path` exists: never clobber
            except FileExistsError:
                raise InputError(f"{path} exists; pass --force to overwrite") from None
            os.unlink(tmp)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
