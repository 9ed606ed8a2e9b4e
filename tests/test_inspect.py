"""`tvmffi inspect` on fixture libraries built with gcc/g++: exact values,
JSON Schema validity, exit codes, one-line errors, and --static never loading."""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "inspect"
SCHEMA = json.loads((ROOT / "src" / "tvmffi_cli" / "schemas" / "inspect.schema.json").read_text())


def tvmffi(*args, env=None):
    e = dict(os.environ)
    e.pop("TVMFFI_DEBUG", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *map(str, args)], capture_output=True, text=True, env=e
    )


def inspect_json(path, *flags, code=0, env=None):
    r = tvmffi("inspect", "--json", *flags, path, env=env)
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr
    rep = json.loads(r.stdout)
    jsonschema.validate(rep, SCHEMA)
    return rep, r


def _gen():
    spec = importlib.util.spec_from_file_location("gen_libbin", FIX / "gen_libbin.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _gen()
LIBBIN_DEFINE = (
    "LIBBIN_DATA=" + hashlib.sha256((FIX / "libbin_data.h").read_bytes()).hexdigest()[:12]
)


@pytest.fixture(scope="module")
def funcs_lib(build_lib):
    return build_lib("inspect/funcs.c", headers="ours")


@pytest.fixture(scope="module")
def libbin_good(build_lib):
    return build_lib("inspect/libbin_good.c", headers="none", defines=[LIBBIN_DEFINE])


@pytest.fixture(scope="module")
def libbin_bad(build_lib):
    return build_lib("inspect/libbin_bad.c", headers="none", defines=[LIBBIN_DEFINE])


@pytest.fixture(scope="module")
def official_lib(build_lib, official_include):
    return build_lib(
        "inspect/official_meta.cc",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
    )


def test_generated_libbin_header_is_current():
    assert (FIX / "libbin_data.h").read_text() == GEN.render()


def test_functions_imports_context_and_cubin(funcs_lib):
    rep, _ = inspect_json(funcs_lib, "--static")
    assert rep["format"] == "elf" and rep["arch"] == "x86_64" and rep["kind"] == "shared"
    assert rep["mode"] == "static"
    assert rep["needed"] == ["libtvm_ffi.so"]
    fns = {f["name"]: f for f in rep["functions"]}
    assert sorted(fns) == ["add", "main", "mul3"]
    assert fns["main"]["aliases"] == ["add"] and fns["main"]["binding"] == "weak"
    assert fns["main"]["address"] == fns["add"]["address"]
    assert (fns["mul3"]["has_metadata"], fns["mul3"]["has_doc"]) == (True, True)
    assert (fns["add"]["has_metadata"], fns["add"]["has_doc"]) == (False, False)
    assert all(f["kind"] == "code" and f["size"] > 0 for f in fns.values())
    assert rep["runtime_imports"] == ["TVMFFIErrorSetRaisedFromCStr", "TVMFFIStringFromByteArray"]
    assert rep["unsupported_imports"] == [] and rep["needs_runtime"] is True
    assert [c["name"] for c in rep["context_symbols"]] == [
        "__TVMFFIEnvModLookupFromImports",
        "__TVMFFIFunctionCall",
    ]
    assert all(c["known"] and c["writable"] and c["size"] == 8 for c in rep["context_symbols"])
    assert rep["library_ctx"]["writable"] is True and rep["library_ctx"]["size"] == 8
    assert rep["cubins"] == [
        {
            "name": "kernels",
            "symbol": "__tvm_ffi__cubin_kernels",
            "address": rep["cubins"][0]["address"],
            "size": 80,
            "type": "cubin",
            "e_machine": 190,
            "arch": "sm_75",
        }
    ]
    assert rep["modules"] == [] and rep["library_bin"] is None
    assert rep["errors"] == []


def test_function_list_matches_nm(funcs_lib):
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(funcs_lib)], capture_output=True, text=True, check=True
    ).stdout
    want = sorted(
        line.split()[-1][len("__tvm_ffi_") :]
        for line in nm.splitlines()
        if line.split()[-1].startswith("__tvm_ffi_")
        and not line.split()[-1].startswith("__tvm_ffi__")
    )
    rep, _ = inspect_json(funcs_lib, "--static")
    assert [f["name"] for f in rep["functions"]] == want


