"""T0's trees against git's own answer, for every shape of dirty state, with and without
the shortcut for a scan that changes nothing (``snapshot._unchanged_tree``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests._git_calls import record_git_calls
from tests.conftest import Repo
from tidegate.workspace.repo import discover
from tidegate.workspace.snapshot import snapshot_trees


def _git_answer(repo: Repo, tmp: Path) -> tuple[str | None, str]:
    """(staged tree, work tree's tree) as plain git computes them, on index copies."""
    staged_copy, work_copy = tmp / "staged.idx", tmp / "work.idx"
    shutil.copy2(repo.root / ".git" / "index", staged_copy)
    shutil.copy2(repo.root / ".git" / "index", work_copy)

    def run(index: Path, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GIT_INDEX_FILE": str(index)}
        return subprocess.run(["git", *args], cwd=repo.root, env=env, capture_output=True,
                              text=True, check=False)  # fmt: skip

    staged = run(staged_copy, "write-tree")
    assert run(work_copy, "add", "--all").returncode == 0
    return (staged.stdout.strip() if staged.returncode == 0 else None), run(
        work_copy, "write-tree"
    ).stdout.strip()


def _shape(repo: Repo, shape: str) -> None:
    if shape == "unstaged edit":
        repo.write("calc.py", repo.read("calc.py") + "# more\n")
    elif shape == "staged edit":
        repo.write("calc.py", repo.read("calc.py") + "# staged\n")
        repo.git("add", "calc.py")
    elif shape == "staged, then undone in the work tree":
        original = repo.read("calc.py")
        repo.write("calc.py", original + "# staged\n")
        repo.git("add", "calc.py")
        repo.write("calc.py", original)
    elif shape == "untracked file":
        repo.write("new.py", "x = 1\n")
    elif shape == "deleted file":
        (repo.root / "README.md").unlink()
    elif shape == "chmod":
        (repo.root / "calc.py").chmod(0o755)
    elif shape == "file to symlink":
        (repo.root / "README.md").unlink()
        (repo.root / "README.md").symlink_to("calc.py")
    elif shape == "intent to add":
        repo.write("later.py", "y = 2\n")
        repo.git("add", "--intent-to-add", "later.py")
    elif shape == "touched only":
        os.utime(repo.root / "calc.py", (1_000_000_000, 1_000_000_000))
    elif shape == "ignored file":
        repo.write("build/out.bin", "ignored\n")
    elif shape == "conflict":
        repo.git("checkout", "-q", "-b", "other")
        repo.write("calc.py", "other side\n")
        repo.commit_all("other")
        repo.git("checkout", "-q", "-")
        repo.write("calc.py", "this side\n")
        repo.commit_all("this")
        subprocess.run(["git", "merge", "-q", "other"], cwd=repo.root, capture_output=True)


SHAPES = [
    "clean", "unstaged edit", "staged edit", "staged, then undone in the work tree",
    "untracked file", "deleted file", "chmod", "file to symlink", "intent to add",
    "touched only", "ignored file", "conflict",
]  # fmt: skip
UNCHANGED = {"clean", "staged edit", "touched only", "ignored file"}
"""The shapes whose scan changes nothing in the index: no second write-tree."""


@pytest.mark.parametrize("shape", SHAPES)
def test_t0_is_what_git_says(
    committed_repo: Repo, tmp_path: Path, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _shape(committed_repo, shape)
    expected_staged, expected_tree = _git_answer(committed_repo, tmp_path)
    calls = record_git_calls(monkeypatch)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    index_before = (committed_repo.root / ".git" / "index").read_bytes()
    trees = snapshot_trees(discover(committed_repo.root), scratch)
    assert (trees.index_tree, trees.tree) == (expected_staged, expected_tree)
    assert (committed_repo.root / ".git" / "index").read_bytes() == index_before
    # T0's scratch index holds exactly T0's tree
    env = {**os.environ, "GIT_INDEX_FILE": str(trees.index_file)}
    again = subprocess.run(["git", "write-tree"], cwd=committed_repo.root, env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert again.stdout.strip() == expected_tree
    assert calls.count("write-tree") == (1 if shape in UNCHANGED else 2), calls
