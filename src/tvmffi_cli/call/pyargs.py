"""Python values as the argument specs of a call request (what the
command line's literals produce), for the Python API's call_function."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from ..errors import InputError
from .specs import ArrayArg, BytesArg, MapArg, Spec, TensorArg


def value_to_spec(v: Any, tmpdir: str, where: str = "value") -> Spec:
    """A Python value -> the argument spec call.task materializes in the child
    (NumPy arrays are saved as .npy files under tmpdir)."""
    from . import literals

    if v is None or isinstance(v, (bool, int, float, str)):
        return literals.json_to_spec(v, where)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return BytesArg(hex=bytes(v).hex())
    if isinstance(v, (list, tuple)):
        return ArrayArg(tuple(value_to_spec(x, tmpdir, where) for x in v))
    if isinstance(v, dict):
        return MapArg(
            tuple(
                (value_to_spec(k, tmpdir, f"{where} key"), value_to_spec(x, tmpdir, where))
                for k, x in v.items()
            )
        )
    if type(v).__module__ == "numpy" and hasattr(v, "__array_interface__"):
        import numpy as np

        arr = np.asarray(v)
        if arr.ndim == 0 and type(v) is not np.ndarray:  # a NumPy scalar
            return value_to_spec(arr.item(), tmpdir, where)
        p = os.path.join(tmpdir, f"arg{len(os.listdir(tmpdir))}.npy")
        np.save(p, arr, allow_pickle=False)
        return TensorArg("npy", path=p)
    raise InputError(
        f"{where}: cannot pass a {type(v).__name__} (use None, bool, int, float, "
        "str, bytes, a NumPy array, or a list/dict of these)"
    )


def place_on(specs: list[Spec], device: str | None) -> list[Spec]:
    """Every tensor argument of a call put on `device` ("cuda" or "cuda:N";
    None or "cpu" leaves them on the host): call_function(..., device=)."""
    from . import literals

    if device is None:
        return specs
    _body, dev = literals.split_device(f"x.npy@{device}")  # InputError unless cpu/cuda
    if dev is None and device.strip().lower().split(":")[0] != "cpu":
        raise InputError(f"device {device!r}: tensors are placed on cpu or cuda[:N]")
    if dev is None:
        return specs
    return [dataclasses.replace(s, device=dev) if isinstance(s, TensorArg) else s for s in specs]
