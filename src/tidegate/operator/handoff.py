"""Handoffs: the latest session summary a mode leaves for the next command.

Each mode writes its own file (``latest_engineer_handoff.json``,
``latest_terminal_handoff.json``) and the compatibility ``latest_handoff.json``. A reader
takes its mode's file; the compatibility file only when the mode's file is *absent*; a
present but malformed mode file is an error, never a reason to fall back. A handoff never
carries the objective's text, only :func:`objective_metadata` of it, and a reader refuses
metadata that is not exactly that shape.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from tidegate.operator.errors import RecordError
from tidegate.operator.records import load_document, now_ms, schema_name, write_json
from tidegate.text.numbers import DIGITS

COMPAT_FILE = "latest_handoff.json"
MODE_FILES = {
    "engineer": "latest_engineer_handoff.json",
    "terminal": "latest_terminal_handoff.json",
}
_METADATA = re.compile(
    rf"^objective-metadata\(chars=({DIGITS}), words=({DIGITS}), lines=({DIGITS})\)$"
)
_REQUIRED = ("mode", "selection", "session_phase", "objective_metadata", "memory", "evidence")


def objective_metadata(text: str) -> str:
    """What may be shown of an objective: its size, never its words."""
    lines = len(text.splitlines()) if text else 0
    return f"objective-metadata(chars={len(text)}, words={len(text.split())}, lines={lines})"


def check_metadata(value: object, path: Path) -> str:
    if not isinstance(value, str):
        raise RecordError(f"{path}: objective metadata is not a string")
    match = _METADATA.match(value)
    if match is None:
        raise RecordError(f"{path}: objective metadata is malformed or tampered")
    chars, words, lines = (int(g) for g in match.groups())
    if words > chars or lines > chars or (chars > 0 and lines == 0 and words > 0):
        raise RecordError(f"{path}: objective metadata is inconsistent (tampered)")
    return value


class Handoff(msgspec.Struct, frozen=True):
    path: Path
    fallback: bool
    """True when the compatibility file was used because the mode's file is absent."""
    body: dict[str, Any]


def write_handoff(root: Path, mode: str, body: dict[str, Any]) -> Path:
    document = {"schema": schema_name("handoff"), "written_at_unix_ms": now_ms(), **body}
    document["mode"] = mode
    target = root / MODE_FILES[mode]
    write_json(target, document)
    write_json(root / COMPAT_FILE, document)
    return target


def read_handoff(root: Path, mode: str) -> Handoff:
    """The handoff ``mode`` reads, by the precedence rules; RecordError when none is usable."""
    own = root / MODE_FILES[mode]
    if own.exists() or own.is_symlink():
        return Handoff(own, False, _checked(own, mode))
    compat = root / COMPAT_FILE
    if compat.exists() or compat.is_symlink():
        return Handoff(compat, True, _checked(compat, mode))
    raise RecordError(f"{root}: no {MODE_FILES[mode]} (nor {COMPAT_FILE}): run the mode first")


def optional_handoff(root: Path, mode: str) -> Handoff | None:
    """The mode's own handoff if it exists (and is valid), else None; for context sections
    such as an engineer run's terminal continuity, which never fall back."""
    own = root / MODE_FILES[mode]
    if not own.exists() and not own.is_symlink():
        return None
    return Handoff(own, False, _checked(own, mode))


def _checked(path: Path, mode: str) -> dict[str, Any]:
    body = load_document(path, "handoff")
    missing = [k for k in _REQUIRED if k not in body]
    if missing:
        raise RecordError(f"{path}: malformed handoff (missing {', '.join(missing)})")
    if body["mode"] != mode:
        raise RecordError(f"{path}: a {body['mode']!r} handoff, not a {mode} one")
    check_metadata(body["objective_metadata"], path)
    for key in ("memory", "evidence"):
        if not isinstance(body[key], list) or not all(isinstance(r, dict) for r in body[key]):
            raise RecordError(f"{path}: malformed handoff ({key} must be a list of records)")
    if not isinstance(body["selection"], dict):
        raise RecordError(f"{path}: malformed handoff (selection)")
    return body
