"""abi/dtypes.py against the official runtime, in both directions: what it
parses from text and what it prints for a DLDataType (asked in a subprocess:
the official package must not load next to our runtime)."""

import importlib.util
import json
import subprocess
import sys

import pytest

from tvmffi_cli.abi import dtypes
from tvmffi_cli.errors import InputError

TEXTS = [
    "float32",
    "int8x4",
    "float16x2",
    "bool",
    "boolx2",
    "handle",
    "uint1",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e4m3fnx2",
    "float4_e2m1fnx2",
    "int32xvscalex4",
    "int",
    "uint",
    "float",
    "handle64",
    "bool8",
    "float32x1",
    "uint64x3",
]
TRIPLES = [
    (0, 32, 1),
    (0, 8, 4),
    (2, 16, 2),
    (6, 8, 1),
    (6, 8, 4),
    (6, 16, 1),
    (3, 64, 1),
    (3, 32, 1),
    (3, 64, 2),
    (1, 1, 1),
    (4, 16, 1),
    (10, 8, 2),
    (17, 4, 2),
    (7, 8, 1),
    (2, 32, 0x10000 - 4),
    (1, 64, 3),
]

OFFICIAL = r"""
import json, sys, tvm_ffi
texts, triples = json.loads(sys.argv[1])
parsed = []
for s in texts:
    d = tvm_ffi.dtype(s)
    parsed.append([d.type_code, d.bits, d.lanes & 0xFFFF])
printed = []
for c, b, l in triples:
    lanes = l - 0x10000 if l >= 0x8000 else l
    printed.append(str(tvm_ffi.dtype.from_dlpack_data_type((c, b, lanes))))
errors = []
for s in ["custom200_32"]:
    try:
        tvm_ffi.dtype(s)
        errors.append(None)
    except Exception as e:
        errors.append(str(e))
print(json.dumps({"parsed": parsed, "printed": printed, "errors": errors}))
"""


@pytest.fixture(scope="module")
def official():
    # find_spec, not importorskip: importing tvm_ffi here would load the
    # official runtime into this process, next to ours.
    if importlib.util.find_spec("tvm_ffi") is None:
        pytest.skip("apache-tvm-ffi (reference) not installed")
    r = subprocess.run(
        [sys.executable, "-c", OFFICIAL, json.dumps([TEXTS, TRIPLES])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_parse_agrees_with_the_official_parser(official):
    for text, triple in zip(TEXTS, official["parsed"]):
        assert dtypes.parse_dtype(text) == tuple(triple), text


def test_format_agrees_with_the_official_printer(official):
    for triple, text in zip(TRIPLES, official["printed"]):
        assert dtypes.format_dtype(*triple) == text, triple


def test_custom_types_use_the_bracket_spelling(official):
    # The official parser wants "custom[" (it resolves the name through a
    # registry neither runtime ships); custom200_32 is not a dtype there.
    assert "brace" in official["errors"][0]
    assert dtypes.format_dtype(200, 32, 1) == "custom[200]32"
    assert dtypes.format_dtype(200, 32, 2) == "custom[200]32x2"
    assert dtypes.parse_dtype("custom[200]32x2") == (200, 32, 2)
    with pytest.raises(InputError):
        dtypes.parse_dtype("custom200_32")
    with pytest.raises(InputError):
        dtypes.parse_dtype("custom[100]32")  # below the custom code range


@pytest.mark.parametrize("text", TEXTS + ["complex64", "complex128x2", "void", "custom[129]8"])
def test_round_trip(text):
    t = dtypes.parse_dtype(text)
    assert dtypes.parse_dtype(dtypes.format_dtype(*t)) == t


@pytest.mark.parametrize(
    "text", ["handlex2", "handle32", "int32x32768", "int32xvscalex1", "voidx2", "int0"]
)
def test_texts_that_cannot_round_trip_are_refused(text):
    with pytest.raises(InputError, match="dtype"):
        dtypes.parse_dtype(text)
