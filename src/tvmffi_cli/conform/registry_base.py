"""The record of one check and the words its fields take (registry.py holds
the table; registry_kernel.py the records of the kernel probes)."""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"

LIBRARY = "library"  # one result for the whole file
FUNCTION = "function"  # one result per exported function (or per offending symbol)
WHEEL = "wheel"  # one result per wheel given as input

STATIC = "static"  # reads the file only
LOAD = "load"  # loads the library in a worker process
PROBE = "probe"  # calls functions in a worker process


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    severity: str
    scope: str
    stage: str
    what: str
    why: str
    fix: str
