"""PE/COFF and Mach-O (thin, fat; x86_64 and arm64) readers on libraries built
with the distribution's cross tools (x86_64-w64-mingw32-gcc; clang + lld).
Without those tools these tests skip, saying which tool is missing."""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmffi_cli.binary import open_binary, parse_bytes
from tvmffi_cli.errors import FormatError
from tvmffi_cli.inspect.engine import static_report

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "fixtures" / "inspect" / "portable.c"
SCHEMA = json.loads((ROOT / "src" / "tvmffi_cli" / "schemas" / "inspect.schema.json").read_text())
MODULE_KINDS = ["_lib", "cuda", "opencl", "acme.custom"]


def _key(*parts):
    h = hashlib.sha256(SRC.read_bytes() + (SRC.parent / "libbin_data.h").read_bytes())
    for p in parts:
        h.update(p.encode())
    return h.hexdigest()[:12]


def _need(*tools):
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip(f"{t} not installed (CI installs gcc-mingw-w64-x86-64, clang, lld)")


@pytest.fixture(scope="session")
def cross_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cross")


@pytest.fixture(scope="session")
def pe_dll(cross_dir):
    _need("x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-dlltool")
    out = cross_dir / f"portable-{_key('pe')}.dll"
    if not out.exists():
        # The DLL imports from tvm_ffi.dll, so link against a stub import library.
        (cross_dir / "tvm_ffi.def").write_text(
            "LIBRARY tvm_ffi.dll\nEXPORTS\nTVMFFIErrorSetRaisedFromCStr\n"
        )
        subprocess.run(
            [
                "x86_64-w64-mingw32-dlltool",
                "-d",
                cross_dir / "tvm_ffi.def",
                "-l",
                cross_dir / "libtvm_ffi.dll.a",
            ],
            check=True,
            # dlltool (binutils 2.4x) leaves two temporary files behind: keep them here.
            env=dict(os.environ, TMPDIR=str(cross_dir)),
        )
        subprocess.run(
            [
                "x86_64-w64-mingw32-gcc",
                "-shared",
                "-O1",
                "-o",
                out,
                SRC,
                cross_dir / "libtvm_ffi.dll.a",
            ],
            check=True,
            capture_output=True,
        )
    return out


def _clang_macho(cross_dir, arch, shared=True):
    _need("clang")
    if shared and shutil.which("ld64.lld") is None and not list(Path("/usr/bin").glob("ld64.lld*")):
        pytest.skip("ld64.lld not installed (package lld)")
    out = cross_dir / f"portable-{arch}-{_key(arch, str(shared))}.{'dylib' if shared else 'o'}"
    if not out.exists():
        cmd = ["clang", "-target", f"{arch}-apple-macos11", "-ffreestanding", "-O1"]
        if shared:
            cmd += ["-fuse-ld=lld", "-nostdlib", "-shared", "-Wl,-undefined,dynamic_lookup"]
        else:
            cmd += ["-c"]
        r = subprocess.run(cmd + ["-o", out, SRC], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"clang could not build a Mach-O {arch} file here: {r.stderr[-300:]}")
    return out


@pytest.fixture(scope="session")
def macho_x86(cross_dir):
    return _clang_macho(cross_dir, "x86_64")


@pytest.fixture(scope="session")
def macho_arm(cross_dir):
    return _clang_macho(cross_dir, "arm64")


def make_fat(slices, out):
    """A fat Mach-O (big-endian header, 4 KiB aligned slices) from thin files."""
    cputypes = {"x86_64": 0x01000007, "arm64": 0x0100000C}
    header = struct.pack(">II", 0xCAFEBABE, len(slices))
    blobs, off = [], 4096
    for arch, path in slices:
        data = Path(path).read_bytes()
        header += struct.pack(
            ">iiIII", cputypes[arch], 3 if arch == "x86_64" else 0, off, len(data), 12
        )
        blobs.append((off, data))
        off = (off + len(data) + 4095) & ~4095
    buf = bytearray(off)
    buf[: len(header)] = header
    for o, data in blobs:
        buf[o : o + len(data)] = data
    Path(out).write_bytes(bytes(buf))
    return out


def tvmffi_json(path, *flags):
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", "--json", *flags, str(path)],
        capture_output=True,
        text=True,
    )
    rep = json.loads(r.stdout)
    jsonschema.validate(rep, SCHEMA)
    return rep, r


def _common(rep):
    assert [f["name"] for f in rep["functions"]] == ["add", "neg"]
    fns = {f["name"]: f for f in rep["functions"]}
    assert fns["add"]["has_metadata"] and not fns["neg"]["has_metadata"]
    assert all(f["kind"] == "code" for f in rep["functions"])
    assert [m["kind"] for m in rep["modules"]] == MODULE_KINDS
    assert [m["imports"] for m in rep["modules"]] == [[1, 3], [2], [], []]
    assert rep["modules"][1]["details"]["payload"]["arch"] == "sm_86"
    assert rep["runtime_imports"] == ["TVMFFIErrorSetRaisedFromCStr"]
    assert [c["name"] for c in rep["context_symbols"]] == ["__TVMFFIFunctionCall"]
    assert rep["context_symbols"][0]["writable"] is True
    assert rep["library_ctx"]["writable"] is True
    assert rep["errors"] == []


