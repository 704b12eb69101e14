"""Finding the user's repository and refusing the ones tidegate cannot work in."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import msgspec

from tidegate.errors import GitError, NotARepositoryError
from tidegate.git.command import Git
from tidegate.git.env import DISCOVERY, discovery_lines


class Repository(msgspec.Struct, frozen=True, dict=True):
    """A non-bare git work tree with a born HEAD.

    ``git_dir`` is this work tree's own git directory (``.git``, or ``.git/worktrees/X`` for a
    linked work tree); ``common_dir`` holds the objects and refs shared by all work trees.
    """

    root: Path
    git_dir: Path
    common_dir: Path
    head: str

    @cached_property
    def git(self) -> Git:
        """The work tree's Git, one per repository object (so a reader it keeps, ``Git.
        kept_processes``, serves every phase of a run)."""
        return Git(self.root)

    @property
    def index_path(self) -> Path:
        return self.git_dir / "index"

    @property
    def runtime_dir(self) -> Path:
        """Where tidegate keeps its lock and apply-back journals: inside the git dir, so that
        nothing appears in the work tree and read-only runs leave it untouched."""
        return self.git_dir / "tidegate"


def discover(path: Path) -> Repository:
    """Return the repository containing ``path`` or raise NotARepositoryError with a reason."""
    path = path.expanduser()
    if not path.exists():
        raise NotARepositoryError(f"{path}: no such directory")
    if not path.is_dir():
        raise NotARepositoryError(f"{path}: not a directory")
    try:
        res = Git(path).run(*DISCOVERY, check=False)
    except GitError as exc:
        raise NotARepositoryError(str(exc)) from exc
    lines = discovery_lines(res.text)
    if len(lines) < 4:
        raise NotARepositoryError(f"{path}: not inside a git repository")
    if lines[0] == "true":
        raise NotARepositoryError(f"{path}: a bare repository has no work tree to change")
    if lines[1] == "true":
        raise NotARepositoryError(f"{path}: inside a .git directory, not a work tree")
    if res.returncode != 0 and len(lines) == 5:
        raise NotARepositoryError(
            f"{lines[4]}: HEAD has no commit yet; make a first commit so tidegate has a base"
        )
    if res.returncode != 0:
        raise NotARepositoryError(f"{path}: git cannot describe this repository")
    if len(lines) != 6:
        raise NotARepositoryError(
            f"{path}: git prints a path of this repository on more than one line (a newline "
            "in it); tidegate cannot work there"
        )
    git_dir, common_dir, root, head = lines[2:]
    common = Path(common_dir)
    if not common.is_absolute():
        common = (path / common).resolve()
    return Repository(
        root=Path(root).resolve(), git_dir=Path(git_dir), common_dir=common, head=head
    )
