"""The sparse check reads the user's index header first: only an index that cannot hold a
skip-worktree entry (version 2, not split) spares it the ``ls-files`` of the changed paths."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tidegate.validate.shapes import _no_skip_worktree


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name in ("a", "b"):
        (root / name).write_text(name + "\n")
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


def test_a_plain_index_is_read_from_its_header(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert _no_skip_worktree(root / ".git" / "index")
    assert not _no_skip_worktree(None)
    assert not _no_skip_worktree(root / ".git" / "missing-index")


def test_a_skip_worktree_entry_is_never_missed(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    subprocess.run(["git", "update-index", "--skip-worktree", "b"], cwd=root, check=True)
    assert not _no_skip_worktree(root / ".git" / "index")  # git wrote version 3


def test_a_split_index_is_not_judged_by_its_small_part(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    subprocess.run(["git", "update-index", "--split-index"], cwd=root, check=True)
    index = root / ".git" / "index"
    assert int.from_bytes(index.read_bytes()[4:8], "big") == 2  # the small part says 2
    assert not _no_skip_worktree(index)


def test_a_version_4_index_is_not_trusted(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    subprocess.run(["git", "update-index", "--index-version", "4"], cwd=root, check=True)
    assert not _no_skip_worktree(root / ".git" / "index")
