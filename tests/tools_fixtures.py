"""Fixture libraries of the stubs/diff/extract tests (no tests here): C
sources holding a `__tvm_ffi__library_bin` image, written and compiled at
test time. Images are built with the project's encode helpers (libbin.encode,
modformats.encode_gpu)."""

import functools
import os
import struct

import fixturebuild
from tvmffi_cli.binary import libbin, modformats

SRC = fixturebuild.BUILD / "tools-src"  # stable path: the build cache keys on it
F32, I32, F16 = (2, 32, 1), (0, 32, 1), (2, 16, 1)


def fake_cubin(sm):
    """An ELF64 header of a CUDA binary (EM_CUDA = 190, ABI version 7, SM in
    the low byte of e_flags) followed by a marker."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x33, 7]) + bytes(7)
    hdr = ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, 0, sm, 64, 56, 0, 64, 0, 0)
    return hdr + b"CUBIN-BODY-" + bytes(range(32))


PTX = (
    b"//\n// Generated for a test\n//\n.version 7.8\n.target sm_80\n.address_size 64\n\n"
    b".visible .entry default_function_kernel(\n\t.param .u64 A,\n\t.param .u64 B\n)\n{\n\tret;\n}\n"
)
FATBIN = struct.pack("<IHH", 0xBA55ED50, 1, 16) + bytes(24)
OPENCL_SRC = b"__kernel void copy(__global float* a, __global float* b) { a[0] = b[0]; }\n"


def c_array(name, data, extra=""):
    body = ", ".join(str(b) for b in data) or "0"
    return f"EXPORT const unsigned char {name}[{max(1, len(data))}]{extra} = {{{body}}};\n"


def c_source(library_bin=None, cubins=(), functions=("main",)):
    out = [
        "#include <stdint.h>",
        '#define EXPORT __attribute__((visibility("default"), used))',
        "typedef struct { int32_t type_index; uint32_t pad; int64_t v; } AnyLike;",
        "EXPORT void* __tvm_ffi__library_ctx = 0;",
    ]
    if library_bin is not None:
        out.append(c_array("__tvm_ffi__library_bin", library_bin))
    for name, data in cubins:
        out.append(c_array(f"__tvm_ffi__cubin_{name}", data))
    for f in functions:
        out.append(
            f"EXPORT int __tvm_ffi_{f}(void* s, const AnyLike* a, int32_t n, AnyLike* r) "
            "{ (void)s; (void)a; (void)n; r->type_index = 0; return 0; }"
        )
    return "\n".join(out) + "\n"


def build_c(name, text):
    SRC.mkdir(parents=True, exist_ok=True)
    p = SRC / f"{name}.c"
    if not p.is_file() or p.read_text() != text:
        tmp = p.with_name(p.name + f".tmp{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, p)
    return fixturebuild.build(p, name=name, headers="none")


def cuda_module(kernels, payload, fmt="cubin"):
    """kernels: [(name, [dtype tuples])]."""
    return modformats.encode_gpu(
        fmt,
        [(k, args, ["blockIdx.x", "threadIdx.x"], [0] * len(args)) for k, args in kernels],
        payload,
    )


@functools.cache
def three_module_tree():
    """_lib -> cuda (cubin sm_86, two kernels) -> opencl (source)."""
    cuda = cuda_module(
        [("add_kernel", [F32, F32, F32, I32]), ("scale_kernel", [F16, F32])], fake_cubin(86)
    )
    opencl = modformats.encode_gpu(
        "cl", [("copy", [F32, F32], ["get_group_id(0)"], [0, 0])], OPENCL_SRC
    )
    lb = libbin.encode([("_lib", None), ("cuda", cuda), ("opencl", opencl)], [[1], [2], []])
    return build_c("three_modules", c_source(lb, functions=("main", "launch")))


@functools.cache
def diamond_module_tree():
    """A module tree that is not a chain: _lib at index 1 (not the root),
    cuda 0 imports _lib and two opencl modules, both of which import module 4 (kind x)."""
    blob = b"\x00" * 8
    opencl = modformats.encode_gpu(
        "cl", [("copy", [F32, F32], ["get_group_id(0)"], [0, 0])], OPENCL_SRC
    )
    cuda = cuda_module([("k", [F32])], fake_cubin(80))
    lb = libbin.encode(
        [("cuda", cuda), ("_lib", None), ("opencl", opencl), ("opencl", opencl), ("x", blob)],
        [[1, 2, 3], [], [4], [4], []],
    )
    return build_c("diamond_modules", c_source(lb))


@functools.cache
def tvm_cuda_output():
    """Like `tvm.compile(..., target="cuda")` + export_library: host functions
    as __tvm_ffi_<name>, the device code as a cuda module holding PTX, and a
    fatbin embedded as __tvm_ffi__cubin_<name>."""
    cuda = cuda_module([("default_function_kernel", [F32, F32, I32])], PTX, fmt="ptx")
    lb = libbin.encode([("_lib", None), ("cuda", cuda)])
    return build_c(
        "tvm_cuda",
        c_source(lb, cubins=[("fused_add", FATBIN)], functions=("main", "default_function")),
    )


@functools.cache
def hostile_names():
    """Module kinds that try to escape the output directory or be long."""
    blob = b"x" * 16
    lb = libbin.encode(
        [
            ("_lib", None),
            ("../../escape", blob),
            ("a/b\\c", blob),
            ("k" * 300, blob),
            (".hidden", blob),
            ("manifest.json", blob),
            ("esc\x1b[2J[bold]kind", blob),
        ]
    )
    return build_c("hostile_names", c_source(lb))


@functools.cache
def kernels_lib(version):
    """Two builds of a TVM-style library for `diff --static`: v2 drops a
    kernel, changes another's argument types, removes the opencl module and
    adds an export and a kernel; v3 only adds to v1."""
    if version == 1:
        cuda = cuda_module([("add", [F32, F32]), ("mul", [I32, I32])], fake_cubin(80))
        opencl = modformats.encode_gpu("cl", [("copy", [F32, F32], [], [0, 0])], OPENCL_SRC)
        lb = libbin.encode([("_lib", None), ("cuda", cuda), ("opencl", opencl)])
        funcs = ("main", "add")
    elif version == 3:  # v1 plus a kernel and an export: additions only
        cuda = cuda_module(
            [("add", [F32, F32]), ("mul", [I32, I32]), ("div", [F32, F32])], fake_cubin(80)
        )
        opencl = modformats.encode_gpu("cl", [("copy", [F32, F32], [], [0, 0])], OPENCL_SRC)
        lb = libbin.encode([("_lib", None), ("cuda", cuda), ("opencl", opencl)])
        funcs = ("main", "add", "div")
    else:
        cuda = cuda_module([("add", [F32, I32]), ("sub", [F32, F32])], fake_cubin(80))
        lb = libbin.encode([("_lib", None), ("cuda", cuda)])
        funcs = ("main", "add", "sub")
    return build_c(f"kernels_v{version}", c_source(lb, functions=funcs))


@functools.cache
def aborts_when_loaded():
    """A cuda module and a load-time constructor that aborts: any tool that
    loads it dies."""
    cuda = cuda_module([("k", [F32])], fake_cubin(90))
    lb = libbin.encode([("_lib", None), ("cuda", cuda)])
    text = c_source(lb) + (
        "#include <stdlib.h>\n__attribute__((constructor)) static void boom(void) { abort(); }\n"
    )
    return build_c("aborts_when_loaded", text)


@functools.cache
def truncated_library_bin():
    """The cuda module's blob size runs past the end of the symbol."""
    cuda = cuda_module([("k", [F32])], fake_cubin(75))
    lb = libbin.encode([("_lib", None), ("opencl", OPENCL_SRC), ("cuda", cuda)])
    return build_c("truncated_library_bin", c_source(lb[:-40]))


