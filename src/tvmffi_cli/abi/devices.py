"""DLPack device types, defined once: codes, names, parse and format.

    parse_device("cuda:1") == (2, 1)     format_device(2, 1) == "cuda:1"
A device is (device_type, device_id), both int32 in DLDevice; parse_device
rejects anything that does not fit.
"""

from __future__ import annotations

import re

from ..errors import InputError

__all__ = [
    "DEVICE_ALIASES",
    "DEVICE_TYPE_CODES",
    "DEVICE_TYPE_NAMES",
    "INT32_MAX",
    "format_device",
    "kDLCPU",
    "kDLCUDA",
    "kDLCUDAHost",
    "kDLCUDAManaged",
    "kDLExtDev",
    "kDLHexagon",
    "kDLMAIA",
    "kDLMetal",
    "kDLOneAPI",
    "kDLOpenCL",
    "kDLROCM",
    "kDLROCMHost",
    "kDLTrn",
    "kDLVPI",
    "kDLVulkan",
    "kDLWebGPU",
    "parse_device",
]

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLOpenCL = 4
kDLVulkan = 7
kDLMetal = 8
kDLVPI = 9
kDLROCM = 10
kDLROCMHost = 11
kDLExtDev = 12
kDLCUDAManaged = 13
kDLOneAPI = 14
kDLWebGPU = 15
kDLHexagon = 16
kDLMAIA = 17
kDLTrn = 18

#: device type -> name (as the runtime prints it)
DEVICE_TYPE_NAMES: dict[int, str] = {
    kDLCPU: "cpu",
    kDLCUDA: "cuda",
    kDLCUDAHost: "cuda_host",
    kDLOpenCL: "opencl",
    kDLVulkan: "vulkan",
    kDLMetal: "metal",
    kDLVPI: "vpi",
    kDLROCM: "rocm",
    kDLROCMHost: "rocm_host",
    kDLExtDev: "ext_dev",
    kDLCUDAManaged: "cuda_managed",
    kDLOneAPI: "oneapi",
    kDLWebGPU: "webgpu",
    kDLHexagon: "hexagon",
    kDLMAIA: "maia",
    kDLTrn: "trn",
}
#: other names accepted on input
DEVICE_ALIASES: dict[str, int] = {"gpu": kDLCUDA, "llvm": kDLCPU, "rocm_managed": kDLROCM}
#: name (and alias) -> device type
DEVICE_TYPE_CODES: dict[str, int] = {v: k for k, v in DEVICE_TYPE_NAMES.items()}
DEVICE_TYPE_CODES.update(DEVICE_ALIASES)

INT32_MAX = 0x7FFFFFFF
_DIGITS = re.compile(r"[0-9]+")  # not str.isdigit: it admits "²", which int() refuses


def _small_int(digits: str) -> int:
    """int() of an ASCII digit string, saturated at 10**18 (above every range checked)."""
    return int(digits) if len(digits) <= 18 else 10**18


def parse_device(text: str) -> tuple[int, int]:
    """'cpu' / 'cuda:1' / '2:1' -> (device_type, device_id); InputError otherwise.
    Both must fit DLDevice's int32 fields (type 0..2**31-1, id 0..2**31-1)."""
    t = text.strip().lower()
    name, sep, idx = t.partition(":")
    if _DIGITS.fullmatch(name):
        dev_type = _small_int(name)
        if dev_type > INT32_MAX:
            raise InputError(f"bad device {text!r}: type out of range")
    elif name in DEVICE_TYPE_CODES:
        dev_type = DEVICE_TYPE_CODES[name]
    else:
        known = ", ".join(DEVICE_TYPE_NAMES.values())
        raise InputError(f"bad device {text!r} (known: {known}; e.g. cuda:1)")
    if not sep:
        return (dev_type, 0)
    if not _DIGITS.fullmatch(idx) or _small_int(idx) > INT32_MAX:
        raise InputError(f"bad device {text!r}: the index must be an integer in 0..{INT32_MAX}")
    return (dev_type, int(idx))


def format_device(device_type: int, device_id: int) -> str:
    """(2, 1) -> 'cuda:1'; an unknown type prints as its number."""
    return f"{DEVICE_TYPE_NAMES.get(device_type, str(device_type))}:{device_id}"
