"""`tvmffi inspect` and `tvmffi extract` on CUDA code: the committed nvcc-built
fixtures (fixtures/cuda_fatbin), a gcc-built loadable library carrying the
same fat binary (loaded mode), and a public wheel's kernel library
(liger-cute-kernels 0.8.5, fetched into the cache; skipped when the registry
cannot be reached). About 10 s, most of it CLI start-ups and the first
fetch of the 81 MB wheel."""

import hashlib
import json
import os
import re
from io import BytesIO, StringIO
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import fixturebuild
import releases
from test_call_helpers import tvmffi, validate
from test_fatbin import FIX, cuobjdump, needs, recorded
from tvmffi_cli import extract
from tvmffi_cli.binary import fatbin, kernels
from tvmffi_cli.inspect.engine import cuda_support

ENV = {"NO_COLOR": "1", "COLUMNS": "200", "TVMFFI_DEBUG": ""}
LIGER = ("liger-cute-kernels", "0.8.5", "liger_cute_kernels/libliger_cute_kernels_sm90a.so")


def inspect_json(path, *flags, env=None):
    r = tvmffi("inspect", "--json", *flags, path, env={**ENV, **(env or {})})
    assert r.returncode == 0, r.stderr
    return validate(json.loads(r.stdout), "inspect")


def cuda_branch(text):
    """The lines of the CUDA code branch of a tree, from its head on."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if "CUDA code" in ln)
    return [ln.rstrip() for ln in lines[at:]]


def test_static_json_of_the_fixture():
    rep = inspect_json(FIX / "kernels.elf", "--static")
    assert rep["errors"] == [] and [f["name"] for f in rep["functions"]] == ["add_one"]
    cuda = rep["cuda"]
    assert (cuda["sass"], cuda["ptx"], cuda["loaded"]) == (
        ["sm_80", "sm_90a"],
        ["compute_90"],
        "executable",
    )
    assert cuda["kernels"] == ["_Z4fillIiEvPT_S0_l", "scale", "add_one"]
    assert [e["name"] for e in cuda["entries"]] == [
        "kernels.1.sm_80.cubin",
        "kernels.2.sm_90a.cubin",
        "kernels.1.sm_90.ptx",
    ]
    assert cuda["summary"] == {
        "executable": {
            "sass": {"sm_80": 1, "sm_90a": 1},
            "ptx": {"compute_90": 1},
            "compression": {"none": 3},
        }
    }
    # the pure verdict, as the lead's device query will ask for it
    assert cuda_support(rep, (8, 9)) == {
        "compute_capability": "8.9",
        "verdict": "sass",
        "arch": "sm_80",
        "reason": "sm_80 machine code runs on sm_89",
    }
    assert cuda_support(rep, (12, 0))["verdict"] == "ptx"
    validate(rep, "inspect")


def test_no_cuda_code_is_null(tmp_path):
    rep = inspect_json(fixturebuild.build("c/basic.c", headers="ours"), "--static")
    assert rep["cuda"] is None
    assert cuda_support(rep, (9, 0)) is None


def test_human_tree_of_the_fixtures():
    r = tvmffi("inspect", "--static", FIX / "kernels.elf", env=ENV)
    assert r.returncode == 0, r.stderr
    assert cuda_branch(r.stdout) == [
        "└── CUDA code (.nv_fatbin 15.7 KiB)",
        "    ├── SASS: sm_80, sm_90a",
        "    ├── PTX: compute_90 (the driver JIT-compiles it for GPUs without SASS)",
        "    ├── compression: none",
        "    ├── kernels (3): fill<…>, scale, add_one",
        "    └── entries (3)",
        "        ├── ELF kernels.1.sm_80.cubin  6.2 KiB, 3 kernels",
        "        ├── ELF kernels.2.sm_90a.cubin  7.3 KiB, 3 kernels",
        "        └── PTX kernels.1.sm_90.ptx  2.0 KiB, 3 kernels",
    ]
    r = tvmffi("inspect", "--static", FIX / "kernels_rdc.elf", env=ENV)
    branch = cuda_branch(r.stdout)
    assert branch[1:4] == [
        "    ├── SASS: sm_80, sm_90a",
        "    ├── PTX: none (no JIT: only GPUs the SASS is for can run it)",
        "    ├── compression: zstd 2 of 2",
    ]
    assert branch[-1] == (
        "    └── relocatable device code (input of the device link, not loaded): 3 entries: "
        "SASS sm_80, sm_90a; PTX compute_80"
    )


def test_device_line_in_the_tree():
    from rich.console import Console

    from tvmffi_cli.inspect.engine import run
    from tvmffi_cli.render.inspect import build

    rep = run(FIX / "kernels_lz4.elf", static=True)
    cuda_support(rep, (9, 0))
    console = Console(width=200, no_color=True, record=True, file=StringIO())
    console.print(build(rep))
    assert cuda_branch(console.export_text())[-1] == (
        "    └── this GPU (compute capability 9.0): nothing it can run (nothing runs on "
        "sm_90: the library has compute_120f, sm_100a, sm_100f)"
    )


def embedded_library():
    """A gcc-built TVM-FFI library with kernels.elf's fat binary in its .nv_fatbin."""
    data = (FIX / "kernels.elf").read_bytes()
    blob = ELFFile(BytesIO(data)).get_section_by_name(".nv_fatbin").data()
    # beside the fixture builds, named by content: one build, whatever the session
    path = fixturebuild.BUILD / f"kernels-{hashlib.sha256(blob).hexdigest()[:12]}.nv_fatbin"
    if not path.exists():
        fixturebuild.BUILD.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(blob)
        os.replace(tmp, path)
    return fixturebuild.build(
        "cuda_fatbin/embed.c", headers="ours", defines=[f'FATBIN_FILE="{path}"']
    )


