"""Conformance 21: identical stale edits are blocked without changing the file's content or
its inode.

The caller read the file, someone else changed it, and the caller sends the same edit
(with the hash it last saw) twice. Both attempts are refused as stale, name the state they
found, and leave the bytes, the inode and the mtime exactly as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidegate.workspace.port import StalePrecondition, WorkspacePort
from tidegate.workspace.states import EntryState


def test_identical_stale_edits_are_both_blocked(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    target = root / "app.py"
    target.write_text("def greet():\n    return 'hi'\n")
    port = WorkspacePort(root)
    seen = port.read("app.py").sha256

    target.write_text("def greet():\n    return 'hello'\n")  # the user's own edit
    changed = target.read_bytes()
    st = os.stat(target)

    for _ in range(2):
        with pytest.raises(StalePrecondition) as caught:
            port.edit("app.py", old="'hi'", new="'hey'", expect=seen)
        assert caught.value.expected == seen
        assert caught.value.actual == EntryState.file(changed)
        after = os.stat(target)
        assert target.read_bytes() == changed
        assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
            st.st_ino,
            st.st_mtime_ns,
            st.st_size,
        )
    assert sorted(p.name for p in root.iterdir()) == ["app.py"]  # no temp files left


def test_a_stale_whole_file_write_is_blocked_the_same_way(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    target = root / "notes.md"
    target.write_text("v1\n")
    port = WorkspacePort(root)
    seen = port.read("notes.md").sha256
    target.write_text("v2\n")
    inode = os.stat(target).st_ino
    for _ in range(2):
        with pytest.raises(StalePrecondition):
            port.write("notes.md", "mine\n", expect=seen)
    assert target.read_text() == "v2\n" and os.stat(target).st_ino == inode
