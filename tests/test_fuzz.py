"""Fuzzing (bench/fuzz): the bounded CI run of every target under both engines,
the harness itself on planted bugs, the seeds being valid inputs, and one
regression test per bug the campaign found."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_cli.abi import typeschema as schema
from tvmffi_cli.binary import libbin, modformats, parse_bytes
from tvmffi_cli.call import argv, literals
from tvmffi_cli.errors import FormatError, InputError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import fuzz  # noqa: E402
import fuzz_targets  # noqa: E402

TARGETS = sorted(fuzz_targets.TARGETS)
# A few seconds per target and engine at most (hypothesis runs ~200-600
# inputs/s here, atheris 150-7000/s depending on the target).
HYPOTHESIS_EXECS = 300
ATHERIS_EXECS = 600


def _has_atheris():
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def _summary(stats):
    return [(f["key"], f["message"], f.get("input")) for f in stats["findings"]]


# -- the bounded campaign ---------------------------------------------------


@pytest.mark.parametrize("name", TARGETS)
def test_hypothesis_engine_finds_nothing(name, tmp_path):
    stats = fuzz.run_hypothesis(
        fuzz_targets.TARGETS[name], HYPOTHESIS_EXECS, seconds=20, seed=1, artifacts=tmp_path
    ).to_json()
    # a loaded machine may spend the time budget before 100 inputs
    assert stats["execs"] >= min(HYPOTHESIS_EXECS, 100) or stats["seconds"] >= 20, stats
    assert stats["crashes"] == 0, _summary(stats)
    assert stats["distinct"] == 0


@pytest.mark.skipif(not _has_atheris(), reason="atheris not installed (pip install '.[test]')")
@pytest.mark.parametrize("name", TARGETS)
def test_atheris_engine_finds_nothing(name, tmp_path):
    stats = fuzz.run(name, "atheris", ATHERIS_EXECS, seconds=20, seed=1, artifacts=tmp_path)
    assert stats["crashes"] == 0, _summary(stats)
    assert stats["execs"] == ATHERIS_EXECS or stats["seconds"] >= 20, stats


# -- the harness on planted bugs ----------------------------------------------


@pytest.fixture
def selftest(monkeypatch):
    monkeypatch.setenv("TVMFFI_FUZZ_SELFTEST", "1")
    t = fuzz_targets.SelfTestTarget()
    monkeypatch.setitem(fuzz_targets.TARGETS, "selftest", t)
    return t


def test_check_classifies_outcomes(selftest):
    check = fuzz_targets.check
    assert check(selftest, b"ok").kind == "ok"
    assert check(selftest, b"bad").kind == "error"
    out = check(selftest, b"!ab")
    assert out.kind == "finding" and out.exc_type == "IndexError"
    assert out.frame is None  # planted outside tvmffi_cli
    assert out.key == "IndexError @ <outside tvmffi_cli>"
    masked = check(selftest, b"?x")
    assert (masked.kind, masked.exc_type) == ("masked", "KeyError")
    hidden = check(selftest, b"M")
    assert (hidden.kind, hidden.exc_type) == ("finding", "MemoryError")


def test_check_names_the_innermost_project_frame():
    class Bad(fuzz_targets.Target):
        name = "bad"

        def run(self, data):
            # literals.parse_dtype (abi.dtypes) calls str methods on its argument.
            literals.parse_dtype(data)

    out = fuzz_targets.check(
        Bad(), b"float32"
    )  # bytes, not str: a TypeError inside the dtype parser
    assert out.kind == "finding" and out.exc_type == "TypeError"
    assert out.frame[0] == "tvmffi_cli/abi/dtypes.py" and out.frame[2] == "_parse_base"


def test_check_reports_a_hang_as_a_finding():
    class Slow(fuzz_targets.Target):
        name = "slow"

        def run(self, data):
            while True:
                pass

    out = fuzz_targets.check(Slow(), b"", timeout=0.2)
    assert (out.kind, out.exc_type) == ("finding", "FuzzTimeout")


def test_hypothesis_engine_counts_and_dedupes(selftest, tmp_path):
    st = fuzz.run_hypothesis(selftest, 400, seed=3, artifacts=tmp_path).to_json()
    assert st["execs"] == 400
    keys = sorted(f["key"] for f in st["findings"])
    assert keys == ["IndexError @ <outside tvmffi_cli>", "MemoryError @ <outside tvmffi_cli>"]
    assert st["crashes"] == sum(f["count"] for f in st["findings"]) > 2
    assert st["masked"] > 0 and st["project_errors"] > 0
    for f in st["findings"]:  # the smallest input is kept, with its traceback
        data = Path(f["input"]).read_bytes()
        assert len(data) == f["size"] and data[:1] in (b"!", b"M")
        assert f["key"] in Path(f["input"]).with_suffix(".txt").read_text()


def test_bench_fuzz_exits_nonzero_on_findings(tmp_path):
    env = dict(os.environ, TVMFFI_FUZZ_SELFTEST="1", PYTHON=sys.executable)
    r = subprocess.run(
        [
            str(ROOT / "bench" / "fuzz"),
            "--target",
            "selftest",
            "--engine",
            "hypothesis",
            "--execs",
            "200",
            "--json",
            "--artifacts",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    rep = json.loads(r.stdout)
    (res,) = rep["results"]
    assert res["execs"] == 200 and res["distinct"] == 2 and res["crashes"] > 0


@pytest.mark.skipif(not _has_atheris(), reason="atheris not installed (pip install '.[test]')")
def test_atheris_child_counts_findings(selftest, tmp_path, monkeypatch):
    monkeypatch.setenv("TVMFFI_FUZZ_SELFTEST", "1")
    st = fuzz.run("selftest", "atheris", 3000, seconds=30, artifacts=tmp_path)
    assert st["execs"] == 3000
    # libFuzzer reaches b"!" from the seeds "ok"/"bad" by itself.
    assert "IndexError @ <outside tvmffi_cli>" in [f["key"] for f in st["findings"]]


def test_repro_replays_a_saved_input(tmp_path):
    p = tmp_path / "in.bin"
    p.write_bytes(b"float32[2 3]:zeros")
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "fuzz.py"),
            "--repro",
            str(p),
            "--target",
            "literals",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "contract holds" in r.stdout


# -- the seeds are valid inputs (so mutations start from real structure) ---


def test_libbin_seeds_decode_cleanly():
    blobs = fuzz_targets.libbin_blobs()
    for b in blobs:
        lb = libbin.decode(b)
        assert lb.errors == [], lb.errors
    kinds = [[m.kind for m in libbin.decode(b).modules] for b in blobs]
    assert kinds[:3] == [[], ["_lib"], ["_lib", "cuda"]]
    assert ["_lib", "cuda", "acme.custom", "opencl"] in kinds


def test_gpu_seeds_decode_in_every_layout():
    got = {}
    for kind, blob in fuzz_targets.gpu_blobs():
        errors = []
        d = modformats.decode(kind, blob, 0, errors, 0).to_json()
        assert errors == [], (kind, errors)
        got.setdefault(kind, []).append(d)
    assert got["cuda"][0]["functions"][0]["arg_types"] == ["float32", "int64", "handle"]
    assert got["cuda"][0]["payload"] == {"type": "cubin", "e_machine": 190, "arch": "sm_80"}
    assert got["cuda"][1]["payload"] == {"type": "ptx", "arch": "sm_80"}
    assert got["cuda"][2]["layout"] == "dtype strings, no arg_extra_tags"
    assert got["metal"][0]["sources"] == ["k0", "k1"]
    assert got["vulkan"][0]["shaders"] == ["main"] and got["vulkan"][0]["payload_size"] == 12


def test_generated_binaries_parse():
    m = parse_bytes(fuzz_targets.tiny_macho())
    assert (m.format, m.arch) == ("macho", "x86_64")
    assert sorted(s.name for s in m.symbols) == ["__tvm_ffi__library_bin", "__tvm_ffi_f"]
    assert m.imports == ["TVMFFIAnyViewToOwnedAny"]
    fat = parse_bytes(
        fuzz_targets.make_fat(
            [("x86_64", fuzz_targets.tiny_macho()), ("arm64", fuzz_targets.tiny_macho())], align=64
        )
    )
    assert fat.format == "macho"
    pe = parse_bytes(fuzz_targets.tiny_pe())
    assert (pe.format, pe.arch, pe.bits) == ("pe", "x86_64", 64)
    assert [s.name for s in pe.sections] == [".text"]


def test_elf_seeds_are_fixture_libraries():
    files = fuzz_targets.elf_seed_files()
    if not files:
        pytest.skip("gcc could not build the fixture libraries")
    b = parse_bytes(Path(files[0]).read_bytes())
    assert b.format == "elf"
    assert {"__tvm_ffi_add", "__tvm_ffi__library_bin"} <= {s.name for s in b.symbols}


# -- regressions: one per bug the campaign found -----------------------------


@pytest.mark.parametrize(
    "text", ["float32[2 3]:zeros", "int8[" + "9" * 5000 + "]", "int8[99999999999999999999]"]
)
def test_tensor_literal_bad_dimension_is_input_error(text):
    with pytest.raises(InputError, match="each dimension is a number"):
        literals.parse_tensor_literal(text)


def test_tensor_literal_dimensions_still_parse():
    spec = literals.parse_tensor_literal("float32[ 2 , 3 ]:ones")
    assert spec.shape == (2, 3) and spec.fill == "ones"


@pytest.mark.parametrize(
    "text,msg",
    [("int" + "9" * 5000, "bits must be 1..255"), ("int8x" + "9" * 5000, "lanes must be 1..32767")],
)
def test_dtype_with_huge_digit_runs_is_input_error(text, msg):
    with pytest.raises(InputError, match=msg):
        literals.parse_dtype(text)


@pytest.mark.parametrize(
    "text,msg",
    [
        ("0x_", "bad int"),
        ("1__2", "bad int"),
        ("1_", "bad int"),
        ("9" * 5000, "out of the int64 range"),
    ],
)
def test_int_that_int_refuses_is_input_error(text, msg):
    with pytest.raises(InputError, match=msg):
        literals.parse_int(text)
    assert literals.parse_int("1_000") == 1000 and literals.parse_int("0x_ff") == 255


@pytest.mark.parametrize("text", ["9" * 5000, "cpu:" + "9" * 5000, "\u00b2", "cuda:\u0663"])
def test_device_with_bad_digits_is_input_error(text):
    with pytest.raises(InputError, match="bad device"):
        literals.parse_device(text)
    assert literals.parse_device("7:3") == (7, 3)


def test_nul_in_a_path_is_input_error(tmp_path):
    with pytest.raises(InputError, match="NUL"):
        literals.parse_tensor("~a\0b.npy", str(tmp_path))
    with pytest.raises(InputError, match="NUL"):
        literals.parse_bytes("@x\0y", str(tmp_path))
    # The way it is reached: a JSON string converted to a Tensor argument.
    with pytest.raises(InputError, match="NUL"):
        argv.json_for_type("~\0", {"type": "ffi.Tensor"})


def test_bytes_from_a_non_utf8_argv_word():
    spec = schema.parse_type('{"type": "ffi.Bytes"}')
    word = b"\xff\x00a".decode("utf-8", "surrogateescape")  # how Python hands argv over
    assert schema.convert_literal(spec, word) == b"\xff\x00a"
    with pytest.raises(InputError, match="lone surrogate"):
        schema.convert_literal(spec, "\ud800")  # from JSON "\ud800": no bytes to give back


def test_format_error_is_an_input_error():
    # The contract relies on every project error deriving from TvmffiError.
    assert issubclass(FormatError, InputError)


def test_elf_section_table_too_close_to_the_end_is_a_plain_format_error():
    # shnum 0 (extended numbering) makes the reader read section 0; an offset
    # 20 bytes before the end left no room for it (struct.error under the
    # safety net before the fix).
    import struct

    data = bytearray(200)
    data[:16] = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<HHIQQQIHHHHHH", data, 16, 3, 62, 1, 0, 0, 180, 0, 64, 56, 0, 64, 0, 0)
    with pytest.raises(FormatError, match="past the end of the file") as ei:
        parse_bytes(bytes(data))
    assert ei.value.__context__ is None
    assert fuzz_targets.check(fuzz_targets.TARGETS["elf"], bytes(data)).kind == "error"


def test_an_allocation_by_an_untrusted_size_is_a_finding(tmp_path):
    # The children run under an address-space limit (1 GiB by default), so a
    # 2 GiB allocation fails as a MemoryError instead of succeeding quietly.
    p = tmp_path / "alloc.bin"
    p.write_bytes(b"ALLOC")
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "fuzz.py"),
            "--repro",
            str(p),
            "--target",
            "selftest",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, TVMFFI_FUZZ_SELFTEST="1"),
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "finding: MemoryError @ <outside tvmffi_cli>" in r.stdout
