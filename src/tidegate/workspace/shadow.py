"""Shadow worktrees: a linked git work tree at T0, under the OS temp dir, where proposals
are applied and verified. Destructive git (reset --hard, clean) only ever runs here."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tidegate.errors import GitError
from tidegate.git import IDENTITY, Git
from tidegate.workspace.repo import Repository

SHADOW_PREFIX = "tidegate-shadow-"
SCRATCH_PREFIX = "tidegate-run-"


class ShadowWorktree:
    def __init__(self, repo: Repository, path: Path, t0_commit: str) -> None:
        self.repo = repo
        self.path = path
        self.t0 = t0_commit
        self.git = Git(path)

    @classmethod
    def create(cls, repo: Repository, t0_commit: str, run_id: str) -> ShadowWorktree:
        path = Path(tempfile.mkdtemp(prefix=f"{SHADOW_PREFIX}{run_id}-"))
        try:
            repo.git.run("worktree", "add", "--detach", "--quiet", str(path), t0_commit)
        except GitError:
            shutil.rmtree(path, ignore_errors=True)
            raise
        return cls(repo, path, t0_commit)

    def stage_paths(self, paths: list[str]) -> str:
        """Record exactly ``paths`` (adds, edits, deletions) in the shadow's index and return
        the resulting tree. Only the named paths are examined, so the cost does not grow
        with the repository; paths that exist nowhere are ignored."""
        if paths:
            payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
            self.git.run("update-index", "--add", "--remove", "-z", "--stdin", input=payload)
        return self.git.out("write-tree", env=IDENTITY)

    def reset(self) -> None:
        """Back to T0, whatever state the last attempt left (conflicts, untracked files)."""
        self.git.run("reset", "--quiet", "--hard", self.t0)
        self.git.run("clean", "-ffdxq")

    def remove(self) -> None:
        try:
            self.repo.git.run("worktree", "remove", "--force", "--force", str(self.path))
        except GitError:
            shutil.rmtree(self.path, ignore_errors=True)
            self.repo.git.run("worktree", "prune", check=False)


def remove_stale_shadows(repo: Repository) -> list[str]:
    """Remove tidegate shadows of runs that are no longer alive, and those runs' scratch
    directories. Call with the run lock held."""
    listing = repo.git.run("worktree", "list", "--porcelain", "-z").stdout.split(b"\0")
    removed: list[str] = []
    for entry in listing:
        if not entry.startswith(b"worktree "):
            continue
        path = entry[len(b"worktree ") :].decode("utf-8", "surrogateescape")
        if not os.path.basename(path).startswith(SHADOW_PREFIX):
            continue
        if Path(path).resolve() == repo.root:
            continue
        repo.git.run("worktree", "remove", "--force", "--force", path, check=False)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
        run_id = os.path.basename(path)[len(SHADOW_PREFIX) :].rsplit("-", 1)[0]
        # The run's scratch directory was made beside its shadow.
        for scratch in Path(path).parent.glob(f"{SCRATCH_PREFIX}{run_id}-*"):
            shutil.rmtree(scratch, ignore_errors=True)
    repo.git.run("worktree", "prune", check=False)
    return removed
