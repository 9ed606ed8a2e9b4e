"""Turn what the probe worker observed about one function into check results.

Input (built by runner.py from the worker's events):
  plan      list of step names the worker planned (None if it never got there)
  note      why typed probes are missing (no metadata, ...), or None
  obs       step -> observation dict (see conform/probe_task.py), or {"skipped": why}
  crashes   step -> {"signal": "SIGSEGV"|None, "hang": bool, "oob": bool|None}
  getters   {"metadata", "doc"} subset
Pure functions of those facts: unit-testable without running anything.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Collection

from . import checks_kernel, sigs
from .checks_crash import (
    FunctionFacts,
    Obs,
    _crash_text,
    _output,
    check_no_crash,
    check_no_hang,
    check_tensor_bounds,
)
from .checks_gpu import CHECKS as GPU_CHECKS
from .registry import WARNING
from .results import ERROR, FAIL, PASS, SKIP, Result
from .sigs import K_NONE

CALL_BASES = ("zero-args", "too-few", "valid")


def kind_name(ti: int | None) -> str:
    """A type index in words (abi's table of static type names)."""
    from ..abi.constants import STATIC_TYPE_NAMES

    name = STATIC_TYPE_NAMES.get(ti) if ti is not None else None
    return name or f"type index {ti}"


def _getter_check(cid: str, what: str, f: FunctionFacts) -> Result | bytes:
    if what not in f.getters:
        return Result(cid, f.name, SKIP, f"no {what} getter")
    if what in f.crashes:
        return Result(
            cid, f.name, FAIL, f"the {what} getter {_crash_text(f.crashes[what], f.timeout)}"
        )
    o = f.obs.get(what)
    if o is None:
        return Result(cid, f.name, ERROR, f"the {what} getter was not run")
    if "skipped" in o:
        return Result(cid, f.name, FAIL, o["skipped"])
    if o.get("rc") != 0:
        err = o.get("error") or {}
        return Result(
            cid,
            f.name,
            FAIL,
            f"the {what} getter returned {o.get('rc')}"
            + (f" ({err.get('kind')}: {err.get('message')})" if err else ""),
        )
    if o.get("value_hex") is None:
        return Result(
            cid,
            f.name,
            FAIL,
            f"the {what} getter returned {kind_name(o.get('result_type_index'))}, not a string",
        )
    return bytes.fromhex(o["value_hex"])


def check_metadata_json(f: FunctionFacts) -> Result:
    got = _getter_check("metadata-json", "metadata", f)
    if isinstance(got, Result):
        return got
    from ..abi import typeschema as schema
    from ..errors import FormatError
    from . import sigs

    try:
        text = got.decode("utf-8")
    except UnicodeDecodeError as e:
        return Result(
            "metadata-json", f.name, FAIL, f"metadata is not UTF-8 ({e.reason} at byte {e.start})"
        )
    try:
        _md, spec = schema.parse_metadata(text)
        if spec is not None and not (spec.is_function or spec.is_untyped_function):
            return Result(
                "metadata-json",
                f.name,
                FAIL,
                f"type_schema is {spec.render()}, not a function type",
            )
        sigs.parse_metadata(text)
    except (FormatError, sigs.SchemaError) as e:
        return Result("metadata-json", f.name, FAIL, f"{e}")
    if spec is None:
        return Result("metadata-json", f.name, PASS, "valid JSON without a type_schema")
    return Result("metadata-json", f.name, PASS, spec.signature(f.name))


def check_doc_utf8(f: FunctionFacts) -> Result:
    got = _getter_check("doc-utf8", "doc", f)
    if isinstance(got, Result):
        return got
    try:
        got.decode("utf-8")
    except UnicodeDecodeError as e:
        return Result(
            "doc-utf8",
            f.name,
            FAIL,
            f"doc is not valid UTF-8: byte {got[e.start]:#04x} at offset {e.start} ({e.reason})",
        )
    return Result("doc-utf8", f.name, PASS, f"{len(got)} bytes of UTF-8")


def check_arg_bounds(f: FunctionFacts) -> Result:
    msgs: list[str] = []
    ran: list[str] = []
    for step in ("zero-args", "too-few"):
        c = f.crashes.get(step)
        if c is not None and c.get("oob"):
            n = 0 if step == "zero-args" else len(f.params or ()) - 1
            msgs.append(
                f"out-of-bounds argument read: called with {n} argument(s), it read "
                f"past args[{n - 1}] into the guard page ({c.get('signal')})"
                if n
                else f"out-of-bounds argument read: called with 0 arguments, it read args[0] "
                f"from the guard page ({c.get('signal')})"
            )
        if step in f.obs or step in f.crashes:
            ran.append(step)
    if msgs:
        return Result(
            "arg-bounds", f.name, FAIL, "; ".join(msgs), output=_output(f, ["zero-args", "too-few"])
        )
    if not ran:
        return Result("arg-bounds", f.name, SKIP, "not probed")
    extra = "" if "too-few" in ran else " (one-too-few needs metadata with 2+ parameters)"
    return Result("arg-bounds", f.name, PASS, f"probed {' and '.join(ran)}{extra}")


def check_wrong_type(f: FunctionFacts) -> Result:
    steps = [s for s in (f.plan or ()) if s.startswith("wrong-type:")]
    if not steps:
        why = f.note or "no parameter has a type that rejects a string or an int"
        return Result("wrong-type", f.name, SKIP, why)
    bad: list[str] = []
    converted: list[str] = []
    done = 0
    for s in steps:
        c = f.crashes.get(s)
        if c is not None:
            if not c.get("hang"):
                bad.append(
                    f"parameter {s.split(':')[1]}: {_crash_text(c, f.timeout)} instead of raising"
                )
            continue
        o = f.obs.get(s)
        if o is None or "skipped" in o:
            continue
        done += 1
        if o.get("rc") == 0:
            wk = "a String" if o.get("wrong_kind") == 65 else "an int"
            ptype = str(o.get("param_type"))
            if sigs.own_type_converts(sigs.type_of_str(ptype)):
                converted.append(
                    f"parameter {o.get('param')} ({ptype}) took {wk} and the call succeeded: "
                    "the library's own type may convert plain values (as TVM's ir.Expr "
                    "makes an IntImm of an int)"
                )
                continue
            bad.append(
                f"parameter {o.get('param')} ({o.get('param_type')}) accepted {wk} and "
                "the call succeeded"
            )
    if bad:
        return Result("wrong-type", f.name, FAIL, "; ".join(bad))
    if not done:
        return Result("wrong-type", f.name, SKIP, "no wrong-type call completed")
    if converted:
        return Result("wrong-type", f.name, PASS, "; ".join(converted))
    return Result("wrong-type", f.name, PASS, f"{done} wrong-type call(s) raised")


def check_arg_refcount(f: FunctionFacts) -> Result:
    bad: list[str] = []
    seen = 0
    items = list(f.call_obs())
    t = f.obs.get("threads")
    if t and "refcounts" in t:
        items.append(("threads", t))
    kept: list[str] = []
    per_thread: list[str] = []
    # Every finding one reference kept per call by a call that returned None.
    registry_like = True
    for step, o in items:
        again = o.get("refcounts_repeat") or ()
        ended = o.get("refcounts_thread") or ()
        for i, (before, after) in enumerate(o.get("refcounts") or ()):
            seen += 1
            if before == after:
                continue
            if after > before and i < len(again) and again[i][1] <= again[i][0]:
                kept.append(f"{step}: argument {i}")
                continue
            if after > before and i < len(ended) and ended[i]:
                per_thread.append(f"{step}: argument {i}")
                continue
            if after > before and step == "threads" and per_thread:
                continue  # the same stacks, in the pool threads that are still alive
            # A registry keeps one reference per call and returns None.
            calls = len(o.get("calls") or ()) if step == "threads" else 1
            ret = (f.obs.get("valid") or {}) if step == "threads" else o
            if not (after == before + calls and ret.get("result_type_index") == K_NONE):
                registry_like = False
            verb = "kept" if after > before else "released"
            grow = ", one more on a repeat call" if after > before and i < len(again) else ""
            bad.append(
                f"{step}: object argument {i} has {after - before:+d} strong "
                f"reference(s) after the call ({before} -> {after}){grow}; the callee "
                f"{verb} a reference it does not own"
            )
    if bad:
        r = Result(
            "arg-refcount",
            f.name,
            FAIL,
            bad[0] + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""),
        )
        if registry_like and _REGISTRY.search(f.name):
            return replace(
                r,
                severity_override=WARNING,
                message=f"{r.message}. {REGISTRY_PATTERN}",
                hint="If the function is a registry, nothing to fix (--ignore arg-refcount "
                "for it in the configuration); otherwise release what you do not store.",
            )
        return r
    if not seen:
        crashed = [s for s in f.crashes if s.startswith("objects:")]
        if crashed:
            return Result(
                "arg-refcount",
                f.name,
                SKIP,
                f"the calls with object arguments crashed ({', '.join(crashed)}); "
                "without metadata nothing says which types the function takes",
            )
        return Result(
            "arg-refcount",
            f.name,
            SKIP,
            "no object argument was passed" + (f" ({f.note})" if f.note else ""),
        )
    if per_thread:
        return Result(
            "arg-refcount",
            f.name,
            PASS,
            "a reference was kept on every call and released when the calling thread "
            f"ended (a per-thread context stack: not a leak): {', '.join(per_thread[:3])}",
        )
    if kept:
        return Result(
            "arg-refcount",
            f.name,
            PASS,
            f"a reference was kept once, not again on a repeat call (a cache or a context: "
            f"not a leak): {', '.join(kept[:3])}",
        )
    return Result("arg-refcount", f.name, PASS, f"{seen} object argument(s) unchanged")


