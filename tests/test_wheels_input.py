"""Wheels and directories of libraries as input of inspect, conform, stubs and
extract (src/tvmffi_cli/wheel/), and conform's declared-runtime check.

Wheels are built here from fixture libraries compiled in the test run (a
library importing TVMFFIGetCustomAllocator, which apache-tvm-ffi exports from
0.1.13 on, and a sibling it finds through RUNPATH $ORIGIN/../deps), with
METADATA declaring too wide a range, no range, or one the library satisfies.
Real wheels (tilelang, apache-tvm-tirx, official releases) are fetched as in
the other differential tests and skipped with the reason when offline."""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path

import pytest

import fixturebuild
import tools_fixtures as tf
from releases import fetch_wheel
from test_call_helpers import tvmffi, validate

ALLOC = "TVMFFIGetCustomAllocator"


def sibling():
    return fixturebuild.build("wheel/wsib.c", headers="none", flags=["-Wl,-soname,libwsib.so"])


def user_lib():
    sib = sibling()
    # --no-as-needed: the sibling comes before the source on the command line.
    flags = ["-Wl,--no-as-needed", str(sib), "-Wl,-rpath,$ORIGIN/../deps", "-Wl,--enable-new-dtags"]
    lib = fixturebuild.build("wheel/wuser.c", flags=flags)
    from tvmffi_cli.binary import open_binary

    with open_binary(lib) as b:
        assert "libwsib.so" in b.needed and b.extra["runpath"] == ["$ORIGIN/../deps"]
    return lib


def metadata(name, requires):
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\n"


def build_wheel(tmp_path, requires, name="wpkg", extra=(), stored=False):
    """A minimal valid wheel: pkg/lib/libwuser.so (TVM-FFI), pkg/deps/libwsib.so
    (its sibling), pkg/lib/libthree.so (a module tree), METADATA, WHEEL, RECORD."""
    whl = tmp_path / f"{name}-1.0-py3-none-linux_x86_64.whl"
    di = f"{name}-1.0.dist-info"
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(whl, "w", method) as z:
        z.write(user_lib(), f"{name}/lib/libwuser.so")
        z.write(sibling(), f"{name}/deps/libwsib.so")
        z.write(tf.three_module_tree(), f"{name}/lib/libthree.so")
        z.writestr(f"{name}/__init__.py", "")
        for member, data in extra:
            z.writestr(member, data)
        z.writestr(f"{di}/METADATA", metadata(name, requires))
        z.writestr(
            f"{di}/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n",
        )
        z.writestr(f"{di}/RECORD", "")
    return whl


def run_json(*args):
    r = tvmffi(*args, "--json", timeout=300)
    doc = json.loads(r.stdout) if r.stdout.strip() else None
    return r, doc


def declared(doc):
    (c,) = [c for c in doc["checks"] if c["check"] == "declared-runtime"]
    return c


def libs(doc):
    return {x["member"]: x for x in doc["libraries"]}


# --------------------------------------------------------------- built wheels


def test_too_wide_a_range_fails_naming_release_and_symbol(tmp_path):
    whl = build_wheel(tmp_path, ["apache-tvm-ffi>=0.1.0"])
    r, doc = run_json("conform", whl, "--select", "declared-runtime,c-api-imports")
    assert r.returncode == 1, r.stderr
    validate(doc, "wheel")
    c = declared(doc)
    assert c["status"] == "fail" and c["severity"] == "error"
    # The first admitted release the library cannot run on, and the symbol it lacks.
    assert (
        "admits 0.1.0, but wpkg-1.0-py3-none-linux_x86_64.whl/wpkg/lib/libwuser.so"
        in (c["message"])
    )
    assert f"cannot run on 0.1.0: it lacks {ALLOC}" in c["message"]
    failing = {(f["release"], f["library"].rsplit("/", 1)[-1]) for f in c["details"]["failing"]}
    assert ("0.1.12", "libwuser.so") in failing and ("0.1.0", "libwuser.so") in failing
    assert not any(f["release"].startswith("0.1.13") for f in c["details"]["failing"])
    assert c["details"]["runs_on"] == ["0.1.13.post3", "0.1.14.post1", "0.1.15.post2"]
    # Only the library-level checks of each library ran, and they passed.
    assert {m: x["exit_code"] for m, x in libs(doc).items()} == {
        "wpkg/lib/libwuser.so": 0,
        "wpkg/lib/libthree.so": 0,
    }
    assert doc["runtime_range"]["min_version"] == "0.1.13"
    assert doc["runtime_range"]["min_because"] == [ALLOC]