@functools.cache
def plain():
    """Exports only: nothing embedded; names that are not Python identifiers
    or clash with the stub's own names."""
    return build_c("plain_names", c_source(functions=("class", "Tensor", "lambda", "ok", "Any")))


METAL_SOURCES = {
    "add": b"kernel void add(device float* a [[buffer(0)]]) { a[0] += 1; }\n",
    "../up": b"kernel void up(device float* a [[buffer(0)]]) { a[0] *= 2; }\n",
}


def metal_module():
    """A metal module as TVM writes it: the function map, then one source
    per kernel (a map of kernel name -> source) instead of one payload."""
    funcs = [(k, [arg], [], [0]) for k, arg in (("add", F32), ("../up", F32))]
    head = modformats.encode_gpu("metal", funcs, b"")[:-8]  # drop the empty payload
    out = head + struct.pack("<Q", len(METAL_SOURCES))
    for k, src in METAL_SOURCES.items():
        out += struct.pack("<Q", len(k)) + k.encode() + struct.pack("<Q", len(src)) + src
    return out


@functools.cache
def metal_lib():
    lb = libbin.encode([("_lib", None), ("metal", metal_module())])
    return build_c("metal", c_source(lb))


def many_modules_image(n, kind=b"tiny", blob=bytes(range(40))):
    """A library_bin image of `n` modules: module 0 is _lib importing the
    n - 1 others, each `kind` with `blob`. Built by repetition (encode() is
    for small images), so a 490,000-module image takes well under a second."""
    q = struct.Struct("<Q").pack
    indptr = [0] + [n - 1] * n
    kids = range(1, n)
    tree = q(len(indptr)) + struct.pack(f"<{len(indptr)}Q", *indptr)
    tree += q(n - 1) + struct.pack(f"<{n - 1}Q", *kids)
    entry = q(len(kind)) + kind + q(len(blob)) + blob
    body = tree + q(4) + b"_lib" + entry * (n - 1)
    return q(len(body)) + body


def incbin_library(name, data):
    """A shared library whose `__tvm_ffi__library_bin` holds `data`, embedded
    by the assembler (a C array initializer of 30 MB would take gcc minutes)."""
    SRC.mkdir(parents=True, exist_ok=True)
    digest = __import__("hashlib").sha256(data).hexdigest()[:16]
    blob = SRC / f"{name}-{digest}.bin"
    if not blob.is_file():
        blob.write_bytes(data)
    asm = SRC / f"{name}-{digest}.S"
    asm.write_text(
        "\t.section .rodata\n\t.globl __tvm_ffi__library_bin\n"
        "\t.type __tvm_ffi__library_bin, @object\n\t.p2align 3\n"
        f'__tvm_ffi__library_bin:\n\t.incbin "{blob}"\n'
        "\t.size __tvm_ffi__library_bin, .-__tvm_ffi__library_bin\n"
        '\t.section .note.GNU-stack,"",@progbits\n'
    )
    return fixturebuild.build([asm], name=name, headers="none", lang="c")
