"""The __tvm_ffi__library_bin decoder and GPU module decoders: exact values on
hand-made images, every inconsistency reported with its offset, and property
tests that random or mutated input gives a result, never an exception."""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmffi_cli.binary import libbin, modformats


def u64(*xs):
    return struct.pack(f"<{len(xs)}Q", *xs)


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return u64(len(b)) + b


CUDA = modformats.encode_gpu(
    "ptx",
    [("k0", [(2, 32, 1), (1, 8, 1)], ["threadIdx.x"], [0, 0])],
    b"//\n.version 7.0\n.target sm_80\n.address_size 64\n",
)
GOOD = libbin.encode([("_lib", None), ("cuda", CUDA), ("x.kind", b"abc")], [[1, 2], [], []])


def test_roundtrip_exact():
    lb = libbin.decode(GOOD)
    assert lb.errors == []
    assert lb.nbytes == len(GOOD) - 8 and lb.root == 0
    assert [(m.index, m.kind, m.imports, m.blob_size) for m in lb.modules] == [
        (0, "_lib", [1, 2], None),
        (1, "cuda", [], len(CUDA)),
        (2, "x.kind", [], 3),
    ]
    d = lb.modules[1].details.to_json()
    assert d["format"] == "ptx"
    assert d["functions"] == [
        {
            "name": "k0",
            "arg_types": ["float32", "uint8"],
            "launch_param_tags": ["threadIdx.x"],
            "arg_extra_tags": [0, 0],
        }
    ]
    assert d["payload"] == {"type": "ptx", "arch": "sm_80"}
    assert lb.modules[2].details.to_json() == {
        "size": 3,
        "preview": {"hex": "616263", "ascii": "abc"},
    }


def test_layout_matches_spec_by_hand():
    # nbytes, indptr [0, 0], no children, one "_lib" entry.
    img = u64(0) + u64(2, 0, 0) + u64(0) + s("_lib")
    img = u64(len(img) - 8) + img[8:]
    lb = libbin.decode(img)
    assert lb.errors == [] and [m.kind for m in lb.modules] == ["_lib"] and lb.root == 0


def test_huge_count_is_reported_not_allocated():
    img = u64(24) + u64(1 << 40) + bytes(16)
    lb = libbin.decode(img)
    assert lb.modules == []
    assert lb.errors == [
        {
            "offset": 8,
            "message": "import tree indptr: count 1099511627776 at "
            "offset 8 needs 8796093022208 bytes, only 16 "
            "left",
        }
    ]


def test_nbytes_larger_than_symbol():
    lb = libbin.decode(u64(1000) + GOOD[8:])
    assert lb.errors[0]["offset"] == 0 and "nbytes says 1000" in lb.errors[0]["message"]
    assert len(lb.modules) == 3  # still decoded within the symbol


def test_nbytes_smaller_than_content_cuts_decoding():
    lb = libbin.decode(u64(40) + GOOD[8:])
    # indptr (8 + 4*8 bytes) ends exactly at the claimed end; the child vector is cut off
    assert lb.modules == []
    assert [e["offset"] for e in lb.errors] == [48]
    assert "import tree child indices" in lb.errors[0]["message"]


def test_short_symbol():
    lb = libbin.decode(b"\x01\x02")
    assert lb.errors == [
        {"offset": 0, "message": "symbol is 2 bytes, too short for the nbytes header"}
    ]


def test_tree_inconsistencies_with_offsets():
    body = u64(3, 1, 1, 2) + u64(2, 5, 1) + s("_lib") + s("a") + s("x")
    img = u64(len(body)) + body
    lb = libbin.decode(img)
    msgs = {e["offset"]: e["message"] for e in lb.errors}
    assert msgs[16] == "import tree indptr[0] is 1, expected 0"
    assert "child index 5 (entry 0)" in msgs[8 + 32 + 8]
    assert lb.modules[0].imports == []  # tree not trusted when inconsistent


def test_cycle_and_self_import():
    img = libbin.encode([("_lib", None), ("a", b"1"), ("b", b"2")], [[1], [2], [1]])
    lb = libbin.decode(img)
    assert any("cycle" in e["message"] for e in lb.errors)
    img = libbin.encode([("_lib", None), ("a", b"1")], [[1], [1]])
    assert any("imports itself" in e["message"] for e in libbin.decode(img).errors)