#: Names of functions that register what they are given.
_REGISTRY = re.compile(r"regist", re.IGNORECASE)
REGISTRY_PATTERN = (
    "The pattern of a registry: the function returns nothing and keeps one reference to "
    "each object argument per call, as TVM's RegisterReducer does by design (a warning: a "
    "leak if the function is not meant to store them)"
)


def check_args_unchanged(f: FunctionFacts) -> Result:
    bad = [s for s, o in f.call_obs() if o.get("args_changed")]
    if bad:
        more = f", +{len(bad) - 4} more" if len(bad) > 4 else ""
        return Result(
            "args-unchanged",
            f.name,
            FAIL,
            f"the argument array was modified by the call ({', '.join(bad[:4])}{more})",
        )
    n = sum(1 for _ in f.call_obs())
    if not n:
        return Result("args-unchanged", f.name, SKIP, "no call completed")
    return Result("args-unchanged", f.name, PASS, f"{n} call(s) left args intact")


def _protocol_problem(o: Obs) -> str | None:
    rc = o.get("rc")
    err = o.get("error")
    if rc == -2:
        return "returned -2 (frontend error) although no frontend signal was pending"
    if rc not in (0, -1):
        return f"returned {rc}; only 0 and -1 are allowed"
    if rc == -1:
        if not err:
            return "returned -1 without raising an error"
        if not err.get("kind"):
            return "returned -1 with a raised error whose kind is empty"
    if rc == 0 and o.get("stale_error"):
        e = o["stale_error"]
        return f"returned 0 but left a raised error behind ({e.get('kind')}: {e.get('message')})"
    return None


