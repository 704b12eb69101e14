"""Finding the user's repository and refusing the ones tidegate cannot work in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tidegate.errors import GitError, NotARepositoryError
from tidegate.git import Git


@dataclass(frozen=True)
class Repository:
    """A non-bare git work tree with a born HEAD.

    ``git_dir`` is this work tree's own git directory (``.git``, or ``.git/worktrees/X`` for a
    linked work tree); ``common_dir`` holds the objects and refs shared by all work trees.
    """

    root: Path
    git_dir: Path
    common_dir: Path
    head: str

    @property
    def git(self) -> Git:
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
    git = Git(path)
    found = _at_once(git, path)
    if found is not None:
        return found
    try:
        res = git.run(
            "rev-parse",
            "--is-bare-repository",
            "--is-inside-git-dir",
            "--absolute-git-dir",
            "--git-common-dir",
            check=False,
        )
    except GitError as exc:
        raise NotARepositoryError(str(exc)) from exc
    if res.returncode != 0:
        raise NotARepositoryError(f"{path}: not inside a git repository")
    bare, inside_git_dir, git_dir, common_dir = res.text.splitlines()[:4]
    if bare == "true":
        raise NotARepositoryError(f"{path}: a bare repository has no work tree to change")
    if inside_git_dir == "true":
        raise NotARepositoryError(f"{path}: inside a .git directory, not a work tree")
    root = Path(git.out("rev-parse", "--show-toplevel"))
    common = Path(common_dir)
    if not common.is_absolute():
        common = (path / common).resolve()
    head = Git(root).rev_parse("HEAD")
    if head is None:
        raise NotARepositoryError(
            f"{root}: HEAD has no commit yet; make a first commit so tidegate has a base"
        )
    return Repository(root=root.resolve(), git_dir=Path(git_dir), common_dir=common, head=head)


def _at_once(git: Git, path: Path) -> Repository | None:
    """All of discovery in one ``rev-parse`` when the answer is the usual one (a work tree
    with a born HEAD, no newline in its paths); None: the step-by-step way decides, and
    says what is wrong."""
    try:
        res = git.run(
            "rev-parse",
            "--is-bare-repository",
            "--is-inside-git-dir",
            "--absolute-git-dir",
            "--git-common-dir",
            "--show-toplevel",
            "--verify",
            "--quiet",
            "HEAD^{commit}",
            check=False,
        )
    except GitError:
        return None
    lines = res.text.split("\n")
    if res.returncode != 0 or len(lines) != 7 or lines[6] or lines[:2] != ["false", "false"]:
        return None
    git_dir, common_dir, root, head = lines[2:6]
    common = Path(common_dir)
    if not common.is_absolute():
        common = (path / common).resolve()
    return Repository(
        root=Path(root).resolve(), git_dir=Path(git_dir), common_dir=common, head=head
    )
