"""`inspect --static --json` over a corpus of mutated real libraries and of
non-libraries: every input ends within 10 s, with no signal, no traceback,
exit 0/1/2, schema-valid JSON on 0/1 and exactly one stderr line on 2.

The corpus (fixtures/hardening/corpus.py) flips bytes in the ELF header,
program and section headers, .dynsym/.dynstr/.dynamic, the
`__tvm_ffi__library_bin` symbol and CUDA fat binaries (nvcc-built
fixtures/cuda_fatbin), overwrites integer fields with huge values,
and truncates at many offsets. Most mutations run through the CLI's inspect
fast path inside one batch process per library (one interpreter start-up per
library, not per file); every 40th also runs as a real `tvmffi` process.
"""

import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest

import fixturebuild

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "hardening" / "corpus.py"
SCHEMA = json.loads((ROOT / "src" / "tvmffi_cli" / "schemas" / "inspect.schema.json").read_text())
LIMIT_S = 10.0
SEED = 20240601
CLI_EVERY = 40
# One validator for thousands of reports (jsonschema.validate re-checks the
# schema itself on every call).
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)

sys.path.insert(0, str(CORPUS.parent))
import corpus  # noqa: E402


def _libbin_define():
    h = (ROOT / "fixtures" / "inspect" / "libbin_data.h").read_bytes()
    return "LIBBIN_DATA=" + hashlib.sha256(h).hexdigest()[:12]


def corpus_libraries():
    """name -> built fixture library; official-header ones only when the
    reference package is installed."""
    b = fixturebuild.build
    libs = {
        "basic": b("c/basic.c", headers="ours"),
        "funcs": b("inspect/funcs.c", headers="ours"),
        "libbin_good": b("inspect/libbin_good.c", headers="none", defines=[_libbin_define()]),
        "libbin_bad": b("inspect/libbin_bad.c", headers="none", defines=[_libbin_define()]),
        "cxx_imports": b("inspect/cxx_imports.c", headers="none"),
        "ctor_trace": b("inspect/ctor_trace.c", headers="none"),
        "runtime_libbin": b("runtime/libbin.c", headers="ours", link_runtime=False, name="libbin-"),
        # nvcc-built, committed (CI has no nvcc): CUDA fat binaries
        "cuda_fatbin": ROOT / "fixtures" / "cuda_fatbin" / "kernels.elf",
        "cuda_rdc": ROOT / "fixtures" / "cuda_fatbin" / "kernels_rdc.elf",
    }
    if fixturebuild.official_include() is not None:
        meta = ["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"]
        libs["kitchen"] = b("cpp/kitchen.cc", headers="official", defines=meta)
        libs["official_meta"] = b("inspect/official_meta.cc", headers="official", defines=meta)
    return libs


def check_result(rc, stdout, stderr, where):
    """The contract of one inspect run; returns a list of problems."""
    bad = []
    if rc is None or rc < 0:
        bad.append(f"{where}: killed by signal {-(rc or 0)}")
        return bad
    if "Traceback" in stderr or "Traceback" in stdout:
        bad.append(f"{where}: traceback\n{stderr[-2000:]}")
    if rc not in (0, 1, 2):
        bad.append(f"{where}: exit {rc}: {stderr.strip()[:300]}")
        return bad
    if rc in (0, 1):
        try:
            VALIDATOR.validate(json.loads(stdout))
        except (ValueError, jsonschema.ValidationError) as e:
            bad.append(f"{where}: exit {rc} but stdout is not valid JSON: {str(e)[:300]}")
    lines = stderr.splitlines()
    if rc == 2 and (stdout or len(lines) != 1 or not lines[0].startswith("tvmffi: error: ")):
        bad.append(f"{where}: exit 2 needs one stderr line and no stdout, got {stderr!r}")
    if rc == 1 and len(lines) != 1:
        bad.append(f"{where}: exit 1 with {len(lines)} stderr lines")
    if rc == 0 and stderr:
        bad.append(f"{where}: exit 0 with stderr {stderr!r}")
    return bad