def test_loaded_mode_lists_the_same_cuda_code():
    lib = embedded_library()
    loaded = inspect_json(lib)
    static = inspect_json(FIX / "kernels.elf", "--static")
    assert loaded["mode"] == "loaded" and loaded["errors"] == []
    assert [f["name"] for f in loaded["functions"]] == ["kernel_count", "tensor_ndim"]

    def facts(cuda):
        return [(e["arch"], e["kind"], e["size"], e["kernels"]) for e in cuda["entries"]]

    assert facts(loaded["cuda"]) == facts(static["cuda"])
    assert loaded["cuda"]["wrappers"][0]["container"] == 0
    stem = Path(lib).stem
    assert [e["name"] for e in loaded["cuda"]["entries"]] == [
        f"{stem}.1.sm_80.cubin",
        f"{stem}.2.sm_90a.cubin",
        f"{stem}.1.sm_90.ptx",
    ]
    r = tvmffi("inspect", lib, env=ENV)
    assert r.returncode == 0 and "(loaded)" in r.stdout.splitlines()[0]
    assert cuda_branch(r.stdout)[1] == "    ├── SASS: sm_80, sm_90a"


@pytest.fixture(scope="module")
def standin_driver():
    return fixturebuild.build(
        "cuda/standin_cuda.c",
        headers="none",
        link_runtime=False,
        flags=("-pthread", "-Wl,-soname,libcuda.so.1"),
    )