def test_no_range_fails_when_some_release_cannot_run_it(tmp_path):
    whl = build_wheel(tmp_path, ["numpy>=1.21"])
    r = tvmffi(
        "conform", whl, "--select", "declared-runtime", "--json", env={"GITHUB_ACTIONS": "true"}
    )
    doc = json.loads(r.stdout)
    assert r.returncode == 1
    (note,) = [x for x in r.stderr.splitlines() if x.startswith("::")]
    assert note.startswith(f"::error file={whl},title=tvmffi conform declared-runtime (error)")
    validate(doc, "wheel")
    c = declared(doc)
    assert c["status"] == "fail"
    assert c["message"].startswith("declares no apache-tvm-ffi requirement, which admits 0.1.0")
    assert doc["input"]["metadata"]["runtime_specifier"] is None


def test_a_range_the_libraries_satisfy_passes(tmp_path):
    whl = build_wheel(
        tmp_path,
        ["apache-tvm-ffi>=0.1.13", 'apache-tvm-ffi<0.2; python_version >= "3"', 'x; extra == "y"'],
    )
    r, doc = run_json("conform", whl, "--select", "declared-runtime")
    assert r.returncode == 0, r.stdout
    c = declared(doc)
    assert c["status"] == "pass"
    assert c["details"]["admitted"] == ["0.1.13.post3", "0.1.14.post1", "0.1.15.post2"]
    assert doc["input"]["metadata"]["runtime_specifier"] == "<0.2,>=0.1.13"


def test_full_conform_resolves_the_shipped_sibling(tmp_path):
    """Every check on every TVM-FFI library: libwuser.so loads only because
    its sibling is extracted where its RUNPATH ($ORIGIN/../deps) says; JUnit
    has one testsuite per library and one for the wheel."""
    whl = build_wheel(tmp_path, ["apache-tvm-ffi>=0.1.13"])
    xml = tmp_path / "c.xml"
    r, doc = run_json("conform", whl, "--junit-xml", xml, "-j", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    validate(doc, "wheel")
    for lib in doc["libraries"]:
        validate(lib["report"], "conform")
    user = libs(doc)["wpkg/lib/libwuser.so"]["report"]
    load = [x for x in user["results"] if x["check"] == "library-load"]
    assert [x["status"] for x in load] == ["pass"]
    assert user["functions"] == ["answer"]
    assert {f["member"]: f["role"] for f in doc["input"]["files"]} == {
        "wpkg/lib/libwuser.so": "tvm-ffi",
        "wpkg/deps/libwsib.so": "other",
        "wpkg/lib/libthree.so": "tvm-ffi",
    }
    # The temporary directory never shows; libraries are named in the wheel.
    assert "tvmffi-wheel-" not in r.stdout
    assert user["library"] == "wpkg-1.0-py3-none-linux_x86_64.whl/wpkg/lib/libwuser.so"
    import xml.etree.ElementTree as ET

    suites = ET.parse(xml).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "tvmffi conform libwuser.so",
        "tvmffi conform libthree.so",
        f"tvmffi conform {whl.name}",
    ]
    assert suites[-1].find("testcase").get("name") == "declared-runtime"


def test_the_loaded_library_finds_its_sibling(tmp_path):
    whl = build_wheel(tmp_path, [])
    r, doc = run_json("inspect", whl)
    assert r.returncode == 0, r.stderr
    validate(doc, "wheel")
    rep = libs(doc)["wpkg/lib/libwuser.so"]["report"]
    validate(rep, "inspect")
    assert rep["mode"] == "loaded" and rep["errors"] == []
    assert rep["path"] == "wpkg-1.0-py3-none-linux_x86_64.whl/wpkg/lib/libwuser.so"
    rr = libs(doc)["wpkg/lib/libwuser.so"]["runtime_range"]
    assert rr["ok_releases"] == ["0.1.13.post3", "0.1.14.post1", "0.1.15.post2"]
    assert rr["missing"]["0.1.12"] == [ALLOC]