def test_library_bin_modules(libbin_good):
    rep, _ = inspect_json(libbin_good, "--static")
    assert rep["errors"] == []
    assert rep["library_bin"]["symbol_size"] == len(GEN.GOOD)
    assert rep["library_bin"]["nbytes"] == len(GEN.GOOD) - 8 and rep["library_bin"]["root"] == 0
    mods = rep["modules"]
    assert [(m["index"], m["kind"], m["imports"], m["blob_size"]) for m in mods] == [
        (0, "_lib", [1, 3], None),
        (1, "cuda", [2], len(GEN.CUDA)),
        (2, "opencl", [], len(GEN.OPENCL)),
        (3, "acme.custom", [], len(GEN.CUSTOM)),
    ]
    cuda = mods[1]["details"]
    assert cuda["format"] == "cubin"
    assert cuda["functions"] == [
        {
            "name": "add_kernel",
            "arg_types": ["float32", "float32", "float32", "int32"],
            "launch_param_tags": ["blockIdx.x", "threadIdx.x"],
            "arg_extra_tags": [0, 0, 0, 0],
        },
        {
            "name": "scale_kernel",
            "arg_types": ["float16x4", "float32"],
            "launch_param_tags": ["blockIdx.x", "blockIdx.y", "threadIdx.x"],
            "arg_extra_tags": [0, 0],
        },
    ]
    assert cuda["payload_size"] == len(GEN.fake_cubin(86))
    assert cuda["payload"] == {"type": "cubin", "e_machine": 190, "arch": "sm_86"}
    # The payload offset points at the cubin inside the symbol.
    start = cuda["payload_offset"]
    assert GEN.GOOD[start : start + 4] == b"\x7fELF"
    ocl = mods[2]["details"]
    assert ocl["format"] == "cl" and ocl["payload"] == {"type": "text"}
    assert [f["name"] for f in ocl["functions"]] == ["copy"]
    assert mods[3]["details"] == {
        "size": len(GEN.CUSTOM),
        "preview": {"hex": GEN.CUSTOM.hex(), "ascii": "custom module bytes ...."},
    }
    assert GEN.GOOD[mods[3]["blob_offset"] :][:6] == b"custom"


def test_malformed_library_bin_exit_1_with_offsets(libbin_bad):
    rep, r = inspect_json(libbin_bad, "--static", code=1)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvmffi: error: ")
    errs = [(e["where"], e.get("offset")) for e in rep["errors"]]
    assert ("__TVMFFIFunctionCall", None) in errs  # const context symbol
    libbin = [e for e in rep["errors"] if e["where"] == "__tvm_ffi__library_bin"]
    msgs = {e["offset"]: e["message"] for e in libbin}
    assert "nbytes says" in msgs[0]
    # module 1's child list starts after nbytes(8) + indptr(8 + 4*8) + count(8) + one entry
    assert "child index 9" in msgs[8 + 8 + 32 + 8 + 8]
    assert any("blob of module 2" in m for m in msgs.values())
    # partial results still printed
    assert [m["kind"] for m in rep["modules"]] == ["_lib", "cuda"]
    assert rep["modules"][1]["details"]["payload"]["arch"] == "sm_86"


