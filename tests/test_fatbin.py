"""The CUDA fat binary reader (tvmffi_cli.binary.fatbin): nvcc-built fixture
libraries (fixtures/cuda_fatbin, committed with their source and build.sh;
CI has no nvcc) against what cuobjdump says of them (recorded in
cuobjdump.txt, and live when cuobjdump is installed: the
nvidia-cuda-cuobjdump test dependency), hostile variants of them, and the
device verdict. In-process and cheap (about 2 s)."""

import importlib.util
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tvmffi_cli.binary import Binary, Section, fatbin, kernels, parse_bytes
from tvmffi_cli.binary.cudaarch import PTX, SASS, CodeArch, device_support, parse_cc
from tvmffi_cli.errors import FormatError, InputError

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "cuda_fatbin"
LIBS = ("kernels", "kernels_lz4", "kernels_rdc")


def recorded(path=FIX / "cuobjdump.txt"):
    """command -> output lines of a cuobjdump transcript ($ lines, blank-separated)."""
    out, cmd = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("$ "):
            cmd = line[2:]
            out[cmd] = []
        elif cmd is not None and line:
            out[cmd].append(line)
    return out


def read(name, **kw):
    return fatbin.read_path(str(FIX / f"{name}.elf"), **kw)


def section(data, name):
    """(file offset, size) of a section, found by pyelftools (not by us)."""
    from io import BytesIO

    s = ELFFile(BytesIO(data)).get_section_by_name(name)
    return s["sh_offset"], s["sh_size"]


