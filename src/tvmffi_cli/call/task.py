"""Child-side task of `tvmffi call`: load the library, build the arguments from
their specs (call/specs.py), call the function once, describe the result and
the arguments after the call, and write --out files.

The request and the reply are call/messages.py's: a LoadRequest only loads
the library (the parent can then tell a failing load from a failing call; a
later call in the same worker reuses it) and gets Loaded, LoadFailed or
Refused; a CallRequest gets CallOk, Raised or Refused (exit 2 in the
parent, or 1 for a result tvmffi cannot read). Every outcome is a reply;
nothing escapes as an exception.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

from ..errors import CheckFailed, InputError, TvmffiError
from .describe import Desc, JsonDict
from .messages import (
    CallOk,
    CallRequest,
    Cause,
    Loaded,
    LoadFailed,
    LoadRequest,
    OutFile,
    Raised,
    RaisedError,
    Refused,
    decode_request,
    encode,
)
from .specs import (
    ArgSpec,
    ArrayArg,
    BoolArg,
    BytesArg,
    DeviceArg,
    DtypeArg,
    FloatArg,
    IntArg,
    MapArg,
    NoneArg,
    Positional,
    ShapeArg,
    Spec,
    StrArg,
    TensorArg,
)

if TYPE_CHECKING:
    import ctypes

    from ..abi.structs import TVMFFIAny
    from ..abi.typeschema import TypeSpec
    from ..ffi.errors import FFIErrorBase
    from ..ffi.library import Library
    from ..ffi.values import Function
    from .device import Devices
    from .literals import Array

# Tensor arguments by position: (the array, "DLTensor*"|"Tensor").
Tensors = Dict[int, Tuple[Any, str]]


class ResolveError(InputError):
    pass


def run(obj: object) -> JsonDict:
    """The task: a request's JSON object in, the reply's out."""
    request = decode_request(obj)
    if isinstance(request, LoadRequest):
        return encode(_load_phase(request))
    try:
        return encode(_run(request))
    except TvmffiError as e:
        return encode(Refused(str(e), e.exit_code))


def _run(request: CallRequest) -> Union[CallOk, Raised]:
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
_loaded: dict[tuple[str, str | None, str], Library] = {}


def _load_phase(request: LoadRequest) -> Union[Loaded, LoadFailed, Refused]:
    from ..ffi.library import LibraryLoadError

    try:
        load_library(request)
    except LibraryLoadError as e:
        return LoadFailed(str(e))
    except TvmffiError as e:
        return Refused(str(e), e.exit_code)
    return Loaded()


def load_library(request: Union[LoadRequest, CallRequest]) -> Library:
    """The Library of request.path, loaded once per worker process."""
    from ..ffi import library

    key = (request.path, request.runtime, request.tensor_mode)
    lib = _loaded.get(key)
    if lib is None:
        lib = library.load(request.path, runtime=request.runtime, tensor_mode=request.tensor_mode)
        _loaded[key] = lib
    return lib


def _call(lib: Library, fn: Function, resolved: str, request: CallRequest) -> Union[CallOk, Raised]:
    from .device import Devices

    devices = Devices(request.path, request.stream)
    try:
        return _call_on(lib, fn, resolved, request, devices)
    finally:
        devices.close()


def _call_on(
    lib: Library, fn: Function, resolved: str, request: CallRequest, devices: Devices
) -> Union[CallOk, Raised]:
    from ..ffi import errors as ffi_errors

    notes: list[str] = []
    values, tensors = build_args(lib, request, resolved, notes, devices)
    devices.start(lib.runtime)
    from .guard import arguments_at_guard_page

    argv_at = arguments_at_guard_page(request.verbose)
    t0 = time.perf_counter_ns()
    try:
        result = fn.call(values, tensor_mode=request.tensor_mode, argv_at=argv_at)
    except ffi_errors.FFIErrorBase as e:
        devices.settle(request.func)  # its own error first; pending work still ends
        return Raised(raised_error(e))
    except ffi_errors.BadResult as e:
        # The library's result, not the user's arguments: a failed check.
        raise CheckFailed(f"{fn.name or 'the function'}: {e}") from None
    except (TypeError, ValueError, OverflowError) as e:
        # Raised by our conversion before the call: the arguments cannot be passed.
        raise InputError(f"cannot pass the arguments: {e}") from None
    call_ns = time.perf_counter_ns() - t0
    failed = devices.settle(request.func)
    if failed is not None:
        return Raised(failed, devices.describe())
    import dataclasses

    from .describe import TensorValue, describe, describe_array

    result_host = devices.copy_back(result)
    desc = describe(result)
    if result_host is not None and isinstance(desc, TensorValue):
        desc = describe_array(result_host, desc.type, str(desc.device))
    args: List[Desc] = []
    host: Dict[int, Any] = {}
    for i, v in enumerate(values):
        if i in tensors:
            arr, type_name = tensors[i]
            device = "cpu:0"
            if hasattr(arr, "to_numpy"):  # a DeviceTensor: as it is now on the device
                device, arr = f"cuda:{arr.device[1]}", arr.to_numpy()
            host[i] = arr
            args.append(describe_array(arr, type_name, device))
        else:
            args.append(describe(v))
    reply = CallOk(resolved, call_ns, desc, tuple(args), tuple(notes), devices.describe())
    if request.out:
        files = write_outputs(request.out, host, result, request.force, result_host)
        reply = dataclasses.replace(reply, files=tuple(files))
    return reply


def raised_error(e: FFIErrorBase) -> RaisedError:
    cause: Any = e.__cause__
    return RaisedError(
        e.kind,
        e.message,
        e.backtrace or "",
        Cause(cause.kind, cause.message) if cause is not None and hasattr(cause, "kind") else None,
    )


def pack_args(
    rt: Any, values: List[Any], mode: str, keep: List[Any], owned: List[int]
) -> Union[ctypes.Array[TVMFFIAny], Raised]:
    """The TVMFFIAny array of `values` for a timed loop (bench), or Raised when
    the runtime refused one; `owned` gets the handles the caller must DecRef
    (in its finally, also after a refusal). A value that cannot be converted
    is the user's: InputError."""
    from ..abi import structs as abi
    from ..ffi import errors as ffi_errors
    from ..ffi import values as ffi_values

    argv = (abi.TVMFFIAny * max(len(values), 1))()
    try:
        for i, v in enumerate(values):
            ffi_values.py_to_any(rt, v, argv[i], keep, owned, mode)
    except (TypeError, ValueError, OverflowError) as e:
        if isinstance(e, ffi_errors.FFIErrorBase):
            return Raised(raised_error(e))
        raise InputError(f"cannot pass the arguments: {e}") from None
    return argv