@pytest.mark.parametrize(
    "cc,verdict,arch",
    [
        ("8.6", "sass", "sm_80"),
        ("9.0", "sass", "sm_90a"),
        ("10.0", "ptx", "compute_90"),
        ("7.5", "none", None),
    ],
)
def test_loaded_mode_judges_each_gpu_of_the_machine(standin_driver, cc, verdict, arch):
    """The worker asks the driver (here the stand-in, which reports the
    compute capability it is given) before the library loads; each device
    gets the verdict of its compute capability."""
    env = {
        "TVMFFI_CUDA_DRIVER": str(standin_driver),
        "TVMFFI_STANDIN_CUDA_CC": cc,
        "TVMFFI_STANDIN_CUDA_DEVICES": "2",
    }
    cuda = inspect_json(embedded_library(), env=env)["cuda"]
    assert [
        (d["device"], d["compute_capability"], d["verdict"], d["arch"]) for d in cuda["devices"]
    ] == [(f"cuda:{i}", cc, verdict, arch) for i in (0, 1)]
    assert cuda["device"] == cuda["devices"][0] and cuda["devices_note"] is None
    assert cuda["device"]["name"] == "tvmffi stand-in CUDA driver (no GPU)"
    r = tvmffi("inspect", embedded_library(), env={**ENV, **env})
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in cuda_branch(r.stdout) if "compute capability" in ln]
    assert len(lines) == 2 and lines[0].endswith(
        {
            "sass": f"SASS {arch}",
            "ptx": f"PTX JIT of {arch} (the first load compiles it)",
            "none": "nothing it can run (nothing runs on sm_75: the library has compute_90, sm_80, "
            "sm_90a)",
        }[verdict]
    ), lines


@pytest.mark.parametrize("cc", ["9.0", "7.5"])
def test_call_refuses_a_gpu_the_library_has_no_code_for(standin_driver, cc):
    """CUDA tensors on a GPU the fat binary has nothing for: one line, exit 2,
    before the call (not CUDA_ERROR_NO_BINARY_FOR_GPU at the first launch)."""
    env = {**ENV, "TVMFFI_CUDA_DRIVER": str(standin_driver), "TVMFFI_STANDIN_CUDA_CC": cc}
    lib = embedded_library()
    r = tvmffi("call", lib, "tensor_ndim", "float32[2,3]:ones@cuda", env=env)
    if cc == "9.0":
        assert (r.returncode, r.stdout.splitlines()[0]) == (0, "2"), r.stderr
    else:
        assert (r.returncode, r.stdout) == (2, ""), r.stderr
        assert r.stderr.strip() == (
            f"tvmffi: error: {Path(lib).name} has no CUDA code for cuda:0 (tvmffi stand-in CUDA "
            "driver (no GPU)): nothing runs on sm_75: the library has compute_90, sm_80, sm_90a"
        )


def test_loaded_mode_without_a_driver_says_why_no_gpu_was_judged():
    cuda = inspect_json(
        embedded_library(), env={"TVMFFI_CUDA_DRIVER": "/nonexistent/libcuda.so.1"}
    )["cuda"]
    assert cuda["devices"] == [] and cuda["device"] is None
    assert cuda["devices_note"].startswith("no CUDA driver: TVMFFI_CUDA_DRIVER=/nonexistent")


@needs("lz4", "zstandard")
@pytest.mark.parametrize("lib", ["kernels", "kernels_lz4", "kernels_rdc"])
def test_extract_writes_what_cuobjdump_extracts(lib, tmp_path):
    """Every entry, decompressed, byte for byte as `cuobjdump -xelf/-xptx all`
    writes it (sha256 recorded in cuobjdump.txt)."""
    rec = recorded()[f"cuobjdump -all -xelf all -xptx all {lib}.elf; sha256sum *.cubin *.ptx"]
    want = dict(reversed(line.split()) for line in rec)
    r = tvmffi("extract", FIX / f"{lib}.elf", "-o", tmp_path / "o", "--json")
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "extract")
    files = {f["file"]: f for f in doc["files"] if f["kind"] == "fatbin"}
    assert sorted(files) == sorted(want)
    for name, digest in want.items():
        assert hashlib.sha256((tmp_path / "o" / name).read_bytes()).hexdigest() == digest
        assert files[name]["sha256"] == digest
    code = fatbin.read_path(str(FIX / f"{lib}.elf"), names=False)
    assert [f["architecture"] for f in files.values()] == [e.arch.name for e in code.entries]


