"""conform's typed task messages (conform/messages.py) and the typed
confinement options: what the parent accepts from the worker, and how a
configuration table's options meet the command line's. Pure Python, <1 s."""

import json

import pytest

from tvmffi_cli.conform import config
from tvmffi_cli.conform.messages import (
    ExitLoaded,
    ExitRequest,
    MemcheckCalled,
    MemcheckRequest,
    MemcheckSkipped,
    TypeLayout,
    decode_memcheck_reply,
    decode_type_layouts,
)
from tvmffi_cli.sandbox.messages import MessageError
from tvmffi_cli.sandbox.policy import Confinement


def wire(obj):
    """What the channel carries: the JSON text, read back."""
    return json.loads(json.dumps(obj))


def test_requests_round_trip_through_json():
    r = MemcheckRequest("/x/lib.so", "f", ("g1", "g2"), True)
    assert wire(r.to_json()) == {
        "path": "/x/lib.so",
        "name": "f",
        "getters": ["g1", "g2"],
        "global": True,
    }
    assert MemcheckRequest.from_json(wire(r.to_json())) == r
    assert ExitRequest.from_json(wire(ExitRequest(None).to_json())) == ExitRequest(None)
    assert wire(ExitLoaded(True, ("a.b",)).to_json()) == {"loaded": True, "globals": ["a.b"]}


def test_memcheck_reply_is_decoded_or_refused():
    assert decode_memcheck_reply(wire(MemcheckSkipped("no GPU").to_json())) == MemcheckSkipped(
        "no GPU"
    )
    assert decode_memcheck_reply(wire(MemcheckCalled().to_json())) == MemcheckCalled()
    for bad in ({"obs": {}}, {"skipped": 3}, {"called": False}, [], None):
        with pytest.raises(MessageError):
            decode_memcheck_reply(bad)
    with pytest.raises(MessageError, match="getters"):
        MemcheckRequest.from_json({"path": "p", "name": "f", "getters": [1], "global": False})


def test_type_layouts_keep_the_wire_format_and_refuse_others():
    doc = {
        "key": "t.A",
        "total_size": None,
        "fields": [["a", 24, 8, 8]],
        "inherited": [["h", 16, 8, 8]],
    }
    (t,) = decode_type_layouts(wire([doc]))
    assert t.to_json() == doc and t.fields[0].offset == 24 and t.inherited[0].name == "h"
    for bad in (
        [dict(doc, fields=[["a", True, 8, 8]])],  # a bool is no offset
        [dict(doc, fields=[["a", 24, 8]])],
        [dict(doc, key=7)],
        {"key": "t.A"},
    ):
        with pytest.raises(MessageError):
            decode_type_layouts(bad)
    assert TypeLayout.from_json(doc) == t


def test_config_confinement_meets_the_command_line(tmp_path):
    cfg = config.parse(
        {"env": ["A"], "allow-read": ["data"], "scratch-limit": "2G", "require-sandbox": True},
        str(tmp_path / "pyproject.toml"),
    )
    assert cfg.sandbox == Confinement(
        env=("A",),
        scratch_limit="2G",
        require_sandbox=True,
        allow_read=(str(tmp_path / "data"),),
    )
    given = Confinement(env=("B",), scratch_limit="64M", allow_read=("/cli",))
    merged = cfg.sandbox.under(given)
    # lists add up (the table's first), a value given on the command line wins
    assert merged.env == ("A", "B") and merged.allow_read == (str(tmp_path / "data"), "/cli")
    assert merged.scratch_limit == "64M" and merged.require_sandbox is True
    assert config.parse({}, "x/pyproject.toml").sandbox == Confinement()
