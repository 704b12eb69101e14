"""Paths as text: the exact bytes survive, JSON text is valid UTF-8, the terminal form is
quoted the way git quotes, and free text cannot carry control characters to a terminal."""

from __future__ import annotations

import base64
import json
import os

import pytest

from tests.conftest import Repo
from tidegate.records.report import ChangedFile, FlowReport
from tidegate.text.paths import (
    b64_bytes,
    git_quoted,
    git_unquoted,
    path_bytes,
    quote_path,
    utf8_text,
    visible,
)

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


def test_git_quoting_round_trips_through_git_itself(repo: Repo) -> None:
    """``git_unquoted`` reads git's own quoting (``git ls-files`` without -z), and git's
    ``hash-object --stdin-paths`` reads ``git_quoted`` back to the very same files."""
    names = [b'"quoted".txt', b"new\nline", b"ta\tb", b"bad\xff\xfe", "caf\u00e9".encode(), b"-"]
    for i, name in enumerate(names):
        (repo.root / os.fsdecode(name)).write_bytes(b"%d\n" % i)
    repo.git("add", "-A")
    listed = repo.git("-c", "core.quotePath=true", "ls-files").splitlines()
    raw = repo.git("ls-files", "-z").split("\0")[:-1]
    assert [git_unquoted(n) for n in listed] == raw
    assert {os.fsencode(n) for n in raw} == set(names)
    listing = b"".join(git_quoted(os.fsdecode(n)) + b"\n" for n in names)
    ids = repo.git("hash-object", "--stdin-paths", input=listing).split()
    assert ids == [repo.git("hash-object", "--stdin", input=b"%d\n" % i).strip() for i in range(6)]
