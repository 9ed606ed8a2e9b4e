"""ELF reader against binutils on real libraries, bounded symbol reads, and
property tests: mutated or random files give a result or FormatError."""

import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmffi_cli.binary import open_binary, parse_bytes
from tvmffi_cli.errors import FormatError
from tvmffi_cli.inspect.engine import static_report


def nm_defined(path):
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True
    ).stdout
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            rows[parts[2].split("@")[0]] = (int(parts[0], 16), parts[1])
    return rows


def nm_undefined(path):
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return sorted({line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()})


@pytest.fixture(scope="module")
def funcs_lib(build_lib):
    return build_lib("inspect/funcs.c", headers="ours")


@pytest.fixture(scope="module")
def libs(funcs_lib, official_runtime):
    return [funcs_lib, official_runtime]


def test_symbols_match_nm(libs):
    for path in libs:
        b = open_binary(path)
        want = nm_defined(path)
        got = {s.name: s for s in b.symbols}
        assert set(got) == set(want), path
        for name, (addr, letter) in want.items():
            assert got[name].value == addr
            assert (got[name].kind == "code") == (letter in "TtWiI" and letter not in "V")
        assert sorted(set(b.imports)) == nm_undefined(path)


def test_header_facts(funcs_lib):
    b = open_binary(funcs_lib)
    assert (b.format, b.arch, b.bits, b.kind) == ("elf", "x86_64", 64, "shared")
    assert b.needed == ["libtvm_ffi.so"]
    dyn = subprocess.run(["readelf", "-d", str(funcs_lib)], capture_output=True, text=True).stdout
    assert "Shared library: [libtvm_ffi.so]" in dyn


def test_find_symbols_equals_filtering_everything(libs):
    for path in libs:
        b = open_binary(path)
        for prefixes in (("__tvm_ffi",), ("TVMFFI", "__TVMFFI"), ("_ZN3tvm",), ("nothing_",)):
            fast = sorted((s.name, s.value, s.size) for s in b.find_symbols(prefixes))
            slow = sorted(
                (s.name, s.value, s.size) for s in b.symbols if s.name.startswith(prefixes)
            )
            assert fast == slow


def test_find_symbols_sees_names_sharing_a_longer_strings_tail(tmp_path):
    # GNU ld stores a name that ends another one only once (.dynstr tail
    # merging): __tvm_ffi_inner's st_name points into
    # "__tvm_ffi_outer__tvm_ffi_inner". A prefix scan that skips to the end of
    # each match missed it.
    src = tmp_path / "tail.s"
    src.write_text(
        ".text\n"
        + "".join(
            f".globl {n}\n.type {n},@function\n{n}:\n ret\n"
            for n in ("__tvm_ffi_outer__tvm_ffi_inner", "__tvm_ffi_inner")
        )
    )
    lib = tmp_path / "tail.so"
    subprocess.run(["gcc", "-shared", "-nostdlib", "-o", lib, src], check=True)
    data = lib.read_bytes()
    # every copy of the short name is the tail of the long one (.dynstr, .strtab)
    tails = data.count(b"__tvm_ffi_outer__tvm_ffi_inner\0")
    assert data.count(b"__tvm_ffi_inner\0") == tails, "linker did not merge the tails"
    b = open_binary(lib)
    found = sorted(s.name for s in b.find_symbols(("__tvm_ffi_",)))
    assert (
        found
        == sorted(s.name for s in b.symbols)
        == [
            "__tvm_ffi_inner",
            "__tvm_ffi_outer__tvm_ffi_inner",
        ]
    )
    assert [f["name"] for f in static_report(b)["functions"]] == ["inner", "outer__tvm_ffi_inner"]


def test_read_symbol_bytes_is_bounded(funcs_lib):
    b = open_binary(funcs_lib)
    cub = b.get("__tvm_ffi__cubin_kernels")
    data = b.read_symbol_bytes(cub)
    # no st_size for an asm label: bounded by the next symbol (the _end label)
    assert len(data) == 80 and data[:4] == b"\x7fELF" and data.endswith(b"FAKE-CUBIN-BYTES")
    assert b.read_symbol_bytes(cub, limit=4) == b"\x7fELF"
    ctx = b.get("__TVMFFIFunctionCall")
    assert ctx.writable and ctx.section in (".bss", ".data")
    if ctx.section == ".bss":
        with pytest.raises(FormatError, match="no bytes in the file"):
            b.read_symbol_bytes(ctx)
    fn = b.get("__tvm_ffi_add")
    assert len(b.read_symbol_bytes(fn)) == fn.size


def test_32bit_and_object_files(tmp_path):
    src = tmp_path / "a.c"
    src.write_text(
        "int __tvm_ffi_x(void*a,const void*b,int c,void*d){return 0;}\n"
        "const char __tvm_ffi__library_bin[16] = {1};\n"
    )
    obj = tmp_path / "a.o"
    subprocess.run(["gcc", "-c", "-o", obj, src], check=True)
    b = open_binary(obj)
    assert b.kind == "object"
    assert {s.name for s in b.symbols} >= {"__tvm_ffi_x", "__tvm_ffi__library_bin"}
    lb = b.get("__tvm_ffi__library_bin")
    assert b.read_symbol_bytes(lb) == b"\x01" + bytes(15)
    # 32-bit: compile without libc headers and link with ld directly (no 32-bit libc needed).
    o32, so32 = tmp_path / "a32.o", tmp_path / "a32.so"
    r = subprocess.run(["gcc", "-m32", "-fPIC", "-c", "-o", o32, src], capture_output=True)
    if r.returncode == 0:
        r = subprocess.run(
            ["ld", "-m", "elf_i386", "-shared", "-o", so32, o32], capture_output=True
        )
    if r.returncode != 0:
        pytest.skip("gcc -m32 / ld -m elf_i386 unavailable: 32-bit ELF not checked")
    b = open_binary(so32)
    assert (b.bits, b.arch) == (32, "i386")
    assert b.get("__tvm_ffi_x") is not None


def _exercise(data):
    """Everything inspect does with a file; only FormatError may escape."""
    try:
        b = parse_bytes(data)
        rep = static_report(b)
    except FormatError:
        return
    assert isinstance(rep["functions"], list)
    for s in b.symbols[:50]:
        try:
            b.read_symbol_bytes(s, limit=64)
        except FormatError:
            pass


@pytest.fixture(scope="module")
def small_elf(funcs_lib):
    return funcs_lib.read_bytes()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_elf_never_crashes(small_elf, data):
    b = bytearray(small_elf)
    n = data.draw(st.integers(1, 12))
    for _ in range(n):
        # Mostly hit the header and the section/symbol tables, sometimes anywhere.
        region = data.draw(st.sampled_from(["head", "tail", "any"]))
        if region == "head":
            at = data.draw(st.integers(0, 63))
        elif region == "tail":
            at = data.draw(st.integers(max(0, len(b) - 4096), len(b) - 1))
        else:
            at = data.draw(st.integers(0, len(b) - 1))
        b[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(b)))
    _exercise(bytes(b[:cut]) if data.draw(st.booleans()) else bytes(b))


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [
            b"\x7fELF\x02\x01\x01",
            b"\x7fELF\x01\x02\x01",
            b"MZ",
            b"\xcf\xfa\xed\xfe",
            b"\xca\xfe\xba\xbe",
            b"\xfe\xed\xfa\xce",
        ]
    ),
    st.binary(max_size=600),
)
def test_random_bodies_never_crash(magic, body):
    _exercise(magic + body)