def test_human_output_is_a_table(tmp_path):
    whl = build_wheel(tmp_path, ["apache-tvm-ffi>=0.1.0"])
    r = tvmffi("inspect", "--static", whl)
    assert r.returncode == 0, r.stderr
    assert "wpkg/lib/libwuser.so" in r.stdout and "0.1.13.post3 .. 0.1.15.post2 (3)" in r.stdout
    assert "not checked, without TVM-FFI: libwsib.so" in r.stdout
    r = tvmffi("conform", whl, "--select", "declared-runtime")
    assert r.returncode == 1
    assert "FAIL declared-runtime: declares apache-tvm-ffi>=0.1.0, which admits 0.1.0" in " ".join(
        r.stdout.split()
    )


def test_extract_writes_one_directory_per_library(tmp_path):
    whl = build_wheel(tmp_path, [])
    out = tmp_path / "out"
    r, doc = run_json("extract", whl, "-o", out)
    assert r.returncode == 0, r.stderr
    validate(doc, "wheel")
    three = libs(doc)["wpkg/lib/libthree.so"]["report"]
    validate(three, "extract")
    assert [(m["index"], m["kind"], m["imports"]) for m in three["modules"]] == [
        (0, "_lib", [1]),
        (1, "cuda", [2]),
        (2, "opencl", []),
    ]
    assert sorted(os.listdir(out)) == ["wpkg_lib_libthree.so", "wpkg_lib_libwuser.so"]
    assert (out / "wpkg_lib_libthree.so" / "module1-cuda.cubin").read_bytes() == tf.fake_cubin(86)
    assert json.loads((out / "wpkg_lib_libwuser.so" / "manifest.json").read_text())["files"] == []


def test_stubs_one_per_library(tmp_path):
    whl = build_wheel(tmp_path, [])
    out = tmp_path / "stubs"
    r = tvmffi("stubs", whl, "-o", out, "--static")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["wpkg_lib_libthree.pyi", "wpkg_lib_libwuser.pyi"]
    assert "def answer(" in (out / "wpkg_lib_libwuser.pyi").read_text()
    from tvmffi_cli.wheel import open_bundle, stubs_bundle

    with open_bundle(str(whl)) as b:
        doc = stubs_bundle(b, True, 30.0, None, str(tmp_path / "s2")).to_json()
    validate(doc, "wheel")
    assert libs(doc)["wpkg/lib/libwuser.so"]["report"]["exports"] == 1
    assert doc["written"]["wpkg/lib/libwuser.so"].endswith("wpkg_lib_libwuser.pyi")
    r = tvmffi("stubs", whl, "--static")
    assert r.returncode == 0
    assert "# ---- wpkg-1.0-py3-none-linux_x86_64.whl/wpkg/lib/libwuser.so ----" in r.stdout
    r = tvmffi("stubs", whl, "--check", tmp_path / "x.pyi")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1