def test_pe_dll(pe_dll):
    rep, r = tvmffi_json(pe_dll, "--static")
    assert r.returncode == 0, r.stderr
    assert (rep["format"], rep["arch"], rep["kind"], rep["bits"]) == ("pe", "x86_64", "shared", 64)
    assert rep["needed"][0] == "tvm_ffi.dll"
    assert rep["imports_by_dll"]["tvm_ffi.dll"] == ["TVMFFIErrorSetRaisedFromCStr"]
    assert rep["needs_runtime"] is True
    _common(rep)


def test_pe_default_mode_stays_static(pe_dll):
    rep, r = tvmffi_json(pe_dll)
    assert r.returncode == 0 and rep["mode"] == "static"
    assert any("not loadable on this host" in w for w in rep["warnings"])


@pytest.mark.parametrize("fixture,arch", [("macho_x86", "x86_64"), ("macho_arm", "arm64")])
def test_macho_thin(request, fixture, arch):
    path = request.getfixturevalue(fixture)
    rep, r = tvmffi_json(path, "--static")
    assert r.returncode == 0, r.stderr
    assert (rep["format"], rep["arch"], rep["kind"]) == ("macho", arch, "shared")
    _common(rep)
    b = open_binary(path)
    # Mach-O spells C names with a leading underscore; the model does not.
    assert b.get("__tvm_ffi_add") is not None and b.get("___tvm_ffi_add") is None
    lb = b.get("__tvm_ffi__library_bin")
    assert lb.size is None
    data = b.read_symbol_bytes(lb)
    gen = (ROOT / "fixtures" / "inspect" / "libbin_data.h").read_text()
    size = int(gen.split("LIBBIN_GOOD_SIZE ")[1].split()[0])
    # No symbol sizes in Mach-O: bounded by the next symbol or the section end.
    assert len(data) >= size and struct.unpack_from("<Q", data)[0] == size - 8


def test_macho_fat_picks_host_slice_and_lists_both(macho_x86, macho_arm, cross_dir):
    fat = make_fat([("arm64", macho_arm), ("x86_64", macho_x86)], cross_dir / "fat.dylib")
    rep, r = tvmffi_json(fat, "--static")
    assert r.returncode == 0, r.stderr
    assert [s["arch"] for s in rep["fat_slices"]] == ["arm64", "x86_64"]
    assert (
        rep["arch"] == "x86_64"
        if sys.platform.startswith("linux") and __import__("platform").machine() == "x86_64"
        else rep["arch"] in ("x86_64", "arm64")
    )
    _common(rep)
    from tvmffi_cli.binary.macho import MachOBinary

    arm = MachOBinary(str(fat), fat.read_bytes(), arch="arm64")
    assert arm.arch == "arm64" and arm.get("__tvm_ffi_neg") is not None


def test_macho_object_file(cross_dir):
    obj = _clang_macho(cross_dir, "arm64", shared=False)
    b = open_binary(obj)
    assert (b.format, b.kind, b.arch) == ("macho", "object", "arm64")
    assert {"__tvm_ffi_add", "__tvm_ffi_neg", "__tvm_ffi__library_bin"} <= {
        s.name for s in b.symbols
    }
    assert "TVMFFIErrorSetRaisedFromCStr" in b.imports
    rep = static_report(b)
    assert [m["kind"] for m in rep["modules"]] == MODULE_KINDS


def _exercise(data):
    try:
        b = parse_bytes(data)
        static_report(b)
    except FormatError:
        return
    for s in b.symbols[:40]:
        try:
            b.read_symbol_bytes(s, limit=64)
        except FormatError:
            pass


def _mutations(draw_data, base):
    b = bytearray(base)
    for _ in range(draw_data.draw(st.integers(1, 10))):
        hot = draw_data.draw(st.booleans())
        at = draw_data.draw(st.integers(0, min(len(b), 1024) - 1 if hot else len(b) - 1))
        b[at] = draw_data.draw(st.integers(0, 255))
    cut = draw_data.draw(st.integers(0, len(b)))
    return bytes(b[:cut]) if draw_data.draw(st.booleans()) else bytes(b)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_pe_never_crashes(pe_dll, data):
    _exercise(_mutations(data, pe_dll.read_bytes()))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_macho_never_crashes(macho_x86, macho_arm, cross_dir, data):
    fat = cross_dir / "fat-prop.dylib"
    if not fat.exists():
        make_fat([("x86_64", macho_x86), ("arm64", macho_arm)], fat)
    base = data.draw(st.sampled_from([macho_x86, macho_arm, fat])).read_bytes()
    _exercise(_mutations(data, base))
