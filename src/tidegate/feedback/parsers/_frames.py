"""The "code frame" layout that rustc/cargo and current ruff share::

error[E0425]: cannot find value `totl` in this scope      F401 [*] `os` imported but unused
 --> src/main.rs:3:20                                       --> bad.py:1:8
  |                                                          |
3 |     println!("{}", totl);                              1 | import os
"""

from __future__ import annotations

import re

import msgspec

_ARROW = re.compile(r"^\s*--> (?P<path>.+?):(?P<line>\d+)(?::(?P<col>\d+))?\s*$")


class Frame(msgspec.Struct, frozen=True):
    header: str
    path: str
    line: int
    column: int | None
    body: tuple[str, ...]
    """The lines after the arrow up to the next blank line that ends the frame."""


def frames(text: str) -> list[Frame]:
    lines = text.splitlines()
    found: list[Frame] = []
    for i, line in enumerate(lines):
        m = _ARROW.match(line)
        if m is None or i == 0:
            continue
        header = lines[i - 1]
        if not header or header[0].isspace():
            continue  # a secondary span inside a frame, not a new diagnostic
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip():
            body.append(lines[j])
            j += 1
        found.append(
            Frame(
                header=header,
                path=m.group("path"),
                line=int(m.group("line")),
                column=int(m.group("col")) if m.group("col") else None,
                body=tuple(body),
            )
        )
    return found