def test_a_directory_of_libraries(tmp_path):
    """The installed layout as a directory: read in place, never written."""
    d = tmp_path / "site" / "wpkg"
    (d / "lib").mkdir(parents=True)
    (d / "deps").mkdir()
    (d / "lib" / "libwuser.so").write_bytes(Path(user_lib()).read_bytes())
    (d / "deps" / "libwsib.so").write_bytes(Path(sibling()).read_bytes())
    (d / "lib" / "libwuser.so.1").symlink_to("libwuser.so")  # counted once
    before = sorted((p, p.stat().st_mtime_ns) for p in d.rglob("*"))
    r, doc = run_json("conform", d, "--function", "answer", "-j", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    validate(doc, "wheel")
    assert doc["input"]["kind"] == "directory" and doc["input"]["metadata"] is None
    assert doc["checks"] == []  # declared-runtime needs a wheel
    assert list(libs(doc)) == ["lib/libwuser.so"]
    rep = libs(doc)["lib/libwuser.so"]["report"]
    assert {x["check"] for x in rep["results"] if x["status"] == "fail"} == set()
    assert "library-load" in {x["check"] for x in rep["results"] if x["status"] == "pass"}
    r, doc = run_json("inspect", "--static", d)
    assert r.returncode == 0 and list(libs(doc)) == ["lib/libwuser.so"]
    assert sorted((p, p.stat().st_mtime_ns) for p in d.rglob("*")) == before


def test_function_filter_over_a_wheel(tmp_path):
    whl = build_wheel(tmp_path, ["apache-tvm-ffi>=0.1.13"])
    r, doc = run_json("conform", whl, "--function", "answer", "--select", "no-crash")
    assert r.returncode == 0, r.stderr
    by = libs(doc)
    assert by["wpkg/lib/libthree.so"]["note"].startswith("--function answer")
    assert by["wpkg/lib/libwuser.so"]["exit_code"] == 0
    r = tvmffi("conform", whl, "--function", "nope", "--select", "no-crash")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_no_tvm_ffi_library_is_exit_2(tmp_path):
    whl = tmp_path / "plain-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.write(sibling(), "plain/libwsib.so")
        z.writestr("plain-1.0.dist-info/METADATA", metadata("plain", []))
    r = tvmffi("inspect", whl)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("tvmffi: error: ") and "no TVM-FFI library in this wheel" in r.stderr
    assert r.stderr.count("\n") == 1


# ------------------------------------------------------------- hostile wheels


def _hostile(tmp_path, kind):
    whl = tmp_path / f"evil_{kind}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.write(user_lib(), "evil/lib/libwuser.so")
        z.writestr("evil-1.0.dist-info/METADATA", metadata("evil", []))
        if kind == "traversal":
            z.writestr("../../escaped.so", b"\x7fELF")
        elif kind == "absolute":
            z.writestr(zipfile.ZipInfo("/tmp/abs-escaped.so"), b"\x7fELF")
        elif kind == "symlink":
            info = zipfile.ZipInfo("evil/lib/link.so")
            info.external_attr = 0o120777 << 16
            z.writestr(info, "/etc/passwd")
        elif kind in ("huge", "bomb"):
            z.writestr("evil/big.bin", b"\0" * 4096)
        elif kind == "duplicate":
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                z.writestr("evil/lib/libwuser.so", b"again")
    if kind == "notzip":
        whl.write_bytes(b"\x7fELF not a zip")
    if kind == "method":
        # An unknown compression method (99) on the library member.
        data = bytearray(whl.read_bytes())
        at = data.find(b"PK\x01\x02")
        struct.pack_into("<H", data, at + 10, 99)
        whl.write_bytes(bytes(data))
    if kind in ("huge", "bomb"):
        # Rewrite the declared uncompressed size in the central directory.
        data = bytearray(whl.read_bytes())
        at = data.find(b"PK\x01\x02")
        while at != -1:
            n = struct.unpack_from("<H", data, at + 28)[0]
            if data[at + 46 : at + 46 + n] == b"evil/big.bin":
                size = 0xFFFFFFF0 if kind == "huge" else 3 << 29
                struct.pack_into("<I", data, at + 24, size)
            at = data.find(b"PK\x01\x02", at + 4)
        whl.write_bytes(bytes(data))
    return whl


HOSTILE = {
    "traversal": "has a '..' or '.' path component; refused",
    "absolute": "has an absolute path; refused",
    "symlink": "is a symbolic link; refused",
    "huge": "declares 4294967280 bytes, more than the 3221225472 allowed; refused",
    "bomb": "a zip bomb; refused",
    "duplicate": "appears twice; refused",
    "method": "(That compression method is not supported); refused",
    "notzip": "not a wheel (not a zip archive",
}


@pytest.mark.parametrize(
    "kind, command",
    [(k, "inspect") for k in HOSTILE]
    + [("traversal", "conform"), ("symlink", "extract"), ("huge", "stubs")],
)
def test_hostile_wheel_is_exit_2_one_line(tmp_path, kind, command):
    needle = HOSTILE[kind]
    whl = _hostile(tmp_path, kind)
    extra = ["-o", tmp_path / "out"] if command == "extract" else []
    r = tvmffi(command, whl, *extra)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert needle in r.stderr and r.stdout == ""
    assert not (tmp_path / "escaped.so").exists() and not Path("/tmp/abs-escaped.so").exists()
    assert not (tmp_path / "out").exists()


def test_temporary_directory_is_removed(tmp_path, monkeypatch):
    import tempfile

    from tvmffi_cli.wheel import inspect_bundle, open_bundle

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    whl = build_wheel(tmp_path, [])
    with open_bundle(str(whl)) as b:
        root = b.root
        assert os.path.isfile(os.path.join(root, "wpkg", "deps", "libwsib.so"))
        assert not os.path.exists(os.path.join(root, "wpkg", "__init__.py"))  # libraries only
        res = inspect_bundle(b, True, 30.0, None)
    assert res.exit_code == 0 and not os.path.exists(root)
    assert os.listdir(tmp_path / "t") == []


def test_limits_are_enforced(tmp_path):
    from tvmffi_cli.errors import InputError
    from tvmffi_cli.wheel import archive, open_bundle

    whl = build_wheel(tmp_path, [])
    with pytest.raises(InputError, match="members, more than the 3 allowed"):
        with open_bundle(str(whl), archive.Limits(members=3)):
            pass
    with pytest.raises(InputError, match="members declare more than 1000 bytes in all"):
        with open_bundle(str(whl), archive.Limits(total_size=1000)):
            pass


# -------------------------------------------------------------- real wheels


def _real(dist, version, *flags):
    whl = fetch_wheel(dist, version)
    r, doc = run_json("conform", whl, "--select", "declared-runtime,c-api-imports", *flags)
    assert doc is not None, r.stderr
    validate(doc, "wheel")
    return r, doc


def test_tilelang_declares_what_its_libraries_run_on():
    """tilelang 0.1.15 pins apache-tvm-ffi>=0.1.11,<0.1.13: its compiler
    imports the by-value tvm::ffi::json::Stringify that 0.1.13 dropped."""
    r, doc = _real("tilelang", "0.1.15")
    c = declared(doc)
    assert c["status"] == "pass" and r.returncode == 0
    assert doc["input"]["metadata"]["runtime_specifier"] == "<0.1.13,>=0.1.11"
    assert c["details"]["admitted"] == ["0.1.11", "0.1.12"]
    assert c["details"]["runs_on"] == ["0.1.10", "0.1.11", "0.1.12"]
    assert sorted(libs(doc)) == [
        "tilelang/lib/libtilelang.so",
        "tilelang/lib/libtvm_compiler.so",
        "tilelang/lib/libtvm_runtime.so",
    ]


def test_tilelang_with_a_wider_range_fails_on_0_1_13(tmp_path):
    """The same libraries, re-packed with Requires-Dist apache-tvm-ffi>=0.1.11:
    fails naming 0.1.13.post3 and the dropped C++ symbol."""
    src = fetch_wheel("tilelang", "0.1.15")
    whl = tmp_path / "tilelang-0.1.15-cp39-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(whl, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            if info.filename.endswith("/METADATA"):
                text = (
                    zin.read(info)
                    .decode()
                    .replace("apache-tvm-ffi<0.1.13,>=0.1.11", "apache-tvm-ffi>=0.1.11")
                )
                zout.writestr(info.filename, text)
            elif info.filename.endswith(".so"):
                zout.writestr(info.filename, zin.read(info))
    r, doc = run_json("conform", whl, "--select", "declared-runtime")
    c = declared(doc)
    assert r.returncode == 1 and c["status"] == "fail"
    assert "which admits 0.1.13.post3, but" in c["message"]
    assert "cannot run on 0.1.13.post3: it lacks _ZN3tvm3ffi4json9Stringify" in c["message"]
    assert {f["release"] for f in c["details"]["failing"]} == {
        "0.1.13.post3",
        "0.1.14.post1",
        "0.1.15.post2",
    }


def test_tirx_declares_what_its_compiler_needs():
    r, doc = _real("apache-tvm-tirx", "0.1.0a4")
    c = declared(doc)
    assert c["status"] == "pass" and r.returncode == 0
    assert doc["input"]["metadata"]["runtime_specifier"] == ">=0.1.15.post1"
    assert c["details"]["admitted"] == ["0.1.15.post2"]
    assert doc["runtime_range"]["ok_releases"][0] == "0.1.13.post3"


@pytest.mark.parametrize("version", ["0.1.0", "0.1.12", "0.1.15.post2"])
def test_official_release_ships_its_own_runtime(version):
    r, doc = _real("apache-tvm-ffi", version, "--ignore", "c-api-imports")
    c = declared(doc)
    assert c["status"] == "pass" and r.returncode == 0
    assert "it ships its own runtime" in c["message"]
    roles = {f["member"]: f["role"] for f in doc["input"]["files"]}
    assert roles["tvm_ffi/lib/libtvm_ffi.so"] == "runtime"
    assert roles["tvm_ffi/lib/libtvm_ffi_testing.so"] == "tvm-ffi"


@pytest.mark.parametrize(
    "dist, version, declared_spec, admitted_from",
    [
        ("jax-tvm-ffi", "0.1.3", ">=0.1.8.post2", "0.1.8.post2"),
        ("xgrammar", "0.2.8", ">=0.1.11", "0.1.11"),
        ("apache-tvm-ffi-orcjit", "0.1.3", ">=0.1.14.post1", "0.1.14.post1"),
    ],
)
def test_other_public_wheels_in_process(dist, version, declared_spec, admitted_from):
    """The engine without the CLI (only the wheel check runs, nothing is loaded)."""
    from tvmffi_cli.abi.versions import KNOWN_RELEASES
    from tvmffi_cli.conform import runner
    from tvmffi_cli.wheel import conform_bundle, open_bundle

    whl = fetch_wheel(dist, version)
    opts = runner.Options(select=frozenset({"declared-runtime"}))
    with open_bundle(str(whl)) as b:
        res = conform_bundle(b, lambda _lib: opts)
    validate(res.to_json(), "wheel")
    (c,) = res.checks
    assert c.status == "pass" and res.exit_code == 0, c.message
    assert c.details["declared"] == declared_spec
    assert c.details["admitted"] == list(KNOWN_RELEASES[KNOWN_RELEASES.index(admitted_from) :])
    assert len(res.outcomes) == 1 and set(c.details["admitted"]) <= set(c.details["runs_on"])


def test_declared_runtime_verdicts_unit():
    """Each branch of the check, from imports alone."""
    from tvmffi_cli.conform.checks_wheel import declared_runtime

    stringify = "_ZN3tvm3ffi4json9StringifyERKNS0_3AnyENS0_8OptionalIivEE"
    libs_ = [("w/a.so", [ALLOC]), ("w/b.so", ["TVMFFIFunctionCall"])]
    # A range past every known release: nothing to judge it by.
    r = declared_runtime(">=9", libs_)
    assert r.status == "pass" and "admits no known release" in r.message
    # No version named ("apache-tvm-ffi"): every release is admitted.
    r = declared_runtime("", libs_)
    assert r.status == "fail" and r.message.startswith("declares apache-tvm-ffi (any version)")
    # A ship-your-own-runtime wheel without a requirement passes.
    r = declared_runtime(None, libs_, ["w/libtvm_ffi.so"])
    assert r.status == "pass" and "ships its own runtime (w/libtvm_ffi.so)" in r.message
    # Two libraries that together run on no release: each admitted one fails.
    r = declared_runtime(">=0.1.12", [("w/a.so", [ALLOC]), ("w/c.so", [stringify])])
    assert r.status == "fail" and r.details["runs_on"] == []
    assert "admits 0.1.12, but w/a.so cannot run on 0.1.12: it lacks " + ALLOC in r.message
    by_release = {f["release"]: f["library"] for f in r.details["failing"]}
    assert by_release == {
        "0.1.12": "w/a.so",
        "0.1.13.post3": "w/c.so",
        "0.1.14.post1": "w/c.so",
        "0.1.15.post2": "w/c.so",
    }
    # Post releases count: >=0.1.13 admits 0.1.13.post3, <0.1.13 does not.
    r = declared_runtime("<0.1.13", [("w/c.so", [stringify])])
    assert r.status == "pass" and r.details["admitted"][-1] == "0.1.12"
