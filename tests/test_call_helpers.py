"""Shared helpers (no tests here) of the `tvmffi call` / `tvmffi bench` tests: run the CLI in a
subprocess, pick the runtime, build the call fixtures once."""

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fixturebuild

SCHEMAS = Path(__file__).resolve().parents[1] / "src" / "tvmffi_cli" / "schemas"


def tvmffi(*args, cwd=None, env=None, timeout=120):
    e = dict(os.environ)
    e.pop("TVMFFI_RUNTIME", None)  # the tests say which runtime with --runtime
    if env:
        e.update(env)
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=e,
        timeout=timeout,
    )


def emitted(doc, request, name="call"):
    """`doc` (an engine document) validated as the CLI prints it: with the
    keys cli/jsonout.py adds to every --json. Returns `doc` itself."""
    from tvmffi_cli.cli import jsonout

    errors = [doc["error"]] if "error" in doc else []
    validate(jsonout.contract(doc, library=request.path, errors=errors), name)
    return doc


@functools.cache
def schema(name):
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def validate(doc, name):
    import jsonschema

    jsonschema.validate(doc, schema(name))
    return doc


@functools.cache
def kernels():
    return fixturebuild.build("call/kernels.c", headers="ours")


@functools.cache
def typed():
    return fixturebuild.build(
        "call/typed.cc",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
        flags=["-Wno-unused-parameter"],
    )


@functools.cache
def kitchen():
    return fixturebuild.build(
        "cpp/kitchen.cc", headers="official", defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"]
    )


@functools.cache
def basic():
    return fixturebuild.build("c/basic.c", headers="ours")


@functools.cache
def crashy():
    return fixturebuild.build("c/crashy.c", headers="ours")


@functools.cache
def runtime_problem(path):
    """None when `path` can host a library in the worker, else the reason."""
    r = tvmffi("call", kernels(), "add_int", "1", "2", "--runtime", path)
    if r.returncode == 0 and r.stdout.strip() == "3":
        return None
    return (r.stderr.strip() or r.stdout.strip())[:300]


class InProcessCall:
    """`tvmffi call ... --json` without two interpreter start-ups per call: the
    command line is parsed here and the call task runs in one persistent
    worker per runtime (the same task, replies and renderer as the CLI)."""

    def __init__(self, runtime):
        from tvmffi_cli.sandbox import process as sandbox

        self.runtime = runtime
        # Inputs reach the worker as private copies, as from the CLI (call/files.py).
        self.inputs = tempfile.mkdtemp(prefix="tvmffi-test-inputs-")
        self.worker = sandbox.Worker(runtime=runtime, read_paths=[fixturebuild.BUILD, self.inputs])

    def close(self):
        self.worker.close()
        shutil.rmtree(self.inputs, ignore_errors=True)

    def reply(self, lib, *argv):
        """(parsed, job, reply): the reply decoded as the CLI decodes it."""
        from dataclasses import replace

        from tvmffi_cli.call import argv as A
        from tvmffi_cli.call import files, messages
        from tvmffi_cli.cli import call as cmd

        parsed = A.parse_argv([str(lib), *map(str, argv)], cmd.CALL_OPTIONS, cwd=os.getcwd())
        job = cmd.base_request(parsed)
        _, args = files.private_inputs(job.request.args, job.request.cwd, into=self.inputs)
        request = replace(job.request, runtime=self.runtime, args=args)
        got = self.worker.call("call.task", messages.encode(request), timeout=60)
        return parsed, job, messages.decode_call_reply(got)

    def json(self, lib, *argv, expect="ok"):
        from tvmffi_cli.call import engine

        parsed, job, reply = self.reply(lib, *argv)
        assert reply.status == expect, reply
        if expect == "raised":
            return emitted(engine.raised_json(reply, details=False), job.request)
        if expect != "ok":
            return reply
        doc = engine.call_json(reply, parsed.func, job.request.path)
        return emitted(json.loads(json.dumps(doc, allow_nan=False)), job.request)

    def text(self, lib, *argv):
        from tvmffi_cli.render import call as render

        _parsed, _job, reply = self.reply(lib, *argv)
        assert reply.status == "ok", reply
        return render.call_text(reply)