def check_error_protocol(f: FunctionFacts) -> Result:
    bad: list[str] = []
    n = 0
    for step, o in f.call_obs():
        n += 1
        p = _protocol_problem(o)
        if p:
            bad.append(f"{step}: {p}")
    t = f.obs.get("threads")
    for i, c in enumerate((t or {}).get("calls") or ()):
        n += 1
        if c.get("rc") not in (0, -1):
            bad.append(f"threads[{i}]: returned {c.get('rc')}")
    return _verdict("error-protocol", f, bad, n, f"{n} call(s) followed the protocol")


def check_result_invariants(f: FunctionFacts) -> Result:
    bad: list[str] = []
    n = 0
    for step, o in f.call_obs():
        n += 1
        for p in o.get("result_problems") or ():
            bad.append(f"{step}: {p}")
        i = o.get("result_borrowed")
        if i is not None:
            bad.append(
                f"{step}: the result is object argument {i} itself, returned without a "
                "reference of its own: the caller's release of the result frees an object "
                "the caller still owns (a use after free)"
            )
    return _verdict("result-invariants", f, bad, n, f"{n} result(s) well-formed")


def _verdict(check: str, f: FunctionFacts, bad: list[str], n: int, passed: str) -> Result:
    """FAIL naming the first problems, SKIP when no call completed, else PASS."""
    if bad:
        return Result(check, f.name, FAIL, by_cause(bad))
    if not n:
        return Result(check, f.name, SKIP, "no call completed")
    return Result(check, f.name, PASS, passed)


def by_cause(bad: list[str], causes: int = 3) -> str:
    """ "step: problem" findings, one clause per problem with the steps that
    showed it ("objects:1, objects:4 (+3 more): the result is ..."), so a
    sentence is said once however many calls showed it."""
    groups: dict[str, list[str]] = {}
    for b in bad:
        step, sep, text = b.partition(": ")
        if not sep:
            step, text = "", b
        groups.setdefault(text, []).append(step)
    parts = []
    for text, steps in list(groups.items())[:causes]:
        named = [s for s in steps if s]
        more = f" (+{len(named) - 3} more)" if len(named) > 3 else ""
        parts.append(f"{', '.join(named[:3])}{more}: {text}" if named else text)
    if len(groups) > causes:
        parts.append(f"(+{len(groups) - causes} more kinds of problem)")
    return "; ".join(parts)


