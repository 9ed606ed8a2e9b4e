"""CUDA code architectures and which of them a GPU can run: a pure model,
no file reading (binary/fatbin.py reads the entries, a device query gives
the compute capability).

An entry of a fat binary is SASS (a cubin: machine code for one real
architecture, sm_XY) or PTX (virtual code for compute_XY, compiled by the
driver's JIT when loaded). Suffixes: `a` (arch-specific: only that exact
compute capability, e.g. sm_90a) and `f` (family-specific: that major
version from that minor up, e.g. sm_100f on 10.0 and 10.3).

What runs where (the CUDA programming guide's binary compatibility rules):
  SASS sm_XY, sm_XYf   devices X.z with z >= Y (same major)
  SASS sm_XYa          device X.Y only
  PTX compute_XY       devices X.Y and every later one (JIT)
  PTX compute_XYf      devices X.z with z >= Y (JIT)
  PTX compute_XYa      device X.Y only (JIT)
The loader prefers SASS; PTX is compiled on first load (seconds, cached).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional, TypedDict

from ..errors import InputError

SASS, PTX = "sass", "ptx"
VARIANTS = ("", "a", "f")
_ARCH_RE = re.compile(r"(sm|compute)_(\d{2,4})([af]?)")
_CC_RE = re.compile(r"(?:sm_)?(\d{1,2})\.?(\d)")


@dataclass(frozen=True, order=True)
class CodeArch:
    """One architecture an entry was built for: sm = 10 * major + minor."""

    kind: str  # SASS | PTX
    sm: int
    variant: str = ""  # "" | "a" | "f"

    @property
    def name(self) -> str:
        """sm_90a for SASS, compute_90 for PTX (nvcc's -gencode spelling)."""
        return f"{'sm' if self.kind == SASS else 'compute'}_{self.sm}{self.variant}"

    @property
    def major(self) -> int:
        return self.sm // 10

    @property
    def minor(self) -> int:
        return self.sm % 10

    @classmethod
    def parse(cls, text: str) -> CodeArch:
        """sm_90a -> SASS 90 "a"; compute_120f -> PTX 120 "f"."""
        m = _ARCH_RE.fullmatch(text.strip())
        if m is None:
            raise InputError(
                f"not a CUDA architecture: {text!r} (expected sm_XY[a|f] or compute_XY)"
            )
        return cls(SASS if m.group(1) == "sm" else PTX, int(m.group(2)), m.group(3))

    def runs_on(self, cc: tuple[int, int]) -> bool:
        """Whether a device of compute capability cc = (major, minor) can run
        this code (PTX: after JIT compilation)."""
        major, minor = cc
        if self.variant == "a":
            return (self.major, self.minor) == (major, minor)
        if self.kind == SASS or self.variant == "f":
            return self.major == major and self.minor <= minor
        return (self.major, self.minor) <= (major, minor)


def parse_cc(text: str) -> tuple[int, int]:
    """A compute capability: "9.0", "90", "sm_90", "10.3" -> (major, minor)."""
    m = _CC_RE.fullmatch(text.strip())
    if m is None:
        raise InputError(f"not a compute capability: {text!r} (expected e.g. 9.0 or sm_90)")
    return int(m.group(1)), int(m.group(2))


class SupportJson(TypedDict):
    """Support.to_json(): inspect's --json "cuda" "device" verdict."""

    compute_capability: str
    verdict: str
    arch: Optional[str]
    reason: str


class DeviceVerdict(SupportJson):
    """A GPU's verdict (inspect's --json "cuda" "devices"): which device it is."""

    device: str
    name: str


@dataclass(frozen=True)
class Support:
    """Whether a library's CUDA code can run on one device.

    verdict: "sass" (machine code for it is there), "ptx" (only through the
    driver's JIT of `arch`), "none" (nothing it can run), "no-cuda-code"."""

    compute_capability: tuple[int, int]
    verdict: str
    arch: str | None  # the entry the loader would pick (sm_90a, compute_90)
    reason: str

    def to_json(self) -> SupportJson:
        return {
            "compute_capability": "{}.{}".format(*self.compute_capability),
            "verdict": self.verdict,
            "arch": self.arch,
            "reason": self.reason,
        }


def _best(candidates: list[CodeArch], cc: tuple[int, int]) -> CodeArch | None:
    """The closest code to the device: exact arch-specific first, then the
    highest compute capability not above it."""
    fits = [a for a in candidates if a.runs_on(cc)]
    if not fits:
        return None
    return max(fits, key=lambda a: (a.sm, a.variant == "a", a.variant == "f"))


def device_support(archs: Iterable[CodeArch], cc: tuple[int, int]) -> Support:
    """Pure: given the architectures of a library's loaded entries and a
    device's compute capability (major, minor), say whether it has SASS for
    the device, relies on PTX JIT, or has nothing usable."""
    seen = sorted(set(archs))
    dev = f"sm_{cc[0]}{cc[1]}"
    if not seen:
        return Support(cc, "no-cuda-code", None, "the library carries no CUDA code")
    sass = _best([a for a in seen if a.kind == SASS], cc)
    if sass is not None:
        return Support(cc, "sass", sass.name, f"{sass.name} machine code runs on {dev}")
    ptx = _best([a for a in seen if a.kind == PTX], cc)
    have = ", ".join(a.name for a in seen)
    if ptx is not None:
        return Support(
            cc,
            "ptx",
            ptx.name,
            f"no SASS for {dev} ({have}): the driver JIT-compiles {ptx.name} PTX on first load",
        )
    return Support(cc, "none", None, f"nothing runs on {dev}: the library has {have}")