def test_trailing_bytes_reported():
    body = GOOD[8:] + b"zz"
    lb = libbin.decode(u64(len(body)) + body)
    assert lb.errors == [
        {"offset": len(GOOD), "message": "2 bytes after the last module are not used"}
    ]


def test_bad_gpu_blob_reported_with_absolute_offset():
    img = libbin.encode([("_lib", None), ("cuda", s("cubin") + u64(99))], [[1], []])
    lb = libbin.decode(img)
    assert len(lb.errors) == 1
    e = lb.errors[0]
    assert e["message"].startswith("module 1 (cuda): cannot decode: ")
    blob_at = lb.modules[1].blob_offset
    assert e["offset"] == blob_at + 13  # the function-map count after fmt (8 + 5 bytes)
    assert lb.modules[1].details == modformats.opaque(lb.modules[1].blob)
    assert lb.modules[1].details.size == 21


def test_older_layout_dtype_strings_without_extra_tags():
    blob = s("cubin") + u64(1) + s("f") + s("f") + u64(1) + s("float32") + u64(1) + s("blockIdx.x")
    blob += s(b"\x7fELF")
    d = modformats.decode_gpu("cuda", blob)[0].to_json()
    assert d["functions"] == [
        {"name": "f", "arg_types": ["float32"], "launch_param_tags": ["blockIdx.x"]}
    ]
    assert d["layout"] == "dtype strings, no arg_extra_tags"


def test_metal_source_map_tail():
    blob = s("metal") + u64(1) + s("k") + s("k") + u64(0) + u64(0) + u64(0)
    blob += u64(1) + s("k") + s("kernel void k() {}")
    got, payload = modformats.decode_gpu("metal", blob)
    d = got.to_json()
    assert got.tail.parts == (modformats.Part("k", len(blob) - 18, 18),)
    assert d["sources"] == ["k"] and d["payload_size"] == 18 and payload is None


@pytest.mark.parametrize(
    "code,bits,lanes,text",
    [
        (0, 32, 1, "int32"),
        (1, 8, 1, "uint8"),
        (2, 16, 4, "float16x4"),
        (4, 16, 1, "bfloat16"),
        (6, 8, 1, "bool"),
        (3, 64, 1, "handle"),
        (12, 8, 1, "float8_e5m2"),
        (3, 0, 0, "void"),
        (2, 32, 0xFFFC, "float32xvscalex4"),
    ],
)
def test_dtype_strings(code, bits, lanes, text):
    assert modformats.dtype_str(code, bits, lanes) == text


def test_cubin_arch_new_abi():
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x41, 8]) + bytes(7)
    hdr = ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, 0, 100 << 8, 64, 56, 0, 64, 0, 0)
    assert modformats.read_payload(hdr).to_json() == {
        "type": "cubin",
        "e_machine": 190,
        "arch": "sm_100",
    }
    assert modformats.read_payload(struct.pack("<I", 0xBA55ED50) + bytes(12)).to_json() == {
        "type": "fatbin"
    }


def _check(lb):
    assert isinstance(lb, libbin.LibraryBin)
    for e in lb.errors:
        assert 0 <= e["offset"] <= max(lb.symbol_size, 0) + 8 and e["message"]
    for m in lb.modules:
        assert all(0 <= c < len(lb.modules) for c in m.imports) or lb.errors
        if m.blob is not None:
            assert m.blob_offset + m.blob_size <= lb.symbol_size


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_random_bytes_never_raise(data):
    _check(libbin.decode(data))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, len(GOOD) - 1), st.integers(0, 255)), max_size=8),
    st.integers(0, len(GOOD)),
)
def test_mutated_images_never_raise(edits, cut):
    b = bytearray(GOOD)
    for at, val in edits:
        b[at] = val
    _check(libbin.decode(bytes(b[:cut])))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(modformats.GPU_KINDS + ("other",)),
    st.binary(max_size=256),
    st.lists(st.tuples(st.integers(0, len(CUDA) - 1), st.integers(0, 255)), max_size=6),
)
def test_gpu_decoder_never_raises(kind, junk, edits):
    b = bytearray(CUDA)
    for at, val in edits:
        b[at] = val
    for blob in (bytes(b), junk):
        errs = []
        d = modformats.decode(kind, blob, 100, errs, 1)
        assert isinstance(d.to_json(), dict)
        assert all(e["offset"] >= 100 for e in errs)