def test_extract_without_the_optional_packages(tmp_path, monkeypatch):
    monkeypatch.setattr(kernels, "_module", lambda name: None)
    r = extract.run(str(FIX / "kernels_lz4.elf"), str(tmp_path / "o"))
    got = [(e.file, e.format) for e in r.entries if e.kind == "fatbin"]
    assert got == [
        ("kernels_lz4.1.sm_100.cubin.lz4", "lz4"),
        ("kernels_lz4.2.sm_100a.cubin.lz4", "lz4"),
        ("kernels_lz4.1.sm_120f.ptx.lz4", "lz4"),
    ]
    assert r.errors == ()
    code = fatbin.read_path(str(FIX / "kernels_lz4.elf"), names=False)
    first = code.entries[0]
    data = (FIX / "kernels_lz4.elf").read_bytes()
    packed = data[first.offset : first.offset + first.compressed_size]
    assert (tmp_path / "o" / got[0][0]).read_bytes() == packed


# -- a public wheel: liger-cute-kernels 0.8.5, 49 MB, 43 MB of fat binaries ---------


@pytest.fixture(scope="module")
def liger():
    dist, version, member = LIGER
    return releases.extract(releases.fetch_wheel(dist, version), member)


def test_liger_cute_kernels_sm90a(liger, tmp_path):
    rec = recorded(FIX / "liger_cute_kernels-0.8.5.cuobjdump.txt")
    rep = inspect_json(liger, "--static")
    cuda = rep["cuda"]
    assert rep["errors"] == [] and len(rep["functions"]) == 33
    assert (cuda["sass"], cuda["ptx"]) == (["sm_90a"], [])
    assert cuda["summary"]["relocatable"]["ptx"] == {"compute_90": 2}
    code = fatbin.read_path(str(liger), names=False)
    name = liger.name
    assert code.listing() == rec[f"cuobjdump --list-elf --list-ptx {name}"]
    assert code.listing(every=True) == rec[f"cuobjdump -all --list-elf --list-ptx {name}"]
    # kernels: the three uncompressed images as cuobjdump -res-usage counts
    # them; the 81 MB LZ4 image is over the default decompression budget
    usage = [line.split() for line in rec[next(k for k in rec if "-res-usage" in k)]]
    loaded = [e for e in cuda["entries"] if e["role"] == "executable"]
    assert [e["kernel_count"] for e in loaded[:3]] == [int(n) for _a, n in usage[:3]]
    assert "decompression budget" in loaded[3]["kernels_note"]
    assert (cuda["kernel_count"], cuda["kernels_unread"]) == (21, 1)
    assert cuda_support(rep, (9, 0))["verdict"] == "sass"
    assert cuda_support(rep, (10, 0))["verdict"] == "none"


@needs("lz4")
def test_liger_with_a_raised_budget(liger, monkeypatch):
    """Every kernel of the big image once the budget allows it: cuobjdump's
    168 functions less the 5 device functions that are not kernels."""
    monkeypatch.setenv(fatbin.DECOMPRESS_LIMIT_ENV, str(128 << 20))
    code = fatbin.read_path(str(liger))
    big = code.loaded()[3]
    assert (big.compression, big.uncompressed_size, big.kernel_count) == ("lz4", 81488032, 163)
    assert not any(re.match(r"__cuda_sm20_|_Z\d+nvshmemi_transfer", k) for k in big.kernels)


def test_liger_live_cuobjdump(liger):
    import subprocess

    tool = cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not installed (pip install '.[test]' brings nvidia-cuda-cuobjdump)")
    r = subprocess.run(
        [tool, "-all", "--list-elf", "--list-ptx", str(liger)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fatbin.read_path(str(liger), names=False).listing(True) == r.stdout.splitlines()
