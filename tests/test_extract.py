"""`tvmffi extract`: embedded modules and GPU binaries to files, from the
file's bytes only. Fixture libraries are compiled in the test run
(tools_fixtures.py)."""

import hashlib
import json
import os
import re

import pytest

import tools_fixtures as tf
from test_call_helpers import tvmffi, validate
from tvmffi_cli import extract
from tvmffi_cli.binary import libbin, open_binary

NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,95}$")


def manifest_of(doc):
    """The --json document without the keys every command's --json adds
    (cli/jsonout.py); the rest is manifest.json."""
    return {k: v for k, v in doc.items() if k not in ("runtime", "sandbox", "elapsed_s")}


def _extract(lib, out, *flags):
    r = tvmffi("extract", lib, "-o", out, "--json", *flags)
    doc = json.loads(r.stdout) if r.stdout.strip() else None
    return r, doc


def _symbol_bytes(lib, symbol):
    with open_binary(lib) as b:
        return b.read_symbol_bytes(b.get(symbol))


def test_three_module_tree(tmp_path):
    lib = tf.three_module_tree()
    out = tmp_path / "out"
    r, doc = _extract(lib, out)
    assert r.returncode == 0, r.stderr
    validate(doc, "extract")
    assert doc["errors"] == []
    by_file = {f["file"]: f for f in doc["files"]}
    assert sorted(by_file) == [
        "module1-cuda.bin",
        "module1-cuda.cubin",
        "module2-opencl.bin",
        "module2-opencl.cl",
    ]
    assert sorted(os.listdir(out)) == sorted([*by_file, "manifest.json"])
    assert json.loads((out / "manifest.json").read_text()) == manifest_of(doc)

    cubin = by_file["module1-cuda.cubin"]
    assert (cubin["kind"], cubin["format"], cubin["architecture"]) == ("payload", "cubin", "sm_86")
    assert cubin["kernels"] == ["add_kernel", "scale_kernel"]
    assert (out / "module1-cuda.cubin").read_bytes() == tf.fake_cubin(86)
    assert (out / "module2-opencl.cl").read_bytes() == tf.OPENCL_SRC
    assert by_file["module2-opencl.cl"]["format"] == "text"
    assert by_file["module2-opencl.cl"]["kernels"] == ["copy"]

    # Every file is the bytes at (symbol, offset) of the library, and its hash.
    lb = _symbol_bytes(lib, "__tvm_ffi__library_bin")
    for f in doc["files"]:
        data = (out / f["file"]).read_bytes()
        assert f["symbol"] == "__tvm_ffi__library_bin"
        assert lb[f["offset"] : f["offset"] + f["size"]] == data
        assert len(data) == f["size"] and hashlib.sha256(data).hexdigest() == f["sha256"]
    assert by_file["module1-cuda.bin"]["module_index"] == 1
    assert by_file["module2-opencl.bin"]["module_kind"] == "opencl"


def test_tvm_cuda_output_ptx_and_fatbin(tmp_path):
    r, doc = _extract(tf.tvm_cuda_output(), tmp_path / "o")
    assert r.returncode == 0, r.stderr
    validate(doc, "extract")
    by_file = {f["file"]: f for f in doc["files"]}
    assert sorted(by_file) == ["cubin-fused_add.fatbin", "module1-cuda.bin", "module1-cuda.ptx"]
    ptx = by_file["module1-cuda.ptx"]
    assert (ptx["format"], ptx["architecture"]) == ("ptx", "sm_80")
    assert ptx["kernels"] == ["default_function_kernel"]
    assert (tmp_path / "o" / "module1-cuda.ptx").read_bytes() == tf.PTX
    fat = by_file["cubin-fused_add.fatbin"]
    assert (fat["kind"], fat["format"], fat["symbol"], fat["offset"], fat["size"]) == (
        "cubin",
        "fatbin",
        "__tvm_ffi__cubin_fused_add",
        0,
        len(tf.FATBIN),
    )
    assert (tmp_path / "o" / "cubin-fused_add.fatbin").read_bytes() == tf.FATBIN