def open_function(request: CallRequest) -> Tuple[Library, Function, str]:
    """(Library, Function, "export"|"global") for request.func, or ResolveError
    naming the closest known names."""
    name = request.func
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


def resolve_specs(lib: Library, request: CallRequest, resolved: str) -> List[Spec]:
    """The specs of the call, positional ones read by the function's type
    schema (when it has one; else as guessed from their text)."""
    from . import argv

    specs = request.args
    if not any(isinstance(s, Positional) for s in specs):
        return [s for s in specs if not isinstance(s, Positional)]
    params = param_types(lib, request.func, resolved)
    if params is None:
        return [_guessed(s) for s in specs]
    if len(params) != len(specs):
        sig = ", ".join(argv.type_label(p) for p in params)
        raise InputError(
            f"{request.func}({sig}) takes {len(params)} argument"
            f"{'' if len(params) == 1 else 's'}, got {len(specs)}"
        )
    return [
        argv.spec_for_type(s.raw, p, request.cwd or None, where=f"argument {i}")
        if isinstance(s, Positional)
        else s
        for i, (s, p) in enumerate(zip(specs, params))
    ]


def _guessed(s: ArgSpec) -> Spec:
    """A positional as guessed from its text; its refusal when it was not (no
    schema to read it by)."""
    if not isinstance(s, Positional):
        return s
    if s.spec is None:
        raise InputError(s.error or f"argument {s.raw!r}: cannot be read")
    return s.spec


