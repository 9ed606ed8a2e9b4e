"""Differential test against the real ecosystem (issue 11, item 6): the
official test library's functions called through `tvmffi call --json` (its
command-line parsing, task and JSON renderer, batched in one worker process
per runtime) and through the official Python API (`tvm_ffi`, in a
subprocess), compared as (type, plain JSON value).

The match rate of each runtime is written to
fixtures/build/ecosystem-diff-<runtime>.json for the report.

Also `tvmffi diff` of two official test libraries against the releases' own
view (tests/diff_oracle.py, issue 29), and a `str` positional that starts like
JSON, against the official call."""

import json
import os
import subprocess
import sys

import pytest

import fixturebuild
from ecosystem_cases import CASES, OFFICIAL_DRIVER, ours_canonical
from test_call_helpers import schema, tvmffi, validate
from tvmffi_cli import diff
from tvmffi_cli.cli import jsonout

MIN_CASES = 60
MIN_MATCH = 0.95


def _testing_lib():
    d = fixturebuild.official_package_dir()
    if d is None or not (d / "lib" / "libtvm_ffi_testing.so").is_file():
        pytest.skip("apache-tvm-ffi (with its test library) is not installed")
    return d / "lib" / "libtvm_ffi_testing.so"


@pytest.fixture(scope="module")
def official_results():
    _testing_lib()
    cases = [[f, [py for _cli, py in args]] for f, args in CASES]
    r = subprocess.run(
        [sys.executable, "-c", OFFICIAL_DRIVER, json.dumps(cases)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=fixturebuild.BUILD.parent,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(schema("call"))  # checked once, not per call


def _ours(runtime_sel):
    """Every case through the call command's parsing, task and renderer, in
    one worker; (list of canonical results, choice)."""
    from tvmffi_cli.call import argv as call_argv
    from tvmffi_cli.call import engine, messages
    from tvmffi_cli.cli import call as cmd
    from tvmffi_cli.sandbox import process as sandbox

    lib = str(_testing_lib())
    out = []
    choice = None
    worker = None
    check = _validator()
    try:
        for func, args in CASES:
            argv = [lib, func, *[cli for cli, _py in args], "--runtime", runtime_sel, "--json"]
            parsed = call_argv.parse_argv(argv, cmd.CALL_OPTIONS, cwd=os.getcwd())
            job = cmd.base_request(parsed)
            request = job.request
            choice = job.runtime.to_json()
            if worker is None:
                worker = sandbox.Worker(runtime=request.runtime)
            try:
                got = worker.call("call.task", messages.encode(request), timeout=60)
            except sandbox.ChildCrashed as e:
                out.append(["crash", e.signal, (e.stderr or "")[-300:]])
                continue
            reply = messages.decode_call_reply(got)
            if isinstance(reply, messages.Raised):
                doc = engine.raised_json(reply, details=False)
            elif isinstance(reply, messages.CallOk):
                doc = engine.call_json(reply, parsed.func, request.path)
            else:
                out.append(["input_error", reply.message])
                continue
            doc["runtime"] = choice
            # Validated as printed: with the keys every --json has (cli/jsonout.py).
            errs = [doc["error"]] if "error" in doc else []
            shown = jsonout.contract(doc, library=request.path, errors=errs)
            check.validate(json.loads(json.dumps(shown, allow_nan=False)))
            out.append(ours_canonical(doc))
    finally:
        if worker is not None:
            worker.close()
    return out, choice


def _loads_on(runtime_sel):
    """None when the test library loads on this runtime, else why not."""
    r = tvmffi("call", _testing_lib(), "testing.add_one", "1", "--runtime", runtime_sel)
    if r.returncode == 0 and r.stdout.strip() == "2":
        return None
    return (r.stderr or r.stdout).strip()[:300]


def test_enough_cases_of_every_kind():
    assert len(CASES) >= MIN_CASES
    funcs = {f for f, _ in CASES}
    for needle in (
        "schema_id_int",
        "schema_id_string",
        "schema_id_arr",
        "schema_id_dict",
        "enum_variant_get",
        "make_unregistered_object",
        "schema_id_tensor",
        "test_raise_error",
        "schema_id_list",
    ):
        assert any(needle in f for f in funcs), needle


@pytest.mark.parametrize("runtime_sel", ["official", "builtin"])
def test_testing_library_matches_the_official_api(official_results, runtime_sel):
    problem = _loads_on(runtime_sel)
    assert problem is None, problem  # the official test library loads on the builtin runtime
    ours, choice = _ours(runtime_sel)
    assert choice["kind"] == runtime_sel
    rows = []
    for (func, args), want, got in zip(CASES, official_results, ours):
        rows.append(
            {
                "func": func,
                "args": [cli for cli, _ in args],
                "match": want == got,
                "official": want,
                "tvmffi": got,
            }
        )
    matched = sum(r["match"] for r in rows)
    rate = matched / len(rows)
    fixturebuild.BUILD.mkdir(parents=True, exist_ok=True)
    (fixturebuild.BUILD / f"ecosystem-diff-{runtime_sel}.json").write_text(
        json.dumps(
            {
                "runtime": choice,
                "calls": len(rows),
                "matched": matched,
                "rate": rate,
                "mismatches": [r for r in rows if not r["match"]],
            },
            indent=1,
        )
    )
    misses = "\n".join(
        f"{r['func']} {r['args']}: official {r['official']} / tvmffi {r['tvmffi']}"
        for r in rows
        if not r["match"]
    )
    assert rate >= MIN_MATCH, f"{matched}/{len(rows)} match on {runtime_sel}:\n{misses}"


@pytest.mark.parametrize("index", [0, 50, 66, 78])
def test_the_batch_equals_the_command_line(official_results, index):
    # The batch above runs the command's own parsing, task and renderer in one
    # worker; a few cases through the real `tvmffi call --json` agree with it.
    func, args = CASES[index]
    r = tvmffi(
        "call", _testing_lib(), func, *[cli for cli, _ in args], "--runtime", "official", "--json"
    )
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    check = _validator()
    check.validate(doc)
    assert ours_canonical(doc) == official_results[index]


def test_testing_library_registers_the_same_on_both_runtimes():
    lib = _testing_lib()
    docs = {}
    for sel in ("auto", "official"):
        r = tvmffi("inspect", lib, "--json", "--runtime", sel)
        assert r.returncode == 0, r.stderr + r.stdout[-1000:]
        docs[sel] = json.loads(r.stdout)
    ours, theirs = docs["auto"], docs["official"]
    assert ours["runtime"]["kind"] == "builtin"  # auto needs no fallback
    assert len(ours["globals"]) >= 50 and ours["globals"] == theirs["globals"]
    assert [t["type_key"] for t in ours["types"]] == [t["type_key"] for t in theirs["types"]]
    from test_ecosystem_wheels import check_conform

    check_conform(lib)


# --- `tvmffi diff` against the official runtimes (issue 29) --------------------------------
def _diff_json(old, new, *flags, env=None):
    r = tvmffi("diff", "--json", old, new, *flags, env=env, timeout=600)
    assert r.stdout.strip(), r.stderr
    return r, validate(json.loads(r.stdout), "diff")


@pytest.mark.slow
def test_official_test_libraries_0_1_6_to_0_1_15_breaks_equal_the_official_view():
    """The official test library of 0.1.6 against 0.1.15.post2's: each
    release's own `tvm_ffi` shows no API break (a field moved to a base type,
    constructors that became type attributes), but 0.1.15's library aborts on
    0.1.12 and older, where 0.1.6's runs: one break, the range. ~30 loads."""
    import diff_oracle
    import releases
    from tvmffi_cli.abi.versions import releases_text

    old, new = (releases.release_testing_lib(v) for v in ("0.1.6", "0.1.15.post2"))
    for v in releases.RELEASES:
        releases.release_root(v)  # every runtime at hand (the suite fetches them)
    env = {"TVMFFI_WHEEL_CACHE": str(releases.cache_dir())}
    vo = diff_oracle.official_view("0.1.6", str(old), testing=True)
    vn = diff_oracle.official_view("0.1.15.post2", str(new), testing=True)
    official = diff_oracle.official_breaks(vo, vn)
    assert official == set()  # what the official API offers did not shrink
    ro, rn = diff_oracle.official_range(str(old)), diff_oracle.official_range(str(new))
    dropped = [v for v in releases.RELEASES if not ro[v] and rn[v]]
    assert dropped == releases.RELEASES[:10]  # 0.1.0 .. 0.1.12
    official.add(("runtime.releases_dropped", f"NEW does not run on {releases_text(dropped)},"))

    # the default: NEW loaded on each release of OLD's range, OLD where NEW fails
    r, doc = _diff_json(old, new, env=env)
    assert r.returncode == 1 and doc["verdict"] == "incompatible" and doc["complete"]
    assert diff_oracle.tvmffi_breaks(doc) == official
    notes = {(c["kind"], c["subject"]) for c in doc["changes"] if c["kind"] in diff.NOTES}
    assert notes == {
        ("type.method_now_attr", f"type testing.{t} method __ffi_init__")
        for t in (
            "TestCxxClassBase",
            "TestCxxClassDerived",
            "TestCxxClassDerivedDerived",
            "TestCxxInitSubset",
        )
    }
    # the field 0.1.6 registered on the subtype and 0.1.15 on its base only
    assert not any("field v1" in c["subject"] for c in doc["changes"])
    assert doc["runtime_ranges"]["new"] == {
        "releases": releases.RELEASES[10:],
        "basis": "loading",
    }
    rows = doc["range_check"]["releases"]
    assert [(x["release"], x["verdict"], x["new"], x["old"]) for x in rows] == [
        (v, "dropped", "fails", "loads") for v in releases.RELEASES[:10]
    ] + [(v, "kept", "loads", "not-needed") for v in releases.RELEASES[10:]]
    assert all("Cannot find type attribute __ffi_enum__" in x["new_message"] for x in rows[:10])
    assert doc["range_check"]["loads"] == 13 + 10
    # --symbols-range: by symbols both run everywhere; no break, and the promise says so
    r, doc = _diff_json(old, new, "--symbols-range", env=env)
    assert r.returncode == 0 and diff_oracle.tvmffi_breaks(doc) == set()
    assert doc["promise"] == diff.kinds.SYMBOLS_PROMISE and doc["range_check"] is None
    assert doc["runtime_ranges"]["new"]["basis"] == "symbols"


def test_str_positional_takes_the_text_as_it_is(tmp_path):
    """xgrammar's `testing._regex_to_ebnf(str, Any)`: '[a-c]+x' starts like JSON
    but the schema says str; the result equals the official runtime's."""
    import zipfile

    import releases

    whl = releases.fetch_wheel("xgrammar", "0.2.8")
    with zipfile.ZipFile(whl) as z:
        z.extract("xgrammar/libxgrammar_bindings.so", tmp_path)
    lib = tmp_path / "xgrammar" / "libxgrammar_bindings.so"
    name = "xgrammar.tvm_ffi_binding.testing._regex_to_ebnf"
    r = tvmffi("call", lib, name, "[a-c]+x", "true", "--json")
    assert r.returncode == 0, r.stderr
    ours = json.loads(r.stdout)["result"]
    code = (
        "import ctypes, json, sys, tvm_ffi\n"
        f"ctypes.CDLL({str(lib)!r}, ctypes.RTLD_GLOBAL)\n"
        f"print(json.dumps(tvm_ffi.get_global_func({name!r})('[a-c]+x', True)))\n"
    )
    official = releases.run_release_python("0.1.15.post2", code)
    assert official.returncode == 0, official.stderr[-1000:]
    assert ours == json.loads(official.stdout) == 'root ::= [a-c]+ "x"\n'
    # where no schema reads it, the refusal stands (exit 2, the hint)
    from tvmffi_cli.call import argv
    from tvmffi_cli.call.specs import StrArg

    (spec,) = argv.parse_argv([str(lib), "f", "[a-c"], {}).args
    assert spec.spec is None and "pass text with --str" in spec.error
    assert argv.spec_for_type("[a-c", {"type": "ffi.String"}) == StrArg("[a-c")
