"""Text that came from a library is data: make it safe for where it goes.

One helper per destination, used by every room that shows library text:

    terminal(s)        people's output: escape sequences, \\r, C0/C1 controls,
                       DEL and bidirectional overrides become visible escapes
                       (\\x1b, \\r, \\u202e); newlines and tabs stay unless
                       one_line=True. A line that would start with "::" (a
                       GitHub workflow command such as ::error, leading blanks
                       allowed) starts with "\\x3a:" instead, so library text
                       never issues an annotation in a CI log.
    one_line(s)        terminal(s) with \\n and \\t escaped too: one finding,
                       one line (GitHub annotations, log lines).
    xml(s)             characters XML 1.0 cannot hold, and CR, become visible
                       escapes, so a JUnit file is well-formed whatever the
                       bytes; lines never start a workflow command.
    json_text(s)       valid UTF-8 for JSON: a byte that was not UTF-8 (held
                       as a lone surrogate after a surrogateescape decode)
                       becomes the six characters \\xNN, and every literal
                       backslash is doubled in such strings only, so
                       unescape_json_text() gives the original bytes back.
    json_output(s)     a serialized JSON document with the characters json.dumps
                       leaves raw under ensure_ascii=False (DEL, C1 controls,
                       bidi overrides, line separators) spelt \\uXXXX, so the
                       document is the same JSON and inert on a terminal.
    from_bytes(b)      library bytes -> str (surrogateescape: lossless).
    cap(s, limit)      (s cut to `limit` characters, whether it was cut).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Union

#: A JSON value, as json.loads returns it (here: the room every other may import).
JsonValue = Union[None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]]
#: A JSON object: a task's request and reply on the worker's channel, a --json document.
JsonDict = dict[str, JsonValue]

#: C0 controls but \t and \n, DEL, C1 controls, bidi embeddings/overrides/isolates,
#: line/paragraph separators.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: "::" at the start of a line (after blanks): a workflow command in a CI log.
_COMMAND = re.compile(r"^([ \t]*):(?=:)", re.MULTILINE)
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t", "\x1b": "\\x1b"}
#: XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_XML_BAD = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069]"
)


def _esc(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:  # a raw byte kept by surrogateescape
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def from_bytes(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def terminal(s: str, *, one_line: bool = False) -> str:
    s = _SURROGATE.sub(lambda m: _esc(m.group()), s)
    return no_commands((_UNSAFE_LINE if one_line else _UNSAFE).sub(lambda m: _esc(m.group()), s))


def no_commands(s: str) -> str:
    """`s` with every line that would start a workflow command ("::", after
    blanks) starting with "\\x3a:" instead; nothing else changes. (In a
    Python string literal, as in a stub's docstring, \\x3a still means ":".)"""
    return _COMMAND.sub(r"\1\\x3a", s) if "::" in s else s


def one_line(s: str) -> str:
    return terminal(s, one_line=True)


def xml(s: str) -> str:
    # CR too (legal XML, but it rewrites a line when a CI log shows the file),
    # and no line may start a workflow command.
    return no_commands(_XML_BAD.sub(lambda m: _esc(m.group()), s).replace("\r", "\\r"))


def json_text(s: str) -> str:
    if not _SURROGATE.search(s):
        return s
    return _SURROGATE.sub(lambda m: _esc(m.group()), s.replace("\\", "\\\\"))


_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_output(s: str) -> str:
    # Outside strings a JSON document holds only ASCII, so every match is
    # inside a string, where \uXXXX means the same character.
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", s)


def unescape_json_text(s: str, *, had_bytes: bool) -> bytes:
    """The original bytes of a json_text() result (had_bytes: whether the
    original held non-UTF-8 bytes, i.e. whether escaping applied)."""
    if not had_bytes:
        return s.encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(s):
        if s.startswith("\\\\", i):
            out += b"\\"
            i += 2
        elif s.startswith("\\x", i) and len(s) >= i + 4:
            out.append(int(s[i + 2 : i + 4], 16))
            i += 4
        else:
            out += s[i].encode("utf-8", "surrogateescape")
            i += 1
    return bytes(out)


def map_strings(obj: Any, fn: Callable[[str], str]) -> Any:
    """fn applied to every string (dict keys included) of a JSON-like value."""
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, dict):
        return {fn(k) if isinstance(k, str) else k: map_strings(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [map_strings(v, fn) for v in obj]
    return obj


def has_raw_bytes(s: str) -> bool:
    """Whether s holds a lone surrogate (a raw byte or an invalid code point),
    i.e. whether json_text() would change it."""
    return not s.isascii() and _SURROGATE.search(s) is not None


def json_clean(obj: Any) -> Any:
    """json_text() applied to every string (keys included) of a JSON value."""
    try:
        # ASCII JSON spells every surrogate "\\udXXX": without one no string
        # changes, and the C encoder finds that out ten times faster than a walk.
        if "\\ud" not in json.dumps(obj):
            return obj
    except (TypeError, ValueError):
        pass
    return map_strings(obj, json_text)


def terminal_clean(obj: Any) -> Any:
    """terminal() applied to every string of a JSON-like value."""
    return map_strings(obj, terminal)


def cap(s: str, limit: int) -> tuple[str, bool]:
    return (s, False) if len(s) <= limit else (s[:limit], True)
