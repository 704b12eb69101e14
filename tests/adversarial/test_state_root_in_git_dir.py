"""A state root inside the repository's git directory, spelled every way an operator (or a
hostile configuration) could: ``.git`` itself, a directory below it, a link whose target
resolves into it, a linked work tree's own git directory (``.git/worktrees/<name>``) and
the main repository's ``.git`` seen from that linked work tree, and a separate git
directory (``git init --separate-git-dir``) that lies outside the work tree.

The last three are outside the work tree, so only the git-directory rule refuses them.
Every surface that chooses a state root for a repository refuses each one before anything
is created there: the run store (``tidegate run`` and the reads), the fast read path, the
operator's run root and the tool host."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Repo, git, tidegate_cli
from tests.e2e._operator import EDIT, op
from tidegate.errors import UsageError
from tidegate.operator.errors import OperatorError
from tidegate.operator.state_root import run_root
from tidegate.store.state_root import open_run_store, read_run_store
from tidegate.workspace.repo import discover

Shape = Callable[[Repo, Path], tuple[Path, Path]]
"""(the workspace a command is given, the state root it is given)."""


def _plain_git(repo: Repo, tmp: Path) -> tuple[Path, Path]:
    return repo.root, repo.root / ".git"


def _below_git(repo: Repo, tmp: Path) -> tuple[Path, Path]:
    return repo.root, repo.root / ".git" / "tidegate-state"


def _link_into_git(repo: Repo, tmp: Path) -> tuple[Path, Path]:
    (tmp / "alias").symlink_to(repo.root / ".git")  # the root itself is no link
    return repo.root, tmp / "alias" / "state"


def _linked_tree(repo: Repo, tmp: Path) -> Path:
    linked = tmp / "linked"
    repo.git("worktree", "add", "-q", str(linked))
    return linked


def _linked_own_git_dir(repo: Repo, tmp: Path) -> tuple[Path, Path]:
    linked = _linked_tree(repo, tmp)
    return linked, repo.root / ".git" / "worktrees" / "linked" / "state"


def _linked_common_dir(repo: Repo, tmp: Path) -> tuple[Path, Path]:
    return _linked_tree(repo, tmp), repo.root / ".git" / "tidegate"


def _linked_via_link(repo: Repo, tmp: Path) -> tuple[Path, Path]:
    linked = _linked_tree(repo, tmp)
    (tmp / "alias").symlink_to(repo.root / ".git")
    return linked, tmp / "alias" / "state"


def _separate_git_dir(repo: Repo, tmp: Path) -> tuple[Path, Path]:
    work = tmp / "separate"
    git(tmp, "init", "-q", "--separate-git-dir", str(tmp / "separate.git"), str(work))
    (work / "f.txt").write_text("x\n")
    git(work, "add", "f.txt")
    git(work, "commit", "-q", "-m", "one")
    return work, tmp / "separate.git" / "state"


SHAPES: dict[str, Shape] = {
    ".git": _plain_git,
    ".git/x": _below_git,
    "link into .git": _link_into_git,
    "linked tree's own git dir": _linked_own_git_dir,
    "main .git from a linked tree": _linked_common_dir,
    "link into .git from a linked tree": _linked_via_link,
    "separate git dir": _separate_git_dir,
}
OUTSIDE_THE_TREE = [k for k in SHAPES if "linked" in k or "separate" in k]


@pytest.fixture(params=list(SHAPES))
def shape(
    request: pytest.FixtureRequest, committed_repo: Repo, tmp_path: Path
) -> tuple[Path, Path]:
    side = tmp_path / "side"
    side.mkdir()
    return SHAPES[request.param](committed_repo, side)


def _entries(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


def test_the_run_store_refuses_it_and_creates_nothing(shape: tuple[Path, Path]) -> None:
    workspace, state = shape
    git_dir = discover(workspace).common_dir
    before = _entries(git_dir)
    with pytest.raises(
        UsageError, match=r"state root .*: inside (the workspace|the repository's git directory)"
    ):
        open_run_store(workspace, str(state))
    with pytest.raises(UsageError, match="inside"):
        read_run_store(discover(workspace), str(state))
    assert _entries(git_dir) == before


def test_the_operator_refuses_it(shape: tuple[Path, Path]) -> None:
    workspace, state = shape
    with pytest.raises(OperatorError, match="inside"):
        run_root(str(state), discover(workspace))
    assert not state.exists() or state.name == ".git"


@pytest.mark.parametrize("kind", OUTSIDE_THE_TREE)
def test_the_cli_run_and_reads_refuse_it_from_outside_the_tree(
    committed_repo: Repo, tmp_path: Path, kind: str
) -> None:
    side = tmp_path / "side"
    side.mkdir()
    workspace, state = SHAPES[kind](committed_repo, side)
    git_dir = discover(workspace).common_dir
    before = _entries(git_dir)
    run = tidegate_cli("run", "--objective", "x", "--state-root", str(state), cwd=workspace)
    assert run.returncode == 2, run.stderr
    assert "inside the repository's git directory" in run.stderr and run.stderr.count("\n") == 1
    # The reads take the fast path first; it must refuse (or hand over to the full
    # command, which refuses), never read a store there as if it were allowed.
    for argv in (("runs",), ("read", "latest"), ("runs", "--json")):
        read = tidegate_cli(*argv, "--state-root", str(state), cwd=workspace)
        assert read.returncode == 2, (argv, read.stdout, read.stderr)
        assert "inside the repository's git directory" in read.stderr
    assert _entries(git_dir) == before


@pytest.mark.parametrize("kind", OUTSIDE_THE_TREE)
def test_an_engineer_run_refuses_it_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], committed_repo: Repo, tmp_path: Path, kind: str
) -> None:
    side = tmp_path / "side"
    side.mkdir()
    workspace, state = SHAPES[kind](committed_repo, side)
    git_dir = discover(workspace).common_dir
    before = _entries(git_dir)
    res = op(capsys, "engineer", "run", "single-process", str(workspace), EDIT, str(state))
    assert res.code == 2, res.err
    assert "inside the repository's git directory" in res.err
    assert _entries(git_dir) == before


@pytest.mark.parametrize("kind", OUTSIDE_THE_TREE)
def test_the_tool_host_refuses_it_before_anything_is_created(
    committed_repo: Repo, tmp_path: Path, kind: str
) -> None:
    from tidegate.tools.host import open_executor

    side = tmp_path / "side"
    side.mkdir()
    workspace, state = SHAPES[kind](committed_repo, side)
    git_dir = discover(workspace).common_dir
    before = _entries(git_dir)
    with pytest.raises(UsageError, match="inside the repository's git directory"):
        open_executor(workspace, state_root=str(state))
    assert _entries(git_dir) == before
