"""The change kinds of `tvmffi diff` and its result (frozen, JSON-able).

Every difference is a `Change` with a stable `kind` id (KINDS) and a fixed
verdict: compatible (a caller of OLD keeps working with NEW) or not. NOTES
are compatible kinds that are not changes of what the library offers but of
how its headers register it (a generated method that moved to a type
attribute): listed as notes, never breaks.

A result is complete when everything was compared; when a side could not be
loaded (or cannot be on this host) the loaded API was not compared, and the
result says what was not (`not_compared`) and exits 2: cannot judge. So
does a release of OLD's runtime range on which NEW could not be loaded (its
runtime could not be fetched). A comparison the user asked to be reduced
(--static: the files; --symbols-range: the runtime ranges by symbols) states
that promise instead (`promise`) and is judged on what it covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..inspect.ranges import Coverage

# kind id -> (compatible, what it means). The ids are part of the JSON output.
KINDS: dict[str, tuple[bool, str]] = {
    "export.removed": (False, "an exported function is gone"),
    "export.added": (True, "a new exported function"),
    "export.param_count_changed": (False, "an export takes a different number of parameters"),
    "export.param_type_changed": (False, "a parameter of an export has another type"),
    "export.result_type_changed": (False, "an export returns another type"),
    "export.type_added": (True, "an export gained a type schema"),
    "export.type_removed": (True, "an export lost its type schema (no longer checkable)"),
    "export.doc_changed": (True, "an export's docstring changed"),
    "global.removed": (False, "a registered global function is gone"),
    "global.added": (True, "a new registered global function"),
    "global.param_count_changed": (False, "a global takes a different number of parameters"),
    "global.param_type_changed": (False, "a parameter of a global has another type"),
    "global.result_type_changed": (False, "a global returns another type"),
    "global.type_added": (True, "a global gained a type schema"),
    "global.type_removed": (True, "a global lost its type schema (no longer checkable)"),
    "type.removed": (False, "an object type is no longer registered"),
    "type.added": (True, "a new object type"),
    "type.parent_changed": (False, "an object type derives from another type"),
    "type.field_removed": (False, "a field of an object type (its own or inherited) is gone"),
    "type.field_added": (True, "a new field of an object type"),
    "type.field_type_changed": (False, "a field has another type"),
    "type.field_readonly": (False, "a writable field became read-only"),
    "type.method_removed": (False, "a method of an object type (its own or inherited) is gone"),
    "type.method_added": (True, "a new method of an object type"),
    "type.method_type_changed": (False, "a method's parameters or result changed"),
    "type.method_type_added": (True, "a method gained a type schema"),
    "type.method_type_removed": (True, "a method lost its type schema (no longer checkable)"),
    "type.method_now_attr": (
        True,
        "a method left the method table but the type still has it as a type attribute "
        "(the constructor 0.1.10+ headers generate): callers still reach it",
    ),
    "type.generated_method_removed": (
        True,
        "a method the headers generate for every type (__ffi_shallow_copy__) left the "
        "method table: the library was built with newer headers",
    ),
    "type.generated_method_added": (
        True,
        "a method the headers generate for every type (__ffi_shallow_copy__) is new in "
        "the method table: the library was built with other headers",
    ),
    "module.removed": (False, "an embedded module is gone"),
    "module.added": (True, "a new embedded module"),
    "kernel.removed": (False, "a kernel of an embedded module is gone"),
    "kernel.added": (True, "a new kernel in an embedded module"),
    "kernel.args_changed": (False, "a kernel's argument types changed"),
    "cubin.removed": (False, "an embedded GPU binary (__tvm_ffi__cubin_) is gone"),
    "cubin.added": (True, "a new embedded GPU binary"),
    "runtime.newer_required": (False, "NEW imports runtime functions OLD's runtime may lack"),
    "runtime.cxx_imports_added": (
        False,
        "NEW needs runtime symbols the builtin runtime lacks (abi/release_exports.py)",
    ),
    "runtime.import_added": (True, "NEW uses another C API function of the stable ABI"),
    "runtime.releases_dropped": (
        False,
        "NEW does not run on official apache-tvm-ffi releases OLD runs on: a deployment "
        "of OLD cannot swap in NEW on the same runtime",
    ),
    "runtime.releases_added": (True, "NEW runs on official releases OLD does not"),
}

#: Compatible kinds that are notes about the headers, not changes of the API.
NOTES = frozenset(
    {"type.method_now_attr", "type.generated_method_removed", "type.generated_method_added"}
)

#: What only the loaded view shows (and a static comparison leaves out).
LOADED_ONLY = "globals, object types and type schemas"
#: The reduced promise of --static.
STATIC_PROMISE = (
    "static comparison (--static): compared the exports by name, embedded modules and "
    f"kernels, GPU binaries, runtime imports and the runtime range by symbols; {LOADED_ONLY} "
    "need the loaded view and were not compared"
)
#: How a not_compared line about the runtime range begins.
RANGE_GAP = "runtime range: "
#: The reduced promise of --symbols-range.
SYMBOLS_PROMISE = (
    "runtime ranges compared by symbols only (--symbols-range): NEW was not loaded on the "
    "releases of OLD's range, so one where it aborts while loading, though it has every "
    "symbol NEW imports, is not seen"
)


@dataclass(frozen=True)
class Change:
    kind: str  # a key of KINDS
    subject: str  # what changed: "export add", "type kitchen.Point field x", ...
    old: str | None  # the OLD side, readable ("add(int, int) -> int"), None when absent
    new: str | None
    compatible: bool
    detail: str  # one sentence
    suppressed: bool = False  # accepted by a --suppress pattern: does not decide the exit code

    @property
    def note(self) -> bool:
        return self.kind in NOTES

    def to_json(self) -> dict[str, Any]:  # diff's --json (a JSON boundary)
        return {
            "kind": self.kind,
            "subject": self.subject,
            "old": self.old,
            "new": self.new,
            "compatible": self.compatible,
            "detail": self.detail,
            "suppressed": self.suppressed,
        }


@dataclass(frozen=True)
class SideRange:
    """The releases one side runs on and what that rests on."""

    releases: tuple[str, ...]
    basis: str  # "symbols" | "loading" | "loading and symbols"

    def to_json(self) -> dict[str, Any]:  # diff's --json (a JSON boundary)
        return {"releases": list(self.releases), "basis": self.basis}


@dataclass(frozen=True)
class DiffResult:
    old_path: str
    new_path: str
    mode: str  # "static" when either side was read statically, else "loaded"
    changes: tuple[Change, ...]
    warnings: tuple[str, ...]
    #: What could not be compared (a side not loaded), one line each; empty
    #: when the comparison is complete or static by request.
    not_compared: tuple[str, ...] = ()
    #: The promise a static comparison makes, when --static asked for one.
    promise: str | None = None
    ranges: tuple[SideRange, SideRange] | None = None
    #: The runtimes that hosted OLD and NEW (RuntimeChoice JSON), None when not loaded.
    runtimes: tuple[Any, Any] = field(default=(None, None))
    #: NEW (and where it failed, OLD) loaded on each release of OLD's range;
    #: None when the ranges were compared by symbols only.
    range_check: Coverage | None = None

    @property
    def compatible(self) -> bool:
        """No change that breaks callers, apart from suppressed ones."""
        return all(c.compatible or c.suppressed for c in self.changes)

    @property
    def complete(self) -> bool:
        return not self.not_compared

    @property
    def verdict(self) -> str:
        """ "incompatible" (a break was seen, whatever was not compared),
        "cannot judge" (no break seen, but not everything was compared),
        "compatible"."""
        if not self.compatible:
            return "incompatible"
        return "compatible" if self.complete else "cannot judge"

    @property
    def exit_code(self) -> int:
        return {"incompatible": 1, "cannot judge": 2}.get(self.verdict, 0)

    def to_json(self) -> dict[str, Any]:  # diff's --json (a JSON boundary)
        out: dict[str, Any] = {
            "old": self.old_path,
            "new": self.new_path,
            "mode": self.mode,
            "compatible": self.compatible,
            "verdict": self.verdict,
            "complete": self.complete,
            "not_compared": list(self.not_compared),
            "promise": self.promise,
            "summary": {
                "changes": len(self.changes),
                "incompatible": sum(not c.compatible for c in self.changes),
                "suppressed": sum(c.suppressed for c in self.changes),
                "notes": sum(c.note for c in self.changes),
            },
            "changes": [c.to_json() for c in self.changes],
            "warnings": list(self.warnings),
            "runtime_ranges": None
            if self.ranges is None
            else {"old": self.ranges[0].to_json(), "new": self.ranges[1].to_json()},
            "runtimes": {"old": self.runtimes[0], "new": self.runtimes[1]},
            "range_check": None
            if self.range_check is None
            else {
                "loads": self.range_check.loads,
                "same_file": self.range_check.same_file,
                "releases": [c.to_json() for c in self.range_check.rows],
            },
        }
        return out