def check_no_leak(f: FunctionFacts) -> Result:
    bad: list[str] = []
    measured = 0
    notes: list[str] = []
    for step, o in f.call_obs():
        if o.get("result_kept"):
            k = o["result_kept"]
            if o.get("result_leak"):
                bad.append(
                    f"{step}: the result object came back with {k} extra strong reference(s) "
                    "(its header count), and the library keeps one more on every call: the "
                    "caller's release can never free it"
                )
            else:
                notes.append(f"{step}: result kept once (a cache)")
        d = o.get("live_delta")
        if d is None:
            if "result_refs" in o:
                measured += 1
            continue
        measured += 1
        if d == 0:
            continue
        again = o.get("live_delta_repeat")
        if again == 0:
            continue  # the first call filled a cache
        bad.append(
            f"{step}: {d:+d} live object(s) after the call"
            + (f", {again:+d} again on a repeat" if again is not None else "")
        )
    if bad:
        return Result("no-leak", f.name, FAIL, by_cause(bad))
    if not measured:
        return Result(
            "no-leak",
            f.name,
            SKIP,
            "no call was measured (no object result, no live-object count in the runtime, or "
            "no call completed)",
        )
    extra = f" ({'; '.join(notes[:2])})" if notes else ""
    return Result("no-leak", f.name, PASS, f"{measured} call(s) without leaks{extra}")


def check_valid_call(f: FunctionFacts) -> Result:
    if "valid" not in (f.plan or ()):
        return Result("valid-call", f.name, SKIP, f.note or "no metadata")
    if "valid" in f.crashes:
        return Result(
            "valid-call", f.name, SKIP, "the call did not return (see no-crash / no-hang)"
        )
    o = f.obs.get("valid")
    if o is None:
        return Result("valid-call", f.name, ERROR, "the valid call was not run")
    if "skipped" in o:
        return Result("valid-call", f.name, SKIP, o["skipped"])
    rc = o.get("rc")
    if rc == -1 and o.get("error"):
        e = o["error"]
        return Result("valid-call", f.name, PASS, f"raised {e.get('kind')}: {e.get('message')}")
    if rc != 0:
        return Result("valid-call", f.name, SKIP, f"returned {rc} (see error-protocol)")
    if o.get("result_problems"):
        return Result("valid-call", f.name, SKIP, "malformed result (see result-invariants)")
    if o.get("return_ok") is False:
        return Result(
            "valid-call",
            f.name,
            FAIL,
            f"returned {kind_name(o.get('result_type_index'))} but the metadata "
            f"declares {o.get('return_type')}",
        )
    return Result("valid-call", f.name, PASS, f"returned {kind_name(o.get('result_type_index'))}")


def check_thread_safety(f: FunctionFacts) -> Result:
    if "threads" not in (f.plan or ()):
        return Result("thread-safety", f.name, SKIP, f.note or "no metadata")
    if "threads" in f.crashes:
        c = f.crashes["threads"]
        if c.get("hang"):
            return Result(
                "thread-safety", f.name, SKIP, "the concurrent calls did not return (see no-hang)"
            )
        return Result(
            "thread-safety",
            f.name,
            FAIL,
            f"concurrent calls {_crash_text(c, f.timeout)}; the single call succeeded",
        )
    o = f.obs.get("threads")
    if o is None:
        v = f.obs.get("valid") or {}
        why = (
            "the valid call did not succeed"
            if v.get("rc") != 0 or "valid" in f.crashes
            else "not run"
        )
        return Result("thread-safety", f.name, SKIP, why)
    if "skipped" in o:
        return Result("thread-safety", f.name, SKIP, o["skipped"])
    if o.get("distinct"):
        return checks_kernel.thread_verdict(f, o)
    # A signature found by search: the threads' arguments are not those of
    # any single call observed, so they only have to agree with each other.
    found = checks_kernel.search_found(f)
    ref = None if found else (f.obs.get("valid") or f.obs.get("zero-args") or {}).get("fingerprint")
    calls = o.get("calls") or []
    rcs = [c.get("rc") for c in calls]
    fps = [c.get("fingerprint") for c in calls]
    if any(rc != 0 for rc in rcs):
        return Result(
            "thread-safety",
            f.name,
            FAIL,
            f"concurrent calls returned {rcs}; the single call succeeded",
        )
    # Reference counts changed by the concurrent calls are arg-refcount's finding.
    if len(set(fps)) != 1 or (ref is not None and fps[0] != ref):
        counted = _use_count(f, o)
        if counted is not None:
            return Result(
                "thread-safety",
                f.name,
                PASS,
                f"{len(calls)} concurrent calls and the single call gave different results, "
                f"each the strong reference count of argument {counted} during its call (a "
                "use count: the concurrent calls' own references change it), not a race",
            )
        distinct = len(set(fps + ([ref] if ref else [])))
        return Result(
            "thread-safety",
            f.name,
            FAIL,
            f"{len(calls)} concurrent calls and the single call gave {distinct} different results",
        )
    return Result("thread-safety", f.name, PASS, f"{len(calls)} concurrent calls agree")