def test_cxx_runtime_imports_are_flagged(build_lib):
    lib = build_lib("inspect/cxx_imports.c", headers="none")
    rep, _ = inspect_json(lib, "--static")
    # RecursiveEq is in the builtin runtime's exports (abi/release_exports.py):
    # only the symbol it lacks is flagged.
    mutex = "_ZZN3tvm3ffi9ModuleObj14InternalUnsafe22GetFunctionFromImportsEPS1_PKcE6mutex_"
    assert rep["unsupported_imports"] == [mutex]
    assert rep["runtime_imports"] == ["TVMFFIErrorSetRaisedFromCStr"]
    assert rep["needs_runtime"] is True
    # RecursiveEq first appears in 0.1.10
    assert rep["min_runtime_version"] == "0.1.10" and rep["max_runtime_version"] is None
    r = tvmffi("inspect", "--static", lib, env={"NO_COLOR": "1", "COLUMNS": "300"})
    assert mutex in r.stdout and "RecursiveEq" not in r.stdout.split("lacks")[1]
    assert "only the official runtime" in r.stdout


def test_official_cxx_static(official_lib):
    rep, _ = inspect_json(official_lib, "--static")
    fns = {f["name"]: f for f in rep["functions"]}
    assert sorted(fns) == ["count_all", "echo", "mul3", "scale", "touch"]
    assert all(f["has_metadata"] for f in fns.values())
    assert sorted(n for n, f in fns.items() if f["has_doc"]) == ["mul3", "scale"]
    assert "signature" not in fns["mul3"]  # static mode never calls the getters
    assert "TVMFFIStringFromByteArray" in rep["runtime_imports"]
    assert rep["unsupported_imports"] == []


def test_loaded_signatures_and_docs(official_lib, official_runtime):
    rep, _ = inspect_json(official_lib, "--runtime", official_runtime)
    assert rep["mode"] == "loaded"
    sigs = {f["name"]: f.get("signature") for f in rep["functions"]}
    assert sigs == {
        "count_all": "count_all(Array[int], Map[str, int]) -> int",
        "echo": "echo(Tensor) -> Tensor",
        "mul3": "mul3(int, int, int) -> int",
        "scale": "scale(float, Optional[float]) -> float",
        "touch": "touch(DLTensor*) -> None",
    }
    fns = {f["name"]: f for f in rep["functions"]}
    assert fns["mul3"]["doc"] == "Multiply three integers."
    assert fns["scale"]["doc"].startswith("Scale x by factor (default 2).")
    assert "doc" not in fns["echo"]
    assert json.loads(fns["mul3"]["metadata"]["type_schema"])["type"] == "ffi.Function"
    assert fns["mul3"]["type"] == {
        "type": "ffi.Function",
        "params": [{"type": "int"}] * 3,
        "return": {"type": "int"},
    }
    # wide enough that no doc cell wraps (the human table follows COLUMNS)
    r = tvmffi(
        "inspect",
        "--runtime",
        official_runtime,
        official_lib,
        env={"NO_COLOR": "1", "COLUMNS": "200"},
    )
    assert r.returncode == 0, r.stderr
    assert "scale(float, Optional[float]) -> float" in r.stdout
    assert "Multiply three integers." in r.stdout
    assert "\x1b[" not in r.stdout  # NO_COLOR and a pipe: no escape codes


def test_loaded_with_default_runtime(funcs_lib):
    r = tvmffi("inspect", "--json", funcs_lib)
    rep = json.loads(r.stdout)
    jsonschema.validate(rep, SCHEMA)
    load_errs = [e["message"] for e in rep["errors"] if e["where"] == "load"]
    if any("cannot load runtime" in m for m in load_errs):
        pytest.skip(f"our runtime cannot be loaded here: {load_errs[0][:200]}")
    assert r.returncode == 0, r.stderr
    fns = {f["name"]: f for f in rep["functions"]}
    assert fns["mul3"]["signature"] == "mul3(int, int, int) -> int"
    assert fns["mul3"]["doc"] == "Multiply three integers."


