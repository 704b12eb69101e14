"""Discovery: the one-call way gives exactly what the step-by-step way gives, and leaves
every unusual case (bare, inside .git, no commit) to it, with its words."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tidegate.errors import NotARepositoryError
from tidegate.git import Git
from tidegate.workspace import repo as repo_module
from tidegate.workspace.repo import discover


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def main(tmp_path: Path) -> Path:
    root = tmp_path / "main"
    (root / "sub" / "deeper").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(root))
    (root / "sub" / "f").write_text("x\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    return root


def _slow(path: Path, monkeypatch: pytest.MonkeyPatch) -> repo_module.Repository:
    with monkeypatch.context() as m:
        m.setattr(repo_module, "_at_once", lambda git, path: None)
        return discover(path)


@pytest.mark.parametrize("where", [".", "sub", "sub/deeper"])
def test_one_call_equals_the_step_by_step_way(
    main: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = repo_module._at_once(Git(main / where), main / where)
    assert fast is not None
    assert fast == _slow(main / where, monkeypatch) == discover(main / where)
    assert fast.root == main.resolve() and fast.git_dir == main / ".git"


def test_one_call_in_a_linked_work_tree(
    main: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = tmp_path / "linked"
    _git(main, "worktree", "add", "-q", "--detach", str(linked))
    fast = repo_module._at_once(Git(linked / "sub"), linked / "sub")
    assert fast is not None and fast == _slow(linked / "sub", monkeypatch)
    assert fast.root == linked.resolve()
    assert fast.common_dir == (main / ".git").resolve()
    assert fast.git_dir.parent == (main / ".git" / "worktrees").resolve()


def test_unusual_cases_are_left_to_the_step_by_step_way(tmp_path: Path, main: Path) -> None:
    unborn = tmp_path / "unborn"
    _git(tmp_path, "init", "-q", str(unborn))
    bare = tmp_path / "bare.git"
    _git(tmp_path, "init", "-q", "--bare", str(bare))
    for path in (unborn, bare, main / ".git", tmp_path):
        assert repo_module._at_once(Git(path), path) is None
    with pytest.raises(NotARepositoryError, match="HEAD has no commit yet"):
        discover(unborn)
    with pytest.raises(NotARepositoryError, match="bare repository"):
        discover(bare)
    with pytest.raises(NotARepositoryError, match=r"inside a \.git directory"):
        discover(main / ".git")
