"""A wheel's core metadata (`<name>-<version>.dist-info/METADATA`): its name,
version and what it declares about the apache-tvm-ffi runtime it runs on.

Requirements are parsed with `packaging` (the parser pip itself uses), so a
declared range means exactly what an installer makes of it.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser

from ..errors import InputError
from .archive import Limits, read_member

#: The distribution that ships the official runtime (PEP 503 normalized).
RUNTIME_DIST = "apache-tvm-ffi"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class WheelMetadata:
    name: str
    version: str
    #: the Requires-Dist lines naming apache-tvm-ffi that apply to a plain install
    runtime_requirements: tuple[str, ...]
    #: their combined version specifier ("" when they name no version); None
    #: when the wheel does not require apache-tvm-ffi at all
    runtime_specifier: str | None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "requires_runtime": list(self.runtime_requirements),
            "runtime_specifier": self.runtime_specifier,
        }


def _applies(req: object) -> bool:
    """Does a requirement apply to a plain `pip install` (no extras) here?"""
    marker = getattr(req, "marker", None)
    if marker is None:
        return True
    try:
        return bool(marker.evaluate({"extra": ""}))
    except Exception:  # an unknown marker variable: count it, to be safe
        return True


def parse(text: str) -> WheelMetadata:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import SpecifierSet

    msg = HeaderParser().parsestr(text)
    lines: list[str] = []
    spec = SpecifierSet()
    for line in msg.get_all("Requires-Dist") or ():
        try:
            req = Requirement(str(line))
        except InvalidRequirement as e:
            if normalize(str(line)).startswith(RUNTIME_DIST):
                raise InputError(f"METADATA: bad Requires-Dist {line!r} ({e})") from None
            continue
        if normalize(req.name) != RUNTIME_DIST or not _applies(req):
            continue
        lines.append(str(line).strip())
        spec &= req.specifier
    return WheelMetadata(
        str(msg.get("Name") or ""),
        str(msg.get("Version") or ""),
        tuple(lines),
        str(spec) if lines else None,
    )


def read(
    z: zipfile.ZipFile, files: list[zipfile.ZipInfo], where: str, limits: Limits
) -> WheelMetadata:
    """The METADATA of the wheel's one top-level .dist-info directory."""
    found = [
        i
        for i in files
        if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")
    ]
    if len(found) != 1:
        raise InputError(
            f"{where}: not a wheel: "
            + ("no .dist-info/METADATA" if not found else "more than one .dist-info/METADATA")
        )
    data = read_member(z, found[0], limits.metadata_size)
    return parse(data.decode("utf-8", "replace"))
