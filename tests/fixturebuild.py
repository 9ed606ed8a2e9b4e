"""Build fixture libraries from fixtures/ with gcc/g++ at test time.

Two header sets: ours (runtime/include, linked against our libtvm_ffi.so) and
the official apache-tvm-ffi package (its include dir, linked against its
libtvm_ffi.so). Either way the output has DT_NEEDED libtvm_ffi.so and no
rpath, like real kernel libraries. Outputs are cached under fixtures/build/
keyed by a hash of sources, flags and compiler, so each is built once.
"""

import hashlib
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
BUILD = Path(os.environ.get("TVMFFI_FIXTURE_BUILD", FIXTURES / "build"))


class BuildError(RuntimeError):
    pass


def official_package_dir():
    """Directory of the installed apache-tvm-ffi package, found without importing it
    (importing it would load the official runtime into the test process)."""
    spec = importlib.util.find_spec("tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def official_include():
    d = official_package_dir()
    return d / "include" if d and (d / "include" / "tvm" / "ffi" / "c_api.h").is_file() else None


def official_runtime():
    d = official_package_dir()
    p = d / "lib" / "libtvm_ffi.so" if d else None
    return p if p and p.is_file() else None


def our_include():
    from tvmffi_cli.ffi import paths

    return paths.include_dir()


def our_runtime():
    from tvmffi_cli.ffi import paths

    return paths.runtime_library()


def _compiler(lang):
    return shutil.which("g++" if lang == "c++" else "gcc")


def build(
    sources,
    *,
    name=None,
    headers="ours",
    lang=None,
    flags=(),
    link_runtime=True,
    shared=True,
    defines=(),
):
    """Compile `sources` (paths relative to fixtures/ or absolute) into a shared
    library (or an executable with shared=False) and return its path.

    headers: "ours" or "official" (which include dir and libtvm_ffi.so to use),
    or "none" (no TVM-FFI headers at all).
    """
    srcs = [
        Path(s) if Path(s).is_absolute() else FIXTURES / s
        for s in ([sources] if isinstance(sources, (str, Path)) else sources)
    ]
    if lang is None:
        lang = "c++" if any(s.suffix in (".cc", ".cpp", ".cxx") for s in srcs) else "c"
    cc = _compiler(lang)
    if cc is None:
        raise BuildError(f"no {'g++' if lang == 'c++' else 'gcc'} on PATH")
    args = [cc, "-O1", "-g", "-Wall", "-Wextra"]
    args += ["-std=c++17"] if lang == "c++" else ["-std=c11"]
    if shared:
        args += ["-shared", "-fPIC"]
    for d in defines:
        args.append(f"-D{d}")
    libdir = None
    if headers == "ours":
        args.append(f"-I{our_include()}")
        libdir = our_runtime().parent
    elif headers == "official":
        inc = official_include()
        if inc is None:
            raise BuildError("apache-tvm-ffi is not installed (pip install '.[test]')")
        args.append(f"-I{inc}")
        libdir = official_runtime().parent
    elif headers != "none":
        raise ValueError(headers)
    args += list(flags)
    args += [str(s) for s in srcs]
    if link_runtime and libdir is not None:
        args += [f"-L{libdir}", "-ltvm_ffi"]
    if not shared:
        args += ["-lpthread", "-ldl"]
    h = hashlib.sha256()
    for s in srcs:
        h.update(s.read_bytes())
        # headers beside a source (a fixture family's shared helpers) key it too
        for hdr in sorted(s.parent.glob("*.h")):
            h.update(hdr.read_bytes())
    h.update(" ".join(args).encode())
    if headers == "ours":
        # Rebuild when our headers change.
        for hdr in sorted(Path(our_include()).rglob("*.h")):
            h.update(hdr.read_bytes())
    stem = name or srcs[0].stem
    out = BUILD / f"{stem}-{headers}-{h.hexdigest()[:12]}{'.so' if shared else ''}"
    if out.exists():
        return out
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    proc = subprocess.run(args + ["-o", str(tmp)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"compiling {stem} failed:\n{' '.join(args)}\n{proc.stderr}")
    os.replace(tmp, out)
    return out
