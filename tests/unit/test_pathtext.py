"""Paths as text: the exact bytes survive, JSON text is valid UTF-8, the terminal form is
quoted the way git quotes, and free text cannot carry control characters to a terminal."""

from __future__ import annotations

import base64
import json
import os

import pytest

from tidegate.flow.report import ChangedFile, FlowReport
from tidegate.pathtext import b64_bytes, path_bytes, quote_path, utf8_text, visible

RAW = [b"plain.txt", b"sp ace", b"new\nline", b"bad\xff\xfe", "caf\u00e9".encode(), b"\x1b[2J"]


@pytest.mark.parametrize("raw", RAW)
def test_report_path_keeps_the_exact_bytes(raw: bytes) -> None:
    entry = ChangedFile(
        path=os.fsdecode(raw), action="create", before_sha256=None, after_sha256="0" * 64
    )
    data = json.loads(entry.model_dump_json())  # serialises whatever the name
    exact = base64.b64decode(data["path_bytes"]) if data["path_bytes"] else data["path"].encode()
    assert exact == raw
    assert path_bytes(os.fsdecode(raw)) == raw


def test_path_bytes_only_for_names_that_are_not_utf8() -> None:
    assert b64_bytes("caf\u00e9") is None
    assert b64_bytes(os.fsdecode(b"bad\xff")) == base64.b64encode(b"bad\xff").decode()
    assert utf8_text(os.fsdecode(b"bad\xff")) == "bad\\xff"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"plain.txt", "plain.txt"),
        (b'q"uote', '"q\\"uote"'),
        (b"back\\slash", '"back\\\\slash"'),
        (b"new\nline", '"new\\nline"'),
        (b"bad\xff", '"bad\\377"'),
        (b"\x1b[2J", '"\\033[2J"'),
        ("caf\u00e9".encode(), "caf\u00e9"),
    ],
)
def test_quote_path_matches_git(raw: bytes, shown: str) -> None:
    assert quote_path(os.fsdecode(raw)) == shown


def test_visible_escapes_every_control_character() -> None:
    text = visible("a\x1b[31mred\nnext\r" + os.fsdecode(b"\xff"))
    assert text == "a\\x1b[31mred\\nnext\\r\\xff"
    assert all(ch.isprintable() for ch in text)


def test_report_copies_stay_serialisable() -> None:
    """``model_copy(update=...)`` skips validation; the report's own copy does not."""
    report = FlowReport(
        status="failed",
        mode="patch",
        run_id="r",
        repo="/r",
        attempts=1,
        max_attempts=1,
        fs_mode="read-write",
        planner="structured",
    )
    copied = report.model_copy(update={"message": os.fsdecode(b"lost \xff"), "notes": ["\udcfe"]})
    data = json.loads(copied.model_dump_json())
    assert data["message"] == "lost \\xff" and data["notes"] == ["\\xfe"]