def run_batch(lib, workdir, seed=SEED, every=1):
    """Run one library's corpus in a batch process; returns (rows, problems)."""
    proc = subprocess.run(
        [
            sys.executable,
            str(CORPUS),
            "run",
            str(lib),
            str(seed),
            str(workdir),
            "--every",
            str(every),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    rows, started, problems = [], None, []
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        if "start" in r:
            started = r["start"]
        else:
            rows.append(r)
            started = None
    if proc.returncode != 0:
        problems.append(
            f"{lib.name}: batch process exit {proc.returncode} while on "
            f"{started}\n{proc.stderr[-2000:]}"
        )
    for r in rows:
        where = f"{lib.name} {r['id']}"
        if r["exception"]:
            problems.append(
                f"{where}: exception escaped (a traceback in the CLI)\n{r['exception'][-2000:]}"
            )
            continue
        if r["seconds"] > LIMIT_S:
            problems.append(f"{where}: took {r['seconds']:.1f} s")
        problems += check_result(r["rc"], r["stdout"], r["stderr"], where)
    return rows, problems


def run_cli(path, timeout=LIMIT_S):
    """The real `tvmffi inspect --static --json PATH`: (rc, stdout, stderr, seconds)."""
    env = dict(os.environ)
    env.pop("TVMFFI_DEBUG", None)
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "tvmffi_cli", "inspect", "--static", "--json", str(path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return "timeout", "", "", time.monotonic() - t0
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


@pytest.fixture(scope="module")
def libs():
    return corpus_libraries()


def test_corpus_covers_every_region(libs):
    """The corpus really aims at what the issue names (not just random bytes)."""
    seen = {}
    for name, lib in libs.items():
        data = lib.read_bytes()
        reg = corpus.regions(data)
        specs = corpus.specs(data, SEED)
        assert specs == corpus.specs(data, SEED)  # deterministic
        seen[name] = {s.get("region", s["kind"]) for s in specs}
        for r in ("ehdr", "phdrs", "shdrs", "dynsym", "dynstr", "dynamic"):
            assert r in reg and r in seen[name], (name, r)
        assert "truncate" in seen[name]
        # truncations include every length of the header and the file's last byte
        cuts = {s["offset"] for s in specs if s["kind"] == "truncate"}
        assert set(range(64)) <= cuts and len(data) - 1 in cuts
    for name in ("libbin_good", "libbin_bad", "runtime_libbin"):
        assert "library_bin" in seen[name], name
    assert {"nv_fatbin", "nvFatBinSegment"} <= seen["cuda_fatbin"]
    assert {"nv_fatbin", "nv_relfatbin", "nvFatBinSegment"} <= seen["cuda_rdc"]
    # the library_bin symbol really is where the corpus says: its first u64 is nbytes
    data = libs["libbin_good"].read_bytes()
    off, size = corpus.regions(data)["library_bin"]
    import struct

    assert struct.unpack_from("<Q", data, off)[0] == size - 8


def test_mutated_libraries_in_process(libs, tmp_path):
    names = sorted(libs)
    with ThreadPoolExecutor(max_workers=2) as ex:  # two cores
        results = list(ex.map(lambda n: run_batch(libs[n], tmp_path / n), _mkdirs(tmp_path, names)))
    problems = [p for _, probs in results for p in probs]
    total = sum(len(rows) for rows, _ in results)
    codes = {}
    for rows, _ in results:
        for r in rows:
            codes[r["rc"]] = codes.get(r["rc"], 0) + 1
    assert not problems, f"{len(problems)} of {total} inputs broke the contract:\n" + "\n".join(
        problems[:20]
    )
    # the corpus is not trivially rejected: all three outcomes occur in bulk
    assert total > 3000 and all(codes.get(c, 0) > 100 for c in (0, 1, 2)), codes


def _mkdirs(base, names):
    for n in names:
        (base / n).mkdir(exist_ok=True)
    return names


def test_mutated_libraries_real_cli_sample(libs, tmp_path):
    """Every 40th mutation of each library through a real `tvmffi` process:
    no signal, no traceback, within 10 s."""
    jobs = []
    for name, lib in sorted(libs.items()):
        data = lib.read_bytes()
        for i, spec in enumerate(corpus.specs(data, SEED)[::CLI_EVERY]):
            p = tmp_path / f"{name}-{i}.so"
            p.write_bytes(corpus.apply(data, spec))
            jobs.append((f"{name} {spec['id']}", p))
    with ThreadPoolExecutor(max_workers=2) as ex:
        outs = list(ex.map(lambda j: run_cli(j[1]), jobs))
    problems = []
    for (where, _), (rc, out, err, dt) in zip(jobs, outs):
        if rc == "timeout":
            problems.append(f"{where}: did not end within {LIMIT_S} s")
            continue
        problems += check_result(rc, out, err, where)
    assert len(jobs) > 60
    assert not problems, "\n".join(problems[:20])


def _write(name, content):
    def make(d):
        p = d / name
        p.write_bytes(content)
        return p

    return make


def _fifo(d):
    p = d / "pipe.so"
    os.mkfifo(p)
    return p


def _loop(d):
    (d / "a.so").symlink_to(d / "b.so")
    (d / "b.so").symlink_to(d / "a.so")
    return d / "a.so"


NON_LIBRARIES = [
    ("empty", _write("empty.so", b""), "empty file"),
    ("text", _write("notes.txt", b"just some text\nover two lines\n"), "not a library"),
    ("directory", lambda d: d, "is a directory"),
    ("missing", lambda d: d / "missing.so", "no such file"),
    ("elf-magic-only", _write("magic.so", b"\x7fELF"), "truncated ELF header"),
    ("zeros-1MiB", _write("zeros.so", bytes(1 << 20)), "not a library"),
    ("fifo", _fifo, "not a regular file"),
    ("symlink-loop", _loop, "cannot open"),
    ("char-device", lambda d: Path("/dev/zero"), "not a regular file"),
]


@pytest.mark.parametrize(
    "make,needle", [(m, n) for _, m, n in NON_LIBRARIES], ids=[i for i, _, _ in NON_LIBRARIES]
)
def test_non_libraries_one_line_exit_2(tmp_path, make, needle):
    p = make(tmp_path)
    rc, out, err, dt = run_cli(p)
    assert rc != "timeout", f"{p} did not end within {LIMIT_S} s"
    assert not check_result(rc, out, err, str(p))
    assert rc == 2 and needle in err, (rc, err)


def test_the_oracle_rejects_each_broken_contract():
    """check_result flags each kind of failure (so the corpus tests can fail)."""
    ok_json = json.dumps({"bogus": 1})
    cases = [
        ((-11, "", ""), "killed by signal 11"),
        ((3, "", "tvmffi: internal error: x\n"), "exit 3"),
        ((2, "", "Traceback (most recent call last):\n  x\n"), "traceback"),
        ((0, "{not json", ""), "not valid JSON"),
        ((0, ok_json, ""), "not valid JSON"),  # schema violation
        ((2, "", "tvmffi: error: a\ntvmffi: error: b\n"), "one stderr line"),
        ((2, "partial", "tvmffi: error: a\n"), "one stderr line"),
    ]
    for (rc, out, err), needle in cases:
        got = check_result(rc, out, err, "x")
        assert any(needle in g for g in got), (rc, out, err, got)
