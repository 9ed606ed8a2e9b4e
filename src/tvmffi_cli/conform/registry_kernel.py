"""Records of the checks of the kernel probes (probe_kernel.py,
probe_loops.py, probe_types.py; judged by checks_kernel.py and
checks_types.py), placed in the table by registry.py."""

from __future__ import annotations

from .registry_base import ERROR, FUNCTION, LIBRARY, LOAD, PROBE, WARNING, Check

TYPE_LAYOUT = Check(
    "type-layout",
    "Registered types have sound field layouts",
    ERROR,
    LIBRARY,
    LOAD,
    what="Every field of every object type the library registers while loading "
    "(`refl::ObjectDef`, or `TVMFFITypeRegisterField` by hand) has a positive size and a "
    "power-of-two alignment, an offset that is a multiple of it, lies after the "
    "object header and inside the object's size (when the type registered one), and "
    "overlaps no other field of the type or of its ancestors. Needs tvmffi's runtime "
    "(it lists the types a load registers).",
    why="Reflection reads and writes fields at these offsets: printing, comparing, "
    "hashing, serializing or setting an object with a wrong offset reads another "
    "field or memory past the object, and corrupts it on writes.",
    fix="Register fields with `refl::ObjectDef<T>().def_ro(...)` (member pointers give "
    "the offsets), or compute `offset`, `size` and `alignment` with `offsetof`, "
    "`sizeof` and `alignof` of the field itself.",
)

KERNEL_CHECKS: list[Check] = [
    Check(
        "tensor-strides",
        "Strided views give the result of their contiguous copies",
        ERROR,
        FUNCTION,
        PROBE,
        what="For a function taking tensors (with metadata, or a signature found by search), "
        "each tensor argument in turn is passed as a non-contiguous view (1-d: every second "
        "element, a broadcast with stride 0; 2-d: transposed, every second row and column, "
        "a broadcast row), the others contiguous, and the same call is made with a "
        "contiguous copy of that view holding the same values (small distinct integers, "
        "exact in every dtype; the memory a view skips holds other values). Both calls "
        "must return the same result and leave the same elements in every tensor, or the "
        "view must be refused with an error. Broadcast views are not given to an argument "
        "the function writes (its elements alias each other). Skipped when two identical "
        "calls already differ.",
        why="Frameworks pass views: a transposed matrix, a slice, an expanded bias. A kernel "
        "that walks memory in order instead of through the strides returns another "
        "result without any error: wrong numbers, silently.",
        fix="Index every tensor with its strides (`data[i * stride(0) + j * stride(1)]`), "
        "or check `IsContiguous()` and raise a ValueError for views you do not handle.",
    ),
    Check(
        "tensor-shapes",
        "Tensor arguments of mismatched shapes are refused",
        ERROR,
        FUNCTION,
        PROBE,
        what="For a function taking two or more tensors, each tensor argument in turn is "
        "given half the length (first dimension) of the others, every tensor's data ending "
        "at an unreadable guard page. The call must raise an error or stay inside every "
        "tensor's data; a fault in a guard page that the same call with the data in "
        "ordinary memory does not have is an access past the shorter tensor.",
        why="A kernel that sizes its loop by one argument and indexes the others with it "
        "overflows the heap when a caller passes tensors of different lengths: corrupted "
        "memory, or a crash far from the cause.",
        fix="Check that the shapes of the tensor arguments agree (`x.size(0) == y.size(0)`, "
        "...) and raise a ValueError when they do not.",
    ),
    Check(
        "element-count",
        "Element counts past 2^32 are not truncated",
        ERROR,
        FUNCTION,
        PROBE,
        what="Tensors of 2^32 + 64 elements (1-d, or 2^26 + 1 rows of 64) backed by 64 real "
        "elements before a guard page: a kernel that counts elements in 64 bits reads past "
        "the 64 and faults (the expected end of this probe, not a crash finding) or refuses "
        "the tensor; one that counts in 32 bits (`int n = x.numel()`) sees 64 elements "
        "and returns exactly what tensors of 64 elements give. Found without allocating "
        "16 GiB; probed when the result depends on the last element.",
        why="Tensors of more than 2^31 elements are real (large embeddings, KV caches): a "
        "32-bit count silently handles a fraction of them, or a negative count skips the "
        "work.",
        fix="Count and index with `int64_t` (`int64_t n = x.numel()`), or refuse tensors "
        "larger than the kernel supports with a ValueError.",
    ),
    Check(
        "heap-growth",
        "The heap does not grow with every call",
        ERROR,
        FUNCTION,
        PROBE,
        what="A function taking tensors is called with valid arguments (contiguous tensors of "
        "the layout it accepts, valid values for the rest) 8 times, then twice 32 times, in "
        "a C loop of tvmffi's runtime; "
        "the bytes malloc has handed out (glibc `mallinfo2`: small and mmap'ed chunks) "
        "must not grow by 16 bytes per call or more in both halves (skipped for a call of "
        "28 ms or more). Growth held by leaked "
        "objects or kept arguments is left to `no-leak` and `arg-refcount`. Needs "
        "tvmffi's runtime and glibc.",
        why="A buffer malloc'ed (or `new`ed) on every call and never freed grows a serving "
        "process until it is killed; caches fill during the warm-up and stay.",
        fix="Free what you allocate per call (RAII: `std::vector`, `std::unique_ptr`), or "
        "keep one buffer and reuse it.",
    ),
    Check(
        "error-kind",
        "Wrong inputs are refused as the caller's mistake",
        ERROR,
        FUNCTION,
        PROBE,
        what="Calls that pass what a function must refuse (a value of the wrong type, one "
        "argument too few or none, a tensor of another dtype, dimension count, layout or "
        "device, tensors of mismatched shapes, a view the kernel does not handle) and are "
        "refused raise an error of a caller's kind (TypeError, ValueError, IndexError, "
        "...), not InternalError, the kind of `TVM_FFI_ICHECK` and of a library's own "
        "bugs. Checked for functions with a declared signature or one found by search.",
        why="Callers handle TypeError and ValueError as their own mistake; an "
        "InternalError tells them the library is broken and to file a bug, and frontends "
        "show it with a backtrace.",
        fix="Check inputs with `TVM_FFI_THROW(TypeError)` / `TVM_FFI_THROW(ValueError)` (or "
        "`TVM_FFI_CHECK(cond, ValueError)`); keep `TVM_FFI_ICHECK` for invariants of your "
        "own code.",
    ),
    Check(
        "scaling",
        "Work grows linearly with the input",
        WARNING,
        FUNCTION,
        PROBE,
        what="For a function taking 1-d tensors: the CPU time of the calling thread per "
        "call, the least of 5 rounds (each round enough calls for about 0.2 ms, in a C "
        "loop), with every tensor of 256 and of 1024 elements (distinct values). A call "
        "at 1024 elements at least 8 times slower than at 256 (linear work: 4 times, "
        "quadratic: 16) and taking 20 us or more is reported. A warning (some algorithms "
        "are quadratic by nature); `--strict` fails it. Needs tvmffi's runtime.",
        why="O(n^2) work is invisible in tests with small inputs and stalls production "
        "with large ones.",
        fix="Replace the nested loop over the elements (a search or a count per element) "
        "with a sort, a hash map or a prefix sum.",
    ),
]