def build_args(
    lib: Library,
    request: CallRequest,
    resolved: str,
    notes: Optional[List[str]] = None,
    devices: Optional[Devices] = None,
) -> Tuple[List[Any], Tensors]:
    """(values, {index: (ndarray or DeviceTensor, "DLTensor*"|"Tensor")}) for
    the call. `notes` collects what was assumed while reading files (e.g. the
    ml_dtypes type of raw .npy elements); `devices` places tensors whose spec
    names a CUDA device (call/device.py)."""
    specs = resolve_specs(lib, request, resolved)
    values: List[Any] = []
    tensors: Tensors = {}
    for i, spec in enumerate(specs):
        if isinstance(spec, TensorArg):
            arr, assumed = _load_tensor(spec)
            if spec.device:
                if devices is None:
                    raise InputError("CUDA tensors are not supported here")
                arr = devices.tensor(spec, arr)
            elif request.guard:
                from .guard import guarded_copy

                arr = guarded_copy(arr)
            if assumed and notes is not None:
                notes.append(f"argument {i}: {assumed}")
            owned = spec.owned or request.tensor_mode == "object"
            tensors[i] = (arr, "Tensor" if owned else "DLTensor*")
            values.append(_tensor_value(lib, arr, owned))
        else:
            values.append(materialize(spec, lib))
    return values, tensors


def _load_tensor(spec: TensorArg) -> Tuple[Array, Optional[str]]:
    from . import literals

    try:
        return literals.read_tensor(spec)
    except MemoryError:
        raise InputError("not enough memory for a tensor argument") from None


def _tensor_value(lib: Optional[Library], arr: Array, owned: bool) -> Any:
    from ..ffi import tensors, values

    if lib is None:
        return arr
    if owned and isinstance(arr, tensors.DeviceTensor):
        return values.Tensor(tensors.tensor_from_device(lib.runtime, arr), lib.runtime)
    if owned:
        return values.numpy_to_tensor(lib.runtime, arr)
    return arr


def materialize(spec: ArgSpec, lib: Optional[Library] = None) -> Any:
    """A spec -> the Python value the ffi layer passes (DataType, Device, Shape...)."""
    from ..ffi import objects

    if isinstance(spec, Positional):  # not read by a schema (call/argv.py _positional)
        return materialize(_guessed(spec), lib)
    if isinstance(spec, NoneArg):
        return None
    if isinstance(spec, (IntArg, BoolArg, StrArg, FloatArg)):
        return spec.value
    if isinstance(spec, BytesArg):
        if spec.path is None:
            return bytes.fromhex(spec.hex or "")
        try:
            with open(spec.path, "rb") as f:
                return f.read()
        except OSError as e:
            raise InputError(f"--bytes @{spec.path}: {e.strerror}") from None
    if isinstance(spec, DtypeArg):
        from . import literals

        return objects.DataType(spec.value, literals.parse_dtype(spec.value))
    if isinstance(spec, DeviceArg):
        return objects.Device(spec.device_type, spec.device_id)
    if isinstance(spec, ShapeArg):
        return objects.Shape(spec.value)
    if isinstance(spec, ArrayArg):
        return [materialize(s, lib) for s in spec.items]
    if isinstance(spec, MapArg):
        out: Dict[Any, Any] = {}
        for ks, vs in spec.items:
            key = materialize(ks, lib)
            if isinstance(key, list):
                raise InputError("a Map key cannot be an Array")
            out[key] = materialize(vs, lib)
        return out
    if spec.device:
        raise InputError("a CUDA tensor is passed as an argument, not inside an Array or Map")
    return _tensor_value(lib, _load_tensor(spec)[0], spec.owned)


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
) -> List[OutFile]:
    """Write every tensor argument (index -> host array) as arg<i>.npy and a
    tensor result as result.npy (result_host: its copy from the device); each
    file is written to a temporary name and then renamed, so a reader never
    sees half a file and an existing one is kept unless `force`."""
    from ..ffi import values

    os.makedirs(out_dir, exist_ok=True)
    files: List[OutFile] = []
    for i in sorted(tensors):
        path = os.path.join(out_dir, f"arg{i}.npy")
        _save_npy(path, tensors[i], force)
        files.append(OutFile(f"arg{i}", path, _sha256(path)))
    if isinstance(result, values.Tensor):
        path = os.path.join(out_dir, "result.npy")
        try:
            arr = result_host if result_host is not None else result.numpy()
        except (TypeError, ValueError) as e:
            files.append(OutFile("result", None, error=f"not written: {e}"))
        else:
            _save_npy(path, arr, force)
            files.append(OutFile("result", path, _sha256(path)))
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