def test_one_file_per_kernel_for_metal(tmp_path):
    r, doc = _extract(tf.metal_lib(), tmp_path / "o")
    assert r.returncode == 0, r.stderr
    validate(doc, "extract")
    by_file = {f["file"]: f for f in doc["files"]}
    assert sorted(by_file) == [
        "module1-metal-._up.metal",
        "module1-metal-add.metal",
        "module1-metal.bin",
    ]
    assert (tmp_path / "o" / "module1-metal-add.metal").read_bytes() == tf.METAL_SOURCES["add"]
    up = by_file["module1-metal-._up.metal"]
    assert up["kernels"] == ["../up"] and up["format"] == "text" and up["kind"] == "payload"
    assert (tmp_path / "o" / up["file"]).read_bytes() == tf.METAL_SOURCES["../up"]
    lb = _symbol_bytes(tf.metal_lib(), "__tvm_ffi__library_bin")
    assert lb[up["offset"] : up["offset"] + up["size"]] == tf.METAL_SOURCES["../up"]
    # inspect still describes the module without the per-kernel offsets
    ins = validate(
        json.loads(tvmffi("inspect", tf.metal_lib(), "--json", "--static").stdout), "inspect"
    )
    assert ins["modules"][1]["details"]["sources"] == ["add", "../up"]


