"""The conformance checks as data: one record per check with a stable id.

Ids never change once released (CI configurations pass them to --select and
--ignore). the checks reference (src/tvmffi_cli/docs/checks.md) is generated from this table by
`python -m tvmffi_cli.conform.registry --markdown` and a test keeps them equal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from .registry_base import ERROR, FUNCTION, LIBRARY, LOAD, PROBE, STATIC, WARNING, WHEEL, Check
from .registry_gpu import GPU_CHECKS
from .registry_kernel import KERNEL_CHECKS, TYPE_LAYOUT

# The words of a record, for the modules that read the table.
__all__ = ["ERROR", "FUNCTION", "LIBRARY", "LOAD", "PROBE", "STATIC", "WARNING", "WHEEL"]
__all__ += ["Check", "KERNEL_CHECKS", "TYPE_LAYOUT"]

CHECKS: list[Check] = [
    Check(
        "export-names",
        "Exported names follow the TVM-FFI families",
        WARNING,
        FUNCTION,
        STATIC,
        what="Every exported symbol starting with `__tvm_ffi` is either a function "
        "`__tvm_ffi_<name>` with a non-empty C identifier as name, or one of the special "
        "symbols `__tvm_ffi__metadata_<name>`, `__tvm_ffi__doc_<name>`, "
        "`__tvm_ffi__library_bin`, `__tvm_ffi__library_ctx`, "
        "`__tvm_ffi__cubin_<name>[_end]`.",
        why="Loaders treat `__tvm_ffi_` as the function prefix and `__tvm_ffi__` as reserved. "
        "A misspelt special symbol is silently ignored; an unknown `__tvm_ffi__` name may "
        "collide with a future special.",
        fix="Rename the symbol, or make it hidden (`static` or "
        '`__attribute__((visibility("hidden")))`) if it is not part of the interface.',
    ),
    Check(
        "has-functions",
        "The library exports TVM-FFI functions",
        ERROR,
        LIBRARY,
        STATIC,
        what="At least one `__tvm_ffi_<name>` function is exported (visible in the dynamic "
        "symbol table).",
        why="A file with no TVM-FFI functions (a plain system library, or one whose functions "
        "are all hidden) offers a host nothing to call; passing it would certify nothing.",
        fix="Export the functions (`TVM_FFI_DLL_EXPORT`, default visibility), or check the "
        "library you meant to.",
    ),
    Check(
        "orphan-getter",
        "Metadata and doc getters belong to a function",
        WARNING,
        FUNCTION,
        STATIC,
        what="For every `__tvm_ffi__metadata_<name>` and `__tvm_ffi__doc_<name>` the library "
        "also exports the function `__tvm_ffi_<name>`.",
        why="Tools list functions from their symbols; a getter without its function documents "
        "something nobody can call, usually a renamed or removed export.",
        fix="Export the function under the same name, or drop the getter.",
    ),
    Check(
        "symbol-kind",
        "Function symbols are code",
        ERROR,
        FUNCTION,
        STATIC,
        what="`__tvm_ffi_<name>` functions and the metadata/doc getters are function symbols "
        "in an executable section, not data objects.",
        why="Callers jump to these addresses. A data symbol with a function's name crashes "
        "the caller (no-execute page) or runs garbage.",
        fix="Define the symbol as a function with the safe-call signature "
        "`int (void*, const TVMFFIAny*, int32_t, TVMFFIAny*)`.",
    ),
    Check(
        "library-bin",
        "`__tvm_ffi__library_bin` is consistent",
        ERROR,
        LIBRARY,
        STATIC,
        what="The embedded module blob stays within the symbol's size and its `nbytes`; the "
        "import tree's `indptr` starts at 0 and never decreases; child indices are in "
        "range; there is at most one `_lib` entry; every module entry can be read.",
        why="The loader decodes this blob when the library is loaded; an inconsistent blob "
        "makes loading fail, or reads past the symbol into unrelated memory.",
        fix="Regenerate the blob with the serializer of your compiler; check that `nbytes` "
        "counts the bytes after the header and that every string and bytes field carries "
        "its real length.",
    ),
    Check(
        "context-symbols",
        "Context symbols are writable pointer-sized data",
        ERROR,
        LIBRARY,
        STATIC,
        what="Every `__TVMFFI<name>` context symbol and `__tvm_ffi__library_ctx` is a writable "
        "data object exactly one pointer wide, and `<name>` names a C API function the "
        "loader can provide.",
        why="The loader stores entry points (and the library's module) into these variables "
        "at load time. A read-only or narrower variable crashes the load or overwrites its "
        "neighbours; an unknown name is never filled and stays NULL.",
        fix="Declare them as `void* __TVMFFI<name> = NULL;` (not `const`), with a name from "
        "the C API.",
    ),
    Check(
        "c-api-imports",
        "Imported TVMFFI functions exist in the C ABI",
        ERROR,
        LIBRARY,
        STATIC,
        what="Every imported (undefined) symbol starting with `TVMFFI` is one of the 50 "
        "functions of the stable C API.",
        why="A runtime provides exactly those. Any other `TVMFFI*` import fails at load time "
        "or, with lazy binding, at the first call.",
        fix="Use only the stable C API functions, or link the implementation of the extra "
        "symbol into the library.",
    ),
    Check(
        "min-runtime",
        "The library runs on the oldest runtime it must support",
        ERROR,
        LIBRARY,
        STATIC,
        what="With `--min-runtime VERSION` (or `min-runtime` in the configuration), the "
        "runtime of apache-tvm-ffi VERSION exports every runtime symbol the library imports: "
        "C API functions (also those received through a `__TVMFFI<name>` context symbol) "
        "and tvm::ffi C++ symbols, except those its sibling libraries (DT_NEEDED next to it) "
        "define. Without it the check passes and reports the oldest release the library "
        "needs (the table of every release's exports is "
        "`src/tvmffi_cli/abi/release_exports.py`).",
        why="A library built against a newer runtime than its users have fails to load with "
        "an unresolved symbol, or reads past a struct that was smaller in the older "
        "release.",
        fix="Build against the headers of the oldest runtime you support, or raise the "
        "minimum version you declare (`apache-tvm-ffi>=VERSION`).",
    ),
    Check(
        "max-runtime",
        "The library runs on the newest runtime it must support",
        ERROR,
        LIBRARY,
        STATIC,
        what="With `--max-runtime VERSION` (or `max-runtime` in the configuration), the "
        "runtime of apache-tvm-ffi VERSION still exports every runtime symbol the library "
        "imports (releases drop C++ symbols: the by-value `tvm::ffi::json::Stringify` is "
        "gone from 0.1.13). Without it the check passes and reports the newest release "
        "that can host the library.",
        why="A library importing a C++ symbol a newer runtime dropped loads lazily and dies "
        "with an undefined symbol when the function is first called.",
        fix="Rebuild against the newer release's headers, or cap the version you declare "
        "(`apache-tvm-ffi<NEXT`).",
    ),
    Check(
        "declared-runtime",
        "The wheel's declared runtime range runs its libraries",
        ERROR,
        WHEEL,
        STATIC,
        what="With a wheel as input: every apache-tvm-ffi release (of those known, "
        "`src/tvmffi_cli/abi/versions.py`) that the wheel's `Requires-Dist` on apache-tvm-ffi "
        "admits exports every C function and C++ symbol each TVM-FFI library of the wheel "
        "imports. No requirement admits every release. Where an admitted release's runtime "
        "is at hand (cached, `tvmffi inspect --verify-range` fetches them), each library is "
        "also loaded on it in the sandboxed worker: one that aborts or is refused there "
        "fails the check with the library's own message (a library whose load fails for a "
        "missing dependency other than the runtime, such as libz3, is listed as not "
        "verifiable). A wheel that ships its own runtime (a library defining the C API) and "
        "declares no requirement passes.",
        why="The declared range decides which runtime users get. A release inside it that "
        "lacks an imported symbol makes the library fail to load, or (lazy binding) die with "
        "an undefined symbol at the first call of the function that needs it.",
        fix="Narrow `Requires-Dist: apache-tvm-ffi` to the releases the libraries run on (the "
        "message names the first release that breaks and the symbols it lacks, or what the "
        "library said when it aborted there), or stop importing those symbols.",
    ),
    Check(
        "library-load",
        "The library loads",
        ERROR,
        LIBRARY,
        LOAD,
        what="The library loads through the runtime in a worker process without crashing, "
        "hanging or raising, with every embedded module kind accounted for.",
        why="Nothing else can be checked, or used, when loading fails.",
        fix="Look at the message: missing dependencies, unresolved symbols and crashing static "
        "constructors are the usual causes.",
    ),
    Check(
        "exit-clean",
        "The process exits cleanly after loading the library",
        ERROR,
        LIBRARY,
        LOAD,
        what="A fresh process loads the library, releases it and exits normally: no crash "
        "and no hang (within --timeout) in its destructors, `atexit` handlers or the "
        "release of the objects and globals it registered.",
        why="A crash at exit turns every successful program using the library into a "
        "failing one (a core dump and a non-zero status in CI); a hang never lets it "
        "end.",
        fix="Do not touch other libraries' state (the runtime, CUDA, Python) from static "
        "destructors; release global objects explicitly or leak them on purpose.",
    ),
    TYPE_LAYOUT,
    Check(
        "metadata-json",
        "Metadata getters return valid JSON with a parsable type_schema",
        ERROR,
        FUNCTION,
        LOAD,
        what="Called with no arguments, `__tvm_ffi__metadata_<name>` returns 0 and a string "
        "holding a JSON object whose `type_schema` is a string with a function type "
        "schema that parses.",
        why="Tools (stub generators, `tvmffi inspect`, this checker) build signatures and "
        "typed calls from it.",
        fix="Generate the getter with `TVM_FFI_DLL_EXPORT_TYPED_FUNC` and "
        "`TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1`, or emit "
        '`{"type_schema": "<escaped JSON>"}` by hand.',
    ),
    Check(
        "doc-utf8",
        "Docs are valid UTF-8",
        ERROR,
        FUNCTION,
        LOAD,
        what="Called with no arguments, `__tvm_ffi__doc_<name>` returns 0 and a string that "
        "is valid UTF-8.",
        why="Strings in TVM-FFI are UTF-8; frontends decode docs as such and fail otherwise.",
        fix="Store the docstring in UTF-8 (check the source file encoding).",
    ),
    Check(
        "arg-bounds",
        "No argument read past num_args",
        ERROR,
        FUNCTION,
        PROBE,
        what="Called with zero arguments, and (with metadata) with one argument too few, the "
        "function never reads beyond `args[num_args-1]`. Exported functions and the "
        "global functions the library registers while loading are both probed. The argument array is placed "
        "right before an unreadable guard page, so such a read faults; the fault address "
        "(reported by the worker's SIGSEGV handler; else the same call with readable memory "
        "after the arguments) tells a read past `num_args` from any other fault. A global registered without a signature whose zero-argument call faults in "
        "that guard page is a warning: nothing declares the arguments it needs, and C++ "
        "lambdas over PackedArgs commonly index without a count check. A fault elsewhere "
        "(a NULL dereference whatever the input) is a `no-crash` error for every function.",
        why="Callers pass exactly `num_args` values; the memory after them belongs to "
        "someone else. Reading it returns garbage or crashes.",
        fix="Check `num_args` before touching `args[i]` and raise a TypeError when it is "
        "wrong (`TVM_FFI_DLL_EXPORT_TYPED_FUNC` does this for you).",
    ),
    Check(
        "wrong-type",
        "Arguments of the wrong type raise an error",
        ERROR,
        FUNCTION,
        PROBE,
        what="Where the metadata declares a parameter type, passing a value of a clearly "
        "incompatible type makes the call return -1 with a raised error: it neither "
        "succeeds nor crashes.",
        why="Callers in dynamic languages pass whatever they hold; reading an Any without "
        "checking its type index reinterprets the bits (a string pointer as an integer, an "
        "integer as a pointer).",
        fix="Check `args[i].type_index` before reading the payload, and raise a TypeError.",
    ),
    Check(
        "arg-refcount",
        "Object arguments keep their reference counts",
        ERROR,
        FUNCTION,
        PROBE,
        what="After the call (and after its result is released) every object argument has the "
        "same strong reference count as before. A reference kept on purpose (a cache, a "
        "context stack) is kept once: the same call repeated leaves the count where it was, "
        "and passes with a note; a leak grows on every call and fails, and so does a "
        "released reference. A function named for registering (`register`, `Register...`) "
        "that returns None and keeps one reference to each object argument per call is the "
        "pattern of a registry (TVM's RegisterReducer keeps what it is given by design): a "
        "warning naming the pattern. Functions without metadata are called with a String, an "
        "int, Arrays of ints, floats, strings and arrays, a Map, a Function and the tensors "
        "of the signature search (see `tensor-bounds`) to find out.",
        why="Arguments are borrowed views. A callee that keeps an extra reference on every "
        "call leaks the object; one that releases a reference frees the caller's object under "
        "it.",
        fix="Only increment a reference when storing the object somewhere that outlives the "
        "call, and release it there; never release an argument.",
    ),
    Check(
        "args-unchanged",
        "The argument array is not modified",
        ERROR,
        FUNCTION,
        PROBE,
        what="The bytes of the `args` array are identical before and after the call.",
        why="`args` is `const TVMFFIAny*`: callers reuse the array (for example across "
        "retries and in loops) and rely on it.",
        fix="Copy the values you need to change into locals.",
    ),
    Check(
        "error-protocol",
        "Return codes follow the error protocol",
        ERROR,
        FUNCTION,
        PROBE,
        what="The return value is 0 or -1 (-2 only when a frontend signal is pending); after "
        "-1 a raised error with a non-empty kind is waiting for the caller; after 0 "
        "none is.",
        why="Callers fetch the error with `TVMFFIErrorMoveFromRaised` only after -1. Any "
        "other code, a missing error or a stale one misreports failures or blames the "
        "next call.",
        fix="Raise with `TVMFFIErrorSetRaisedFromCStr(kind, message)` and return -1; return 0 "
        "only on success.",
    ),
    Check(
        "result-invariants",
        "Results are well-formed owned values",
        ERROR,
        FUNCTION,
        PROBE,
        what="On success the result has a valid type index (static or registered), is never "
        "a borrowed kind (`kTVMFFIRawStr`, `kTVMFFIByteArrayPtr`, "
        "`kTVMFFIObjectRValueRef`), has zero padding and zero unused payload bytes for "
        "POD values, and an object result is alive with a header type index equal to the "
        "Any's, never an argument handed back without a reference of its own (the caller's "
        "release would free an object it still owns). On failure the result is still None.",
        why="The result is an owning Any: the caller releases it, hashes and compares it "
        "bytewise, and casts object results by their type index.",
        fix="Build results with the helpers of your binding, zero the whole Any first, return "
        "strings as `kTVMFFISmallStr`/`kTVMFFIStr` (`TVMFFIStringFromByteArray`), and do not "
        "write the result before an error.",
    ),
    Check(
        "no-leak",
        "No objects leak",
        ERROR,
        FUNCTION,
        PROBE,
        what="A returned object is owned once, by the caller: its strong reference count "
        "(read from the object header, the ABI's, so objects made by C++ header code count "
        "too) is 1 unless the library keeps it. A result returned with extra references "
        "that grow on a repeat call (`new Array(...)` never released) leaks; one kept once "
        "(a cache) passes. With tvmffi's runtime, its count of live objects is also back to "
        "its value before the call once the result (and any raised error) is released, or "
        "grows only on the first call.",
        why="A leak per call grows without bound in a serving process.",
        fix="Release every object you create or retain that is not returned; return C++ "
        "objects by value (`return arr;`), never through `new`.",
    ),
    Check(
        "tensor-bounds",
        "Tensor accesses stay inside the data",
        ERROR,
        FUNCTION,
        PROBE,
        what="Every tensor argument's data fills one page between two unreadable guard pages "
        "(and a byte_offset variant points `data` into the lower guard page), so reading "
        "or writing one element past either end faults inside the call; the same call with "
        "the data in ordinary memory tells such a fault from any other. Tensors are probed "
        "with every DLPack type code (and int8, int64, float16 besides the codes' usual "
        "widths), 1 to 3 dimensions (the kernel's own number of dimensions for the dtype "
        "variants: a kernel that takes only 2-d tensors gets 2-d int8), strides and a byte "
        "offset. A typed tensor parameter gets them all. A function without metadata gets "
        "them once a signature search found a call it accepts: 1 to 3 tensors of 1 or 2 "
        "dimensions, alone or followed by an int or a float, or ints and floats alone "
        "(the signature a typed C++ function names in its argument error is tried first). "
        "Ignoring `byte_offset` is an error like any other access outside the data.",
        why="Memory next to a tensor belongs to other tensors or the allocator: an "
        "off-by-one write corrupts them silently, a read returns garbage.",
        fix="Loop to `numel` (the product of the shape), index with the strides and add "
        "`byte_offset` to `data`; check `ndim`, `dtype` and `device` first and raise when "
        "they are not what the kernel handles.",
    ),
    *KERNEL_CHECKS,
    Check(
        "no-crash",
        "No crash",
        ERROR,
        FUNCTION,
        PROBE,
        what="No probe call kills the process with a signal (SIGSEGV, SIGABRT, SIGFPE, ...), "
        "except the faults already reported by `arg-bounds`, `wrong-type`, "
        "`tensor-bounds` and `device-mismatch` (a fault in a CUDA tensor's memory). A tensor "
        "of an unexpected dtype, shape or layout must be refused with a raised error. "
        "Without metadata a crash on object arguments is not a finding (nothing says what "
        "the function takes), except when the same call with float32 tensors succeeded. A "
        "crash after other calls of the same function is run again alone: when it then "
        "returns, the finding says the crash needs the earlier calls (state the function "
        "keeps between calls).",
        why="A crash takes down the host process (a Python interpreter, a server) with it.",
        fix="Validate arguments and raise errors instead of asserting or dereferencing "
        "unchecked pointers.",
    ),
    Check(
        "no-hang",
        "No hang",
        ERROR,
        FUNCTION,
        PROBE,
        what="Every probe call returns within the timeout (--timeout, default 10 s). The "
        "first call that does not return costs one timeout; the function's other calls then "
        "share one second, and those that do not fit are skipped with the reason.",
        why="A call that never returns blocks its caller forever.",
        fix="Check loop bounds and waits on arguments you did not validate.",
    ),
    Check(
        "valid-call",
        "A call with valid arguments behaves",
        ERROR,
        FUNCTION,
        PROBE,
        what="With metadata, arguments synthesized from the declared parameter types give a "
        "call that succeeds or fails with a raised error, and on success returns a value "
        "of the declared return type.",
        why="This is what every well-typed caller will do first.",
        fix="Make the declared signature match what the function accepts and returns.",
    ),
    Check(
        "thread-safety",
        "Concurrent calls agree",
        WARNING,
        FUNCTION,
        PROBE,
        what="When the valid call succeeds, the same call made from N threads at once "
        "(`--threads N`, default 4) gives N results identical to each other and to the "
        "single-threaded result, with no crash and unchanged reference counts; int results "
        "that differ because each is the reference count of an argument during its call (a "
        "use count, such as `testing.object_use_count`) pass with that reason. A function "
        "taking tensors whose values matter is called instead with arguments of each "
        "thread's own (tensor and float values), for 6 rounds, each thread getting what the "
        "same call alone gives: a static scratch buffer shared by the threads shows. For "
        "that the threads are pinned to one CPU with a 100 us time slice (Linux 6.12+), and "
        "the tensors grow (up to 2^20 elements) until a call takes about 2 ms of CPU, so calls "
        "are preempted inside each other on every run. The ABI does not promise thread "
        "safety: this is a warning unless `--threads` is given, then an error.",
        why="Kernels are called from many threads (data loaders, servers); hidden shared "
        "state gives racy results.",
        fix="Avoid writable static state, or guard it; keep per-call state on the stack.",
    ),
]

# The CUDA checks (their data lives beside their logic, registry_gpu.py).
CHECKS += [Check(*row) for row in GPU_CHECKS]

BY_ID = {c.id: c for c in CHECKS}
assert len(BY_ID) == len(CHECKS)


def get(check_id: str) -> Check:
    return BY_ID[check_id]


def parse_ids(values: Iterable[str] | None) -> set[str]:
    """Comma- or space-separated check ids (repeatable option values) -> set of ids.
    Unknown ids raise InputError naming the valid ones."""
    from ..errors import InputError

    ids: set[str] = set()
    for v in values or ():
        for part in v.replace(",", " ").split():
            if part not in BY_ID:
                raise InputError(f"unknown check id {part!r} (known: {', '.join(BY_ID)})")
            ids.add(part)
    return ids


def selected(
    select: set[str] | frozenset[str] | None = None, ignore: set[str] | frozenset[str] | None = None
) -> list[str]:
    """The ids to run: all, or `select`, minus `ignore` (sets of ids)."""
    ids = [c.id for c in CHECKS if not select or c.id in select]
    return [i for i in ids if not ignore or i not in ignore]


#: The checks reference as installed (package data).
DOCS = Path(__file__).resolve().parents[1] / "docs" / "checks.md"


def markdown() -> str:
    """The checks reference (src/tvmffi_cli/docs/checks.md, shipped in the
    package): every check with its docs, and the CI snippet."""
    out: list[str] = []
    w = out.append
    w("# `tvmffi conform` checks\n")
    w(
        "Generated from `src/tvmffi_cli/conform/registry.py` by "
        "`python -m tvmffi_cli.conform.registry --markdown > src/tvmffi_cli/docs/checks.md` "
        "(this file is installed with the package: `tvmffi conform --help` names its path); "
        "a test keeps the two in sync.\n"
    )
    w(
        "`tvmffi conform LIB` exits 0 when no check of severity *error* fails, 1 when one does, "
        "and 2 when what was given is wrong (LIB cannot be read or is not a shared library, "
        "`TVMFFI_RUNTIME` is not a usable library, an option value is out of range). "
        "Run a subset with `--select ID,ID` or skip some with "
        "`--ignore ID,ID`. Static checks read the file; the others load the library in worker "
        "processes (`-j N` of them) and call each function with a timeout (`--timeout S`), so a "
        "crash or a hang is reported for that function and the run goes on.\n"
    )
    w(
        "Every exported `__tvm_ffi_<name>` function and every global function the library "
        "registers while it loads is probed. Each failed check carries a `reproduce` command "
        "(printed in the report, a field in `--json`) that shows the failure again and exits "
        "1. `--min-runtime VERSION` fails a library that needs a newer apache-tvm-ffi runtime, "
        "`--max-runtime VERSION` one that needs an older one; "
        "`--runtime official|PATH` runs the checks against another runtime (checks that need "
        "tvmffi's instrumented runtime are then skipped with the reason). `--threads N` makes "
        "`thread-safety` an error checked with N threads.\n"
    )
    w(
        "Each function's probes start in a new probe child forked from the worker that "
        "loaded the library, so they start from the state the load left, whatever the "
        "functions probed before did (`isolation` in `--json`; `TVMFFI_CONFORM_ZYGOTE=0`, or "
        "a library that starts threads while loading, makes functions share a process, and "
        "the report says so). The same library and options give the same verdicts at any "
        "`-j`, unless a function's own behaviour varies (a race its threads step catches in "
        "one run and not in another, a call that takes about `--timeout`). A crash that "
        "needs earlier calls of the same function (the call returns when "
        "run alone) says so. A call that does not return costs one `--timeout`: the "
        "function's other calls then share one second, and what does not fit is skipped "
        "with the reason. A finding names the call that failed with its exact arguments "
        "(dtype, shape, strides, byte offset, device and values of every tensor; `args` in "
        "`--json`), its reproducer is `tvmffi call` with those arguments where the command "
        "line can build them (`--guard` when tensors are involved, as the probe put their "
        "data at guard pages), and its fix line matches its cause where the check's "
        "general fix would not (a CUDA tensor read as host memory, `byte_offset` ignored).\n"
    )
    w(
        "Settings and suppressions live in `[tool.tvmffi.conform]` of `pyproject.toml` (or a "
        "file given with `--config`); every suppression names a check and gives a reason, and "
        "suppressed findings stay in the report without failing the run:\n"
    )
    w("```toml")
    w(CONFIG_SNIPPET.rstrip("\n"))
    w("```\n")
    w(
        "Only findings of severity *error* fail the run; in JUnit XML they are the only "
        "`<failure>` elements (warnings are a `warning` property and system-out, suppressed "
        "findings are skipped with their reason). GitHub annotations carry `file=` (the "
        "library), one per check, the most severe first.\n"
    )
    w("| id | title | severity | scope | how |")
    w("|---|---|---|---|---|")
    for c in CHECKS:
        w(f"| [`{c.id}`](#{c.id}) | {c.title} | {c.severity} | {c.scope} | {c.stage} |")
    w("")
    for c in CHECKS:
        w(f"## {c.id}\n")
        w(
            f"**{c.title}** — severity *{c.severity}*, one result per {c.scope}, "
            f"stage *{c.stage}*.\n"
        )
        w(f"- **What:** {c.what}")
        w(f"- **Why:** {c.why}")
        w(f"- **Fix:** {c.fix}")
        w("")
    w("## In CI (GitHub Actions)\n")
    w(
        "Failures become annotations on the run (`GITHUB_ACTIONS=true` is detected), and the "
        "JUnit report feeds any test-report action.\n"
    )
    w("```yaml")
    w(CI_SNIPPET.rstrip("\n"))
    w("```")
    return "\n".join(out) + "\n"


CONFIG_SNIPPET = """\
[tool.tvmffi.conform]
ignore = ["doc-utf8"]
threads = 8
min-runtime = "0.1.8"

[[tool.tvmffi.conform.suppress]]
check = "no-leak"
function = "fill_cache"
reason = "keeps a process-wide cache by design"
"""

CI_SNIPPET = """\
name: tvm-ffi conformance
on: [push, pull_request]
jobs:
  conform:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Build the library
        run: make  # your build; produces build/libmykernels.so
      - name: Install tvmffi
        run: pip install "tvmffi @ git+https://github.com/OWNER/tvmffi"
      - name: Check the TVM-FFI ABI
        run: tvmffi conform build/libmykernels.so --junit-xml conform.xml -j 2
      - name: Keep the report
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: tvmffi-conform
          path: conform.xml
"""


if __name__ == "__main__":  # pragma: no cover - used to regenerate src/tvmffi_cli/docs/checks.md
    if sys.argv[1:] == ["--markdown"]:
        sys.stdout.write(markdown())
    else:
        for c in CHECKS:
            print(f"{c.id:18} {c.severity:8} {c.title}")