def _use_count(f: FunctionFacts, o: Obs) -> int | None:
    """The object argument whose reference count the function returns, when
    its int results are that count: the single call's result is the count
    the call saw (the count before it, or one more for the reference a
    typed binding holds during the call), and each concurrent result lies
    between that and the same plus the other calls running at once."""
    single = f.obs.get("valid") or f.obs.get("zero-args") or {}
    value = single.get("int_value")
    calls = o.get("calls") or []
    vals = [c.get("int_value") for c in calls]
    if value is None or not vals or any(v is None for v in vals):
        return None
    for i, ((b, _), (tb, _)) in enumerate(zip(single.get("refcounts") or (), o["refcounts"])):
        off = value - b
        if off in (0, 1) and all(tb + off <= v <= tb + off + len(calls) - 1 for v in vals):
            return i
    return None


PROBE_CHECKS: dict[str, Callable[[FunctionFacts], Result | None]] = {
    "metadata-json": check_metadata_json,
    "doc-utf8": check_doc_utf8,
    "arg-bounds": check_arg_bounds,
    "wrong-type": check_wrong_type,
    "arg-refcount": check_arg_refcount,
    "args-unchanged": check_args_unchanged,
    "error-protocol": check_error_protocol,
    "result-invariants": check_result_invariants,
    "no-leak": check_no_leak,
    "tensor-bounds": check_tensor_bounds,
    "tensor-strides": checks_kernel.check_tensor_strides,
    "tensor-shapes": checks_kernel.check_tensor_shapes,
    "element-count": checks_kernel.check_element_count,
    "heap-growth": checks_kernel.check_heap_growth,
    "error-kind": checks_kernel.check_error_kind,
    "scaling": checks_kernel.check_scaling,
    "no-crash": check_no_crash,
    "no-hang": check_no_hang,
    "valid-call": check_valid_call,
    "thread-safety": check_thread_safety,
    **GPU_CHECKS,  # device-call, device-mismatch, device-bounds, stream-use, memcheck
}


def evaluate(f: FunctionFacts, ids: Collection[str]) -> list[Result]:
    out: list[Result] = []
    for cid, fn in PROBE_CHECKS.items():
        if cid not in ids:
            continue
        if f.tool_error:
            out.append(Result(cid, f.name, ERROR, f.tool_error))
            continue
        r = fn(f)
        if r is not None:  # None: not applicable (a CUDA check of a host function)
            out.append(_unsigned_global(f, r))
    return out


#: Said of a zero-argument crash of a global registered without a signature.
UNSIGNED_GLOBAL = (
    "a global registered with no signature, so nothing declares how many "
    "arguments it needs: a warning (--strict fails it)"
)


def _unsigned_global(f: FunctionFacts, r: Result) -> Result:
    """A global registered without a signature is usually a C++ lambda over
    PackedArgs, which indexes args without a count check: real libraries
    (the official test library, TileLang) crash when called with nothing.
    That call is outside any contract the library states, so it warns; an
    export, or a call with a declared arity, keeps the error."""
    if not (f.is_global and f.params is None and r.status == FAIL):
        return r
    # Only a fault in the argument guard page (arg-bounds): any other crash
    # (a NULL dereference whatever the input) stays an error.
    if r.check != "arg-bounds":
        return r
    return replace(r, severity_override=WARNING, message=f"{r.message} ({UNSIGNED_GLOBAL})")


def skipped(name: str, ids: Collection[str], why: str) -> list[Result]:
    return [Result(cid, name, SKIP, why) for cid in PROBE_CHECKS if cid in ids]
