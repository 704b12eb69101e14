"""What a terminal showed, as text: the visible log's form of a byte stream (escape
sequences and controls removed), and its sanitised lines."""

from __future__ import annotations

import re

from tidegate.text.sanitize import sanitize

ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]"  # two-character and charset sequences
    r"|\x9b[0-?]*[ -/]*[@-~]"  # C1 CSI
)
_MOVES = re.compile(r"\x1b\[[0-9;]*[HfdEF]")  # cursor positioning: a new place, a new line
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` as a person would read it in a scrolling terminal: cursor positioning and
    carriage returns become line breaks, other escape sequences and controls are removed."""
    text = ESCAPES.sub("", _MOVES.sub("\n", text)).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


def sanitized_lines(text: str) -> list[str]:
    """The non-empty lines of ``text``, sanitised as one text (a private key block spans
    lines: line by line, its body would not be recognised), right-trimmed."""
    return [line.rstrip() for line in sanitize(text).splitlines() if line.strip()]
