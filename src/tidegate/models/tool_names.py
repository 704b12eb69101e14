"""Tool names on the wire.

tidegate's tool names (``workspace.read``) contain dots; OpenAI and Anthropic accept only
``[A-Za-z0-9_-]{1,64}``. Each request gets a ``ToolNameMap``: dots and other characters
become ``_`` on the way out and the model's answers are mapped back, so the agent loop
only ever sees tidegate's names. A name the model invents is passed back unchanged for the
tool executor to reject.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tidegate.models.errors import InvalidModelRequest

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_MAX_LEN = 64


def wire_name(name: str) -> str:
    return _NOT_ALLOWED.sub("_", name)[:_MAX_LEN] or "_"


class ToolNameMap:
    def __init__(self, names: Iterable[str]) -> None:
        self._out: dict[str, str] = {}
        self._back: dict[str, str] = {}
        for name in names:
            wire = wire_name(name)
            other = self._back.get(wire)
            if other is not None and other != name:
                raise InvalidModelRequest(
                    f"tool names {other!r} and {name!r} collide on the wire as {wire!r}"
                )
            self._out[name] = wire
            self._back[wire] = name

    def to_wire(self, name: str) -> str:
        return self._out.get(name) or wire_name(name)

    def from_wire(self, wire: str) -> str:
        return self._back.get(wire, wire)