def cuobjdump():
    """A cuobjdump executable: on PATH, in /usr/local/cuda, or the pip package."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    cands = [Path("/usr/local/cuda/bin/cuobjdump")]
    spec = importlib.util.find_spec("nvidia")
    for d in (spec.submodule_search_locations or []) if spec else []:
        cands += sorted(Path(d).glob("cu*/bin/cuobjdump"))
    return next((str(c) for c in cands if c.is_file()), None)


def needs(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(
        bool(missing), reason=f"{', '.join(missing)} not installed (pip install '.[test]')"
    )


# -- the fixtures against cuobjdump's transcript --------------------------------


@pytest.mark.parametrize("lib", LIBS)
@needs("lz4", "zstandard")
def test_listing_and_kernels_match_cuobjdump(lib):
    rec = recorded()
    code = read(lib)
    assert code.listing() == rec[f"cuobjdump --list-elf --list-ptx {lib}.elf"]
    assert code.listing(every=True) == rec[f"cuobjdump -all --list-elf --list-ptx {lib}.elf"]
    # -res-usage: "arch = ..." then a " Function name:" line per function of that cubin.
    usage, cur = [], None
    for line in rec[f"cuobjdump -all -res-usage {lib}.elf | grep -E 'arch =|Function'"]:
        if line.startswith("arch = "):
            cur = [line[7:], []]
            usage.append(cur)
        else:
            cur[1].append(line.strip()[len("Function ") : -1])
    ours = [(e.arch.name.replace("compute_", "sm_"), e) for e in code.entries]
    assert [a for a, _ in ours] == [a for a, _ in usage]
    for (_arch, e), (_a, funcs) in zip(ours, usage):
        if e.kind == SASS and (e.role == code.loaded_role or e.compression == "none"):
            assert list(e.kernels) == funcs  # these fixtures' functions are all kernels


def test_entries_of_the_uncompressed_fixture():
    code = read("kernels")
    rows = [
        (e.kind, e.arch.name, e.role, e.section, e.compression, e.version, e.debug, e.kernels)
        for e in code.entries
    ]
    k3 = ("_Z4fillIiEvPT_S0_l", "scale", "add_one")
    assert rows == [
        (SASS, "sm_80", "executable", ".nv_fatbin", "none", "1.8", False, k3),
        (SASS, "sm_90a", "executable", ".nv_fatbin", "none", "1.8", False, k3),
        # PTX names its kernels in source order; the ISA version is PTX 9.0.
        (PTX, "compute_90", "executable", ".nv_fatbin", "none", "9.0", False, k3[::-1]),
    ]
    data = (FIX / "kernels.elf").read_bytes()
    off, size = section(data, ".nv_fatbin")
    assert [s.offset for s in code.sections] == [off]
    assert [(c.offset, c.size, c.entries) for c in code.containers] == [(0, size, 3)]
    # every payload sits where the entry says: an ELF cubin, then PTX text
    assert data[code.entries[0].offset : code.entries[0].offset + 4] == b"\x7fELF"
    assert b".entry add_one" in data[code.entries[2].offset : code.entries[2].offset + 2016]
    assert code.problems == ()
    assert [w.to_json() for w in code.wrappers] == [
        {
            "index": 0,
            "version": 1,
            "address": code.wrappers[0].address,
            "section": ".nv_fatbin",
            "offset": 0,
            "container": 0,
        }
    ]
    j = code.to_json()
    assert (j["sass"], j["ptx"], j["kernel_count"], j["kernels_unread"]) == (
        ["sm_80", "sm_90a"],
        ["compute_90"],
        3,
        0,
    )


@needs("lz4", "zstandard")
def test_compressed_and_family_specific_fixtures():
    lz4 = read("kernels_lz4")
    assert [(e.arch.name, e.compression, e.kernel_count) for e in lz4.entries] == [
        ("sm_100f", "lz4", 3),
        ("sm_100a", "lz4", 3),
        ("compute_120f", "lz4", 3),
    ]
    # cuobjdump names the family cubin sm_100 (its -res-usage says sm_100f)
    assert lz4.entries[0].name == "kernels_lz4.1.sm_100.cubin"
    assert all(e.uncompressed_size > e.compressed_size > 0 for e in lz4.entries)
    assert lz4.to_json()["decompressed_bytes"] == sum(e.uncompressed_size for e in lz4.entries)

    rdc = read("kernels_rdc")
    assert [(e.role, e.section, e.arch.name, e.compression) for e in rdc.entries] == [
        ("executable", ".nv_fatbin", "sm_80", "zstd"),
        ("executable", ".nv_fatbin", "sm_90a", "zstd"),
        ("relocatable", "__nv_relfatbin", "sm_80", "zstd"),
        ("relocatable", "__nv_relfatbin", "compute_80", "zstd"),
        ("relocatable", "__nv_relfatbin", "sm_90a", "zstd"),
    ]
    # the device link kept the kernel the host code launches; the
    # relocatable inputs are listed but not decompressed
    assert [e.kernels for e in rdc.loaded()] == [("add_one",), ("add_one",)]
    assert all("input of the device link" in e.kernels_note for e in rdc.entries[2:])
    # one wrapper per registration: the -dc object's (version 1, relocatable
    # container) and the device link's (version 2)
    assert [(w.version, w.section, w.container) for w in rdc.wrappers] == [
        (1, "__nv_relfatbin", 1),
        (2, ".nv_fatbin", 0),
    ]
    j = rdc.to_json()
    assert j["loaded"] == "executable" and j["ptx"] == []
    assert j["summary"]["relocatable"] == {
        "sass": {"sm_80": 1, "sm_90a": 1},
        "ptx": {"compute_80": 1},
        "compression": {"zstd": 3},
    }


@pytest.mark.parametrize("lib", LIBS)
def test_live_cuobjdump_agrees(lib, tmp_path):
    tool = cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not installed (pip install '.[test]' brings nvidia-cuda-cuobjdump)")
    path = FIX / f"{lib}.elf"
    for flags, every in (([], False), (["-all"], True)):
        r = subprocess.run(
            [tool, *flags, "--list-elf", "--list-ptx", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        assert read(lib, names=False).listing(every) == r.stdout.splitlines()


# -- hostile input: bounded, linear, a problem or a partial result -------------------


def mutated(lib, edit):
    data = bytearray((FIX / f"{lib}.elf").read_bytes())
    off, size = section(bytes(data), ".nv_fatbin")
    edit(data, off, size)
    b = parse_bytes(bytes(data), f"{lib}.elf")
    return fatbin.read(b)


def put(fmt, at, value):
    def edit(data, off, _size):
        struct.pack_into(fmt, data, off + at, value)

    return edit


def test_section_cut_anywhere_gives_a_partial_result():
    """The section header's size cut to every length: never an exception,
    entries up to the cut, a problem whenever a structure is cut."""
    data = bytearray((FIX / "kernels.elf").read_bytes())
    off, size = section(bytes(data), ".nv_fatbin")
    from io import BytesIO

    elf = ELFFile(BytesIO(bytes(data)))
    idx = [s.name for s in elf.iter_sections()].index(".nv_fatbin")
    shdr = elf["e_shoff"] + idx * elf["e_shentsize"] + 32  # sh_size of an Elf64_Shdr
    full = fatbin.read(parse_bytes(bytes(data), "k.elf"))
    for cut in [*range(0, size, 17), size - 1, size]:
        struct.pack_into("<Q", data, shdr, cut)
        code = fatbin.read(parse_bytes(bytes(data), "k.elf"))
        assert len(code.entries) <= 3
        for e in code.entries:
            assert e.offset + e.stored <= off + cut
        if cut < size:
            assert code.problems, cut
            whole = [e for e in code.entries if not e.truncated]
            assert [e.name for e in whole] == [e.name for e in full.entries[: len(whole)]]


@pytest.mark.parametrize(
    "edit, words",
    [
        (put("<Q", 8, 1 << 63), "container claims"),  # entries size of the container
        (put("<H", 6, 0), "container header size 0"),
        (put("<H", 6, 0xFFFF), "container header size 65535"),
        (put("<Q", 16 + 8, 1 << 63), "entry claims"),  # payload size of entry 1
        (put("<I", 16 + 4, 0), "entry header size 0"),
        (put("<I", 16 + 4, 0xFFFFFFFF), "entry header size 4294967295"),
        (put("<I", 0, 0x12345678), "hold no fat binary container"),  # magic gone
    ],
)
def test_lying_headers_are_reported(edit, words):
    code = mutated("kernels", edit)
    assert any(words in p.message for p in code.problems), code.problems
    assert {p.where for p in code.problems} <= {".nv_fatbin", ".nvFatBinSegment"}


def test_identifier_that_lies_is_ignored():
    code = mutated("kernels", lambda d, o, s: struct.pack_into("<II", d, o + 16 + 32, 64, 1 << 31))
    assert code.entries[0].identifier is None and code.entries[0].name == "kernels.1.sm_80.cubin"


def test_garbage_between_containers_and_a_second_container():
    """Two containers back to back, with junk between: both read, the junk named."""
    data = (FIX / "kernels.elf").read_bytes()
    off, size = section(data, ".nv_fatbin")
    blob = data[off : off + size]
    sec = blob + b"\0" * 8 + b"junk1234" + blob
    b = Binary("two.so", sec)
    b.sections = [Section(".nv_fatbin", 0x1000, len(sec), 0, len(sec))]
    code = fatbin.read(b)
    assert [e.name for e in code.entries] == [
        "two.1.sm_80.cubin",
        "two.2.sm_90a.cubin",
        "two.1.sm_90.ptx",
        "two.3.sm_80.cubin",
        "two.4.sm_90a.cubin",
        "two.2.sm_90.ptx",
    ]
    assert [c.offset for c in code.containers] == [0, size + 16]
    assert [(p.offset, p.message) for p in code.problems] == [
        (size, "16 bytes before the next container are not padding")
    ]


def fake_entry(kind=fatbin.KIND_ELF, sm=90, flags=0x11, payload=b"", hsize=64, **kw):
    h = dict(csize=0, usize=0, id_off=0, id_len=0)
    h.update(kw)
    return (
        fatbin.ENTRY.pack(
            kind,
            0x101,
            hsize,
            len(payload),
            h["csize"],
            0,
            0,
            1,
            sm,
            h["id_off"],
            h["id_len"],
            flags,
            0,
            h["usize"],
        )
        + payload
    )


def fake_binary(*entries, name="fake.so"):
    body = b"".join(entries)
    sec = fatbin.CONTAINER.pack(fatbin.FATBIN_MAGIC, 1, 16, len(body)) + body
    b = Binary(name, sec)
    b.sections = [Section(".nv_fatbin", 0x1000, len(sec), 0, len(sec))]
    return b


def test_many_entries_are_counted_past_the_listing_limit():
    n = fatbin.ENTRY_LIST_LIMIT + 500
    code = fatbin.read(fake_binary(*[fake_entry(sm=80 + i % 3) for i in range(n)]), names=False)
    j = code.to_json()
    assert (j["entry_count"], j["entries_listed"], j["truncated"]) == (n, n - 500, True)
    assert sum(j["summary"]["executable"]["sass"].values()) == n
    assert sum(1 for _ in j["summary"]["executable"]["sass"]) == 3


def test_many_sections_over_the_same_bytes_are_read_once():
    """Section headers are the file's word: 5,000 of them named .nv_fatbin over
    the same bytes are not walked 5,000 times."""
    b = fake_binary(*[fake_entry() for _ in range(100)])
    sec = b.sections[0]
    b.sections = [Section(".nv_fatbin", sec.addr, sec.size, 0, sec.filesize)] * 5000
    code = fatbin.read(b, names=False)
    assert code.entry_count == 100 and len(code.sections) == 1
    assert code.problems[0].message == "4999 more sections of the same names; only the first read"


def test_unknown_kinds_and_bad_payloads():
    code = fatbin.read(
        fake_binary(
            fake_entry(kind=7, payload=b"\0" * 8),
            fake_entry(payload=b"not an elf".ljust(16, b"\0")),
            fake_entry(payload=b"\x7fELF" + b"\0" * 60),
        )
    )
    assert [e.kind for e in code.entries] == ["unknown", SASS, SASS]
    assert code.entries[0].name is None and code.entries[0].kernels_note == "unknown kind of entry"
    assert "not an ELF file" in code.entries[1].kernels_note
    assert code.entries[2].kernels is None and "unreadable" in code.entries[2].kernels_note
    assert code.listing() == [
        "ELF file    1: fake.1.sm_90.cubin",
        "ELF file    2: fake.2.sm_90.cubin",
    ]


@needs("lz4")
def test_compressed_payloads_that_lie(monkeypatch):
    import lz4.block

    ptx = b".version 9.0\n.target sm_90\n.visible .entry k1(\n)\n.entry k2()\n"
    good = lz4.block.compress(ptx, store_size=False)
    flags = 0x11 | fatbin.FLAG_LZ4
    code = fatbin.read(
        fake_binary(
            fake_entry(fatbin.KIND_PTX, 90, flags, good, csize=len(good), usize=len(ptx)),
            # claims 2**62 bytes: over the budget, nothing allocated
            fake_entry(fatbin.KIND_PTX, 90, flags, good, csize=len(good), usize=1 << 62),
            # claims more than LZ4 can make of its bytes / garbage
            fake_entry(fatbin.KIND_PTX, 90, flags, b"\xff" * 16, csize=16, usize=len(ptx)),
            fake_entry(fatbin.KIND_PTX, 90, flags, good, csize=len(good), usize=len(ptx) - 1),
        )
    )
    assert code.entries[0].kernels == ("k1", "k2")
    with pytest.raises(FormatError, match="LZ4 cannot make"):
        kernels.decompress("lz4", good, 1 << 30)  # refused before lz4 allocates a GiB
    notes = [e.kernels_note for e in code.entries[1:]]
    assert "decompression budget" in notes[0]
    assert "does not decompress" in notes[1] and "does not decompress" in notes[2]
    # the budget: failed attempts count too, so lies cannot add up past it
    assert code.decompressed_bytes == 3 * len(ptx) - 1

    monkeypatch.setenv(fatbin.DECOMPRESS_LIMIT_ENV, "0")
    code = fatbin.read(
        fake_binary(fake_entry(fatbin.KIND_PTX, 90, flags, good, csize=len(good), usize=len(ptx)))
    )
    assert "decompression budget" in code.entries[0].kernels_note


@needs("zstandard")
def test_zstd_frame_claiming_more_than_the_entry():
    import zstandard

    ptx = b".entry k1()\n" * 10
    frame = zstandard.ZstdCompressor().compress(ptx)  # records its content size
    flags = 0x11 | fatbin.FLAG_ZSTD
    code = fatbin.read(
        fake_binary(
            fake_entry(fatbin.KIND_PTX, 90, flags, frame, csize=len(frame), usize=len(ptx)),
            fake_entry(fatbin.KIND_PTX, 90, flags, frame, csize=len(frame), usize=8),
        )
    )
    assert code.entries[0].kernels == ("k1",) * 10 and code.entries[0].kernel_count == 10
    assert "claims 120 bytes, the entry 8" in code.entries[1].kernels_note


def test_without_the_optional_packages(monkeypatch):
    """No lz4/zstandard: compressed entries are listed, their names unread and why."""
    monkeypatch.setattr(kernels, "_module", lambda name: None)
    code = read("kernels_lz4")
    assert [e.arch.name for e in code.entries] == ["sm_100f", "sm_100a", "compute_120f"]
    for e in code.entries:
        assert e.kernels is None
        assert (
            e.kernels_note == "compressed (lz4): needs the lz4 package (pip install 'tvmffi[cuda]')"
        )
    assert code.kernels() == ([], 0, 3)


def test_a_pointer_the_loader_fills_is_found_in_the_relocations():
    """AArch64's ld leaves RELATIVE pointers 0 in the file: the wrapper's
    container is then found through .rela.dyn."""
    data = bytearray((FIX / "kernels.elf").read_bytes())
    woff, _ = section(bytes(data), ".nvFatBinSegment")
    before = fatbin.read(parse_bytes(bytes(data), "k.elf"), names=False).wrappers
    struct.pack_into("<Q", data, woff + 8, 0)
    after = fatbin.read(parse_bytes(bytes(data), "k.elf"), names=False)
    assert after.wrappers == before and after.problems == ()
    assert before[0].container == 0


@pytest.mark.parametrize(
    "value, words",
    [
        (0x1000 + 24, "where no container starts"),  # inside the container
        (0x10, "outside the fat binary sections"),
    ],
)
def test_wrappers_that_point_elsewhere(value, words):
    data = bytearray((FIX / "kernels.elf").read_bytes())
    woff, _ = section(bytes(data), ".nvFatBinSegment")
    base = fatbin.read(parse_bytes(bytes(data), "k.elf"), names=False).wrappers[0].address
    struct.pack_into("<Q", data, woff + 8, base - 0x1000 + value if value > 0x1000 else value)
    code = fatbin.read(parse_bytes(bytes(data), "k.elf"), names=False)
    assert any(words in p.message for p in code.problems), code.problems
    struct.pack_into("<I", data, woff, 0xDEADBEEF)
    code = fatbin.read(parse_bytes(bytes(data), "k.elf"), names=False)
    assert code.wrappers == () and "magic 0xdeadbeef" in code.problems[0].message


def test_an_object_file_leaves_its_pointers_to_the_linker():
    """nvcc -c output: .nv_fatbin read, the wrapper's pointer a relocation
    for the static linker, which is not a problem."""
    data = bytearray((FIX / "kernels.elf").read_bytes())
    woff, _ = section(bytes(data), ".nvFatBinSegment")
    struct.pack_into("<Q", data, woff + 8, 0)
    struct.pack_into("<H", data, 16, 1)  # e_type ET_REL
    b = parse_bytes(bytes(data), "k.o")
    b.relative_relocations = lambda addresses: {}  # an object has no .rela.dyn
    code = fatbin.read(b, names=False)
    assert code.problems == () and code.wrappers[0].address is None
    assert code.listing() == [
        "ELF file    1: k.1.sm_80.cubin",
        "ELF file    2: k.2.sm_90a.cubin",
        "PTX file    1: k.1.sm_90.ptx",
    ]


def test_a_library_without_cuda_code():
    data = (FIX / "kernels.elf").read_bytes()
    b = parse_bytes(data, "k.elf")
    b.sections = [s for s in b.sections if not s.name.startswith((".nv", "__nv"))]
    assert fatbin.read(b) is None


# -- the device verdict ----------------------------------------------------------------


def archs(*names):
    return [CodeArch.parse(n) for n in names]


@pytest.mark.parametrize(
    "have, cc, verdict, arch",
    [
        (("sm_80", "sm_90a", "compute_90"), (9, 0), "sass", "sm_90a"),
        (("sm_80", "sm_90a", "compute_90"), (8, 6), "sass", "sm_80"),  # same major, newer minor
        (("sm_80", "sm_90a", "compute_90"), (8, 0), "sass", "sm_80"),
        (("sm_80", "sm_90a", "compute_90"), (7, 5), "none", None),
        (("sm_80", "sm_90a", "compute_90"), (10, 0), "ptx", "compute_90"),  # JIT forward
        (("sm_80", "sm_90a", "compute_90"), (12, 0), "ptx", "compute_90"),
        (("sm_86",), (8, 0), "none", None),  # SASS never runs on an older minor
        (("sm_90a",), (9, 0), "sass", "sm_90a"),
        (("sm_90a",), (10, 0), "none", None),  # arch-specific: that GPU only
        (("sm_100f",), (10, 3), "sass", "sm_100f"),  # family: 10.x from 10.0 up
        (("sm_100f",), (11, 0), "none", None),
        (("sm_100a", "sm_100f"), (10, 0), "sass", "sm_100a"),  # exact arch-specific first
        (("sm_103f",), (10, 0), "none", None),
        (("compute_120f",), (12, 1), "ptx", "compute_120f"),
        (("compute_120f",), (13, 0), "none", None),
        (("compute_90a",), (9, 0), "ptx", "compute_90a"),
        (("compute_90a",), (10, 0), "none", None),
        (("compute_80", "compute_90"), (9, 0), "ptx", "compute_90"),
        ((), (9, 0), "no-cuda-code", None),
    ],
)
def test_device_support(have, cc, verdict, arch):
    s = device_support(archs(*have), cc)
    assert (s.verdict, s.arch) == (verdict, arch), s.reason
    assert s.to_json()["compute_capability"] == f"{cc[0]}.{cc[1]}"


def test_support_of_the_fixtures_and_from_json():
    code = read("kernels_rdc", names=False)
    # the relocatable compute_80 PTX is not loaded: no JIT for 12.0
    assert code.support((12, 0)).verdict == "none"
    assert fatbin.support_from_json(code.to_json(), (12, 0)) == code.support((12, 0))
    assert read("kernels", names=False).support((12, 0)).arch == "compute_90"


def test_arch_and_cc_parsing():
    assert CodeArch.parse("sm_90a") == CodeArch(SASS, 90, "a")
    assert CodeArch.parse("compute_120f").name == "compute_120f"
    assert parse_cc("9.0") == parse_cc("sm_90") == parse_cc("90") == (9, 0)
    assert parse_cc("10.3") == (10, 3)
    for bad in ("sm_9", "gfx90a", "compute_90x"):
        with pytest.raises(InputError):
            CodeArch.parse(bad)
    with pytest.raises(InputError, match="compute capability"):
        parse_cc("nine")


def test_kernel_name_shortening_for_people():
    from tvmffi_cli.render.cuda import short_kernel_name as short

    assert short("add_one") == "add_one"
    assert short("_Z4fillIiEvPT_S0_l") == "fill<…>"
    assert short("_ZN5liger6detail7moe_fwdILi4EEEvT_") == "moe_fwd<…>"
    assert short("_ZNK1a1bEv") == "b"
    assert short("__nv_static_3__x__ZN3foo3barEv") == "bar"
    assert short("_Z99x") == "_Z99x"  # a length past the end: left alone
    assert re.fullmatch(r"\w+", short("_ZL5localv"))
