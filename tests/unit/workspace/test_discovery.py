"""Discovery in one ``rev-parse``: the repository git itself names, from the top, a
subdirectory or a linked work tree, and each refusal with its own words."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tidegate.errors import NotARepositoryError
from tidegate.workspace.repo import discover


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def main(tmp_path: Path) -> Path:
    root = tmp_path / "main"
    (root / "sub" / "deeper").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(root))
    (root / "sub" / "f").write_text("x\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    return root


@pytest.mark.parametrize("where", [".", "sub", "sub/deeper"])
def test_the_repository_git_names_from_anywhere_in_it(main: Path, where: str) -> None:
    found = discover(main / where)
    assert found.root == main.resolve()
    assert found.git_dir == main / ".git"
    assert found.common_dir == (main / ".git").resolve()
    assert found.head == _git(main, "rev-parse", "HEAD")


def test_a_linked_work_tree(main: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    _git(main, "worktree", "add", "-q", "--detach", str(linked))
    found = discover(linked / "sub")
    assert found.root == linked.resolve()
    assert found.common_dir == (main / ".git").resolve()
    assert found.git_dir.parent == (main / ".git" / "worktrees").resolve()
    assert str(found.git_dir) == _git(linked, "rev-parse", "--absolute-git-dir")


def test_each_refusal_says_what_is_wrong(tmp_path: Path, main: Path) -> None:
    unborn = tmp_path / "unborn"
    _git(tmp_path, "init", "-q", str(unborn))
    bare = tmp_path / "bare.git"
    _git(tmp_path, "init", "-q", "--bare", str(bare))
    outside = tmp_path / "outside"
    outside.mkdir()
    cases = {
        unborn: f"{unborn}: HEAD has no commit yet",
        bare: "bare repository",
        main / ".git": r"inside a \.git directory",
        outside: "not inside a git repository",
    }
    for path, words in cases.items():
        with pytest.raises(NotARepositoryError, match=words):
            discover(path)