def test_static_never_runs_library_code(build_lib, official_runtime, tmp_path):
    lib = build_lib("inspect/ctor_trace.c", headers="none")
    trace = tmp_path / "trace.txt"
    env = {"TVMFFI_TRACE_FILE": str(trace)}
    rep, _ = inspect_json(lib, "--static", env=env)
    assert [f["name"] for f in rep["functions"]] == ["hello"]
    r = tvmffi("inspect", "--static", lib, env=env)
    assert r.returncode == 0
    assert not trace.exists()
    # Control: loading it (the default mode) does run the constructor.
    r = tvmffi("inspect", "--json", "--no-sandbox", "--runtime", official_runtime, lib, env=env)
    assert trace.read_text() == "constructor ran\n", r.stderr


def _file(name, data):
    def make(d):
        (d / name).write_bytes(data)
        return d / name

    return make


@pytest.mark.parametrize(
    "make,needle",
    [
        (lambda d: d / "missing.so", "no such file"),
        (_file("empty.so", b""), "empty file"),
        (_file("text.so", b"hello\n"), "not a library"),
        (lambda d: d, "is a directory"),
        (_file("trunc.so", b"\x7fELF\x02\x01\x01" + bytes(30)), "truncated ELF header"),
        (_file("badmacho.dylib", b"\xcf\xfa\xed\xfe" + bytes(10)), "truncated Mach-O header"),
    ],
    ids=["missing", "empty", "text", "directory", "truncated-elf", "truncated-macho"],
)
def test_unreadable_inputs_exit_2(tmp_path, make, needle):
    p = make(tmp_path)
    for flags in (["--static"], ["--static", "--json"]):
        r = tvmffi("inspect", *flags, p)
        assert r.returncode == 2, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tvmffi: error: ") and needle in lines[0]
        assert r.stdout == ""


def test_human_output_shows_modules(libbin_good):
    r = tvmffi("inspect", "--static", libbin_good, env={"NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "#1 cuda" in out and "imports [2]" in out
    assert "add_kernel(float32, float32, float32, int32)" in out
    assert "cubin, sm_86" in out
    assert "\x1b[" not in out


def _static_json_fresh(lib):
    """inspect's fast path `--static --json lib` in a fresh interpreter:
    (exit code, the modules it imported, the document)."""
    code = (
        "import sys, io, contextlib, json\n"
        "from tvmffi_cli.cli.inspect import fast_main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        f"    rc = fast_main(['--static', '--json', {str(lib)!r}])\n"
        "print(json.dumps([rc, sorted(sys.modules), buf.getvalue()]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rc, modules, out = json.loads(r.stdout)
    return rc, set(modules), json.loads(out)


def test_json_path_imports_no_click_numpy_rich(funcs_lib):
    rc, modules, _doc = _static_json_fresh(funcs_lib)
    assert rc == 0
    assert not {"click", "numpy", "rich", "elftools", "pefile", "ctypes"} & modules


def test_static_json_does_not_import_the_worker_machinery(funcs_lib):
    # No library code runs, so the sandbox field needs no sandbox.process
    # (a tenth of the start-up of inspect --static --json).
    rc, modules, doc = _static_json_fresh(funcs_lib)
    from tvmffi_cli.sandbox import process

    assert rc == 0 and "tvmffi_cli.sandbox.process" not in modules
    assert doc["sandbox"] == process.sandbox_field(ran=False)


def test_static_json_escapes_raw_bytes_of_the_path(funcs_lib, tmp_path):
    # A non-UTF-8 file name reaches the report as a lone surrogate: the one
    # encoding pass sees it and falls back to json_clean (\\xff in the JSON).
    odd = os.path.join(os.fsencode(tmp_path), b"lib\xff.so")
    with open(odd, "wb") as f:
        f.write(Path(funcs_lib).read_bytes())
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", "--static", "--json", odd],
        capture_output=True,
    )
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout.decode("utf-8"))
    assert rep["path"].endswith("lib\\xff.so") and rep["functions"]


def test_fast_path_defers_unusual_arguments():
    from tvmffi_cli.cli.inspect import fast_main

    assert fast_main(["--help"]) is None
    assert fast_main(["a.so", "b.so"]) is None
    assert fast_main(["--timeout"]) is None
