"""Conformance 32: invalid UTF-8 is rejected by the text mutation paths without rewriting
bytes or replacing the inode.

A file holding bytes that are not UTF-8 cannot be edited as text (decoding it lossily and
writing it back would silently corrupt it); text that cannot be encoded as UTF-8 (lone
surrogates) cannot be written or used in an edit. Every refusal leaves the file's bytes,
inode and mtime as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidegate.workspace.port import MUST_NOT_EXIST, NotUtf8, WorkspacePort
from tidegate.workspace.states import sha256_bytes

LATIN1 = "café = 'crème'\n".encode("latin-1")  # é and è as single bytes: not UTF-8


@pytest.fixture
def setup(tmp_path: Path) -> tuple[WorkspacePort, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "legacy.py").write_bytes(LATIN1)
    (root / "ok.py").write_text("name = 'x'\n")
    return WorkspacePort(root), root


def fingerprint(path: Path) -> tuple[bytes, int, int]:
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def test_editing_a_non_utf8_file_changes_nothing(setup: tuple[WorkspacePort, Path]) -> None:
    port, root = setup
    before = fingerprint(root / "legacy.py")
    expect = sha256_bytes(LATIN1)
    for old, new in (("caf", "CAF"), ("crème", "creme")):
        with pytest.raises(NotUtf8) as caught:
            port.edit("legacy.py", old=old, new=new, expect=expect)
        assert caught.value.where == "file"
    assert fingerprint(root / "legacy.py") == before


def test_reading_a_non_utf8_file_is_refused_with_its_hash(
    setup: tuple[WorkspacePort, Path],
) -> None:
    port, _ = setup
    with pytest.raises(NotUtf8) as caught:
        port.read("legacy.py")
    assert caught.value.sha256 == sha256_bytes(LATIN1)


def test_unencodable_text_is_refused_before_anything_is_touched(
    setup: tuple[WorkspacePort, Path],
) -> None:
    port, root = setup
    before = fingerprint(root / "ok.py")
    expect = sha256_bytes(before[0])
    with pytest.raises(NotUtf8) as caught:
        port.write("ok.py", "name = '\udce9'\n", expect=expect)
    assert caught.value.where == "content"
    with pytest.raises(NotUtf8) as caught:
        port.edit("ok.py", old="'x'", new="'\udce9'", expect=expect)
    assert caught.value.where == "new"
    with pytest.raises(NotUtf8):
        port.write("fresh.py", "\ud800", expect=MUST_NOT_EXIST)
    assert fingerprint(root / "ok.py") == before
    assert not (root / "fresh.py").exists()
    assert sorted(p.name for p in root.iterdir()) == ["legacy.py", "ok.py"]
