"""The type of JSON as the worker protocol and every --json carry it."""

from __future__ import annotations

from typing import Union

#: A JSON value, as json.loads returns it.
JsonValue = Union[None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]]
#: A JSON object (a task's request and reply on the channel, a --json document).
JsonDict = dict[str, JsonValue]
