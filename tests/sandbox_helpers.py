"""Shared by tests/test_sandbox_*.py: the hostile fixture libraries, a
`tvmffi call --json` runner, and what the kernel offers here (tests of a
feature the kernel lacks skip, saying which)."""

import functools
import json
import os

import pytest

import fixturebuild
from test_call_helpers import tvmffi, validate


@functools.cache
def hostile():
    return fixturebuild.build("hostile/hostile.c")


@functools.cache
def spoil():
    return fixturebuild.build("hostile/spoil.c")


def call_json(*argv, rc=0, cwd=None):
    r = tvmffi("call", *argv, "--json", cwd=cwd)
    assert r.returncode == rc, (r.returncode, r.stdout, r.stderr)
    return validate(json.loads(r.stdout), "call"), r


def result(func, *args):
    doc, _ = call_json(hostile(), func, *args)
    return doc["result"]


@functools.cache
def applied():
    """The sandbox features a trivial call gets on this machine."""
    doc, _ = call_json(hostile(), "hello")
    return set(doc["sandbox"]["applied"])


def need(*features):
    missing = [f for f in features if f not in applied()]
    if missing:
        pytest.skip(
            f"the kernel here does not offer {', '.join(missing)} "
            f"({'; '.join(call_json(hostile(), 'hello')[0]['sandbox']['notes'])})"
        )


EPERM, EACCES, ESRCH, EROFS = 1, 13, 3, 30


def processes_named(name):
    """Host pids whose comm is `name`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/comm") as f:
                if f.read().strip() == name:
                    out.append(int(d))
        except OSError:
            pass
    return out


def token():
    """A fresh process name for one test (a comm holds 15 characters)."""
    import uuid

    return "tvsb" + uuid.uuid4().hex[:10]


def gone(name, within=5.0):
    """True once no process is named `name`, polling up to `within` seconds."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not processes_named(name):
            return True
        time.sleep(0.05)
    return False