def test_human_output_lists_files(tmp_path):
    r = tvmffi("extract", tf.tvm_cuda_output(), "-o", tmp_path / "o", env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    for word in ("module1-cuda.ptx", "sm_80", "default_function_kernel", "cubin-fused_add.fatbin"):
        assert word in r.stdout


def test_never_overwrites_without_force(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "module1-cuda.ptx").write_bytes(b"mine")
    r, _ = _extract(tf.tvm_cuda_output(), out)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "exists" in r.stderr and "--force" in r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(os.listdir(out)) == ["module1-cuda.ptx"]  # nothing written at all
    assert (out / "module1-cuda.ptx").read_bytes() == b"mine"
    r, _doc = _extract(tf.tvm_cuda_output(), out, "--force")
    assert r.returncode == 0, r.stderr
    assert (out / "module1-cuda.ptx").read_bytes() == tf.PTX
    # A second run into the same directory meets the manifest and refuses too.
    r, _ = _extract(tf.tvm_cuda_output(), out)
    assert r.returncode == 2 and "manifest.json exists" in r.stderr


def test_force_never_replaces_a_directory(tmp_path):
    out = tmp_path / "o"
    (out / "module1-cuda.ptx").mkdir(parents=True)
    r = tvmffi("extract", tf.tvm_cuda_output(), "-o", out, "--force")
    assert r.returncode == 2
    assert r.stderr.startswith("tvmffi: error:") and "is a directory" in r.stderr, r.stderr
    assert [p.name for p in out.iterdir()] == ["module1-cuda.ptx"]  # nothing written
    assert (out / "module1-cuda.ptx").is_dir()


def test_hostile_module_names_stay_inside(tmp_path):
    out = tmp_path / "deep" / "o"
    r, doc = _extract(tf.hostile_names(), out)
    assert r.returncode == 0, r.stderr
    validate(doc, "extract")
    names = [f["file"] for f in doc["files"]]
    assert len(names) == 6 and len(set(names)) == 6
    for n in names:
        assert NAME.match(n) and ".." not in n and "/" not in n and "\\" not in n
    # Nothing escaped: the tree holds only the output directory's files.
    found = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert found == sorted(f"deep/o/{n}" for n in names + ["manifest.json"])
    assert json.loads((out / "manifest.json").read_text()) == manifest_of(doc)  # not a module
    kinds = {f["module_kind"] for f in doc["files"]}
    assert "../../escape" in kinds and "k" * 300 in kinds  # the real kinds stay in the manifest


def test_human_output_shows_control_characters_escaped(tmp_path):
    r = tvmffi("extract", tf.hostile_names(), "-o", tmp_path / "o", env={"COLUMNS": "300"})
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout
    assert "module6-esc__2J_bold_kind.bin" in r.stdout


def test_library_text_is_escaped_for_people():
    from tvmffi_cli.render.tools import _esc

    # Control characters become visible escapes; rich markup is not interpreted.
    assert _esc("k\x1b[2J[bold]x\n") == "k\\x1b[2J\\[bold]x\\n"


def test_never_loads_the_library(tmp_path):
    # The library aborts when loaded; extract works from the bytes.
    r, doc = _extract(tf.aborts_when_loaded(), tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert [f["file"] for f in doc["files"]] == ["module1-cuda.bin", "module1-cuda.cubin"]
    assert doc["files"][1]["architecture"] == "sm_90"


def test_malformed_library_bin_exit_1(tmp_path):
    r, doc = _extract(tf.truncated_library_bin(), tmp_path / "o")
    assert r.returncode == 1
    validate(doc, "extract")
    assert doc["errors"] and any("nbytes" in e or "needs" in e for e in doc["errors"])
    # The module before the damage is still written.
    assert [f["file"] for f in doc["files"]] == ["module1-opencl.bin"]
    assert (tmp_path / "o" / "module1-opencl.bin").read_bytes() == tf.OPENCL_SRC


def test_nothing_embedded(tmp_path):
    r, doc = _extract(tf.plain(), tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert doc["files"] == [] and os.listdir(tmp_path / "o") == ["manifest.json"]


@pytest.mark.parametrize("make", ["not-a-library", "missing", "dir-is-file"])
def test_bad_input_exit_2(tmp_path, make):
    lib, out = tf.tvm_cuda_output(), tmp_path / "o"
    if make == "not-a-library":
        lib = tmp_path / "x.so"
        lib.write_text("hello")
    elif make == "missing":
        lib = tmp_path / "nope.so"
    else:
        out.write_text("a file")
    r = tvmffi("extract", lib, "-o", out)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    if make == "dir-is-file":  # click words this usage error
        assert "is a file" in r.stderr
    else:
        assert r.stderr.startswith("tvmffi: error:") and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "o").is_dir()


def test_engine_refuses_a_file_as_directory(tmp_path):
    from tvmffi_cli.errors import InputError

    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        extract.run(str(tf.tvm_cuda_output()), str(tmp_path / "f"))


def test_safe_name_unit():
    taken = set()
    assert extract.safe_name("a/../b", taken) == "a_.._b".replace("..", ".")
    assert extract.safe_name("..", taken) == "_"
    long = extract.safe_name("x" * 500 + ".cubin", taken)
    assert len(long) <= extract.engine.MAX_NAME and long.endswith(".cubin")
    assert extract.safe_name("manifest.json", taken) == "_manifest.json"
    assert extract.safe_name("A.bin", taken) == "A.bin"
    assert extract.safe_name("a.bin", taken) == "a-2.bin"  # case-insensitive file systems


def test_engine_without_click(tmp_path):
    res = extract.run(str(tf.three_module_tree()), str(tmp_path / "o"))
    assert isinstance(res, extract.ExtractResult) and res.exit_code == 0
    assert [e.file for e in res.entries][:2] == ["module1-cuda.bin", "module1-cuda.cubin"]
    with pytest.raises(AttributeError):
        res.entries[0].size = 1  # frozen


def _tree(kinds, imports, i=0, seen=()):
    """(kind, [subtrees]) of module i: the shape a loader builds from the tree."""
    assert i not in seen, "cycle"
    return (kinds[i], [_tree(kinds, imports, j, (*seen, i)) for j in imports[i]])


@pytest.mark.parametrize("which", ["three", "diamond"])
def test_manifest_rebuilds_the_module_tree(tmp_path, which):
    """The manifest alone (kinds, indices, imports, module files) rebuilds the
    tree the decoder reads from the library, and re-encoding it gives the
    symbol's bytes back, byte for byte."""
    lib = tf.three_module_tree() if which == "three" else tf.diamond_module_tree()
    out = tmp_path / "o"
    r, doc = _extract(lib, out)
    assert r.returncode == 0, r.stderr
    validate(doc, "extract")
    lb = libbin.decode(_symbol_bytes(lib, "__tvm_ffi__library_bin"))
    assert lb.errors == []
    mods = doc["modules"]
    assert [m["index"] for m in mods] == list(range(len(lb.modules)))
    assert doc["root"] == lb.root == 0
    kinds = [m["kind"] for m in mods]
    imports = [m["imports"] for m in mods]
    assert _tree(kinds, imports) == _tree(
        [m.kind for m in lb.modules], [m.imports for m in lb.modules]
    )
    lib_entries = [m for m in mods if m["kind"] == "_lib"]
    assert len(lib_entries) == 1 and lib_entries[0]["file"] is None
    assert lib_entries[0]["blob_size"] is None
    blobs = [None if m["file"] is None else (out / m["file"]).read_bytes() for m in mods]
    for m, d in zip(mods, blobs):
        assert (m["blob_size"] is None) == (d is None)
        if d is not None:
            assert len(d) == m["blob_size"]
    rebuilt = libbin.encode(list(zip(kinds, blobs)), imports)
    data = _symbol_bytes(lib, "__tvm_ffi__library_bin")
    assert rebuilt == data[: len(rebuilt)] and len(rebuilt) == 8 + lb.nbytes


def test_manifest_without_modules(tmp_path):
    r, doc = _extract(tf.plain(), tmp_path / "o")
    assert r.returncode == 0, r.stderr
    validate(doc, "extract")
    assert doc["modules"] == [] and doc["root"] is None
