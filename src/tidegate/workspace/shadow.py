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
POOL_PREFIX = "tidegate-pool-"
SCRATCH_PREFIX = "tidegate-run-"
POOL_FILE = "shadow-pool"


class ShadowWorktree:
    def __init__(self, repo: Repository, path: Path, t0_commit: str, pooled: bool = False) -> None:
        self.repo = repo
        self.path = path
        self.t0 = t0_commit
        self.git = Git(path)
        self.pooled = pooled
        self.reused = False

    @classmethod
    def acquire(cls, repo: Repository, t0_commit: str, run_id: str, pool: bool) -> ShadowWorktree:
        """A shadow at T0: with ``pool``, the repository's warm shadow reset to T0 when there
        is a healthy one (only files that differ are rewritten), else a new worktree."""
        if not pool:
            return cls.create(repo, t0_commit, run_id)
        warm = _pooled_path(repo)
        if warm is not None:
            shadow = cls(repo, warm, t0_commit, pooled=True)
            try:
                shadow.reset()
                shadow.reused = True
                return shadow
            except GitError:
                shadow.remove()
        path = Path(tempfile.mkdtemp(prefix=POOL_PREFIX))
        try:
            repo.git.run("worktree", "add", "--detach", "--quiet", str(path), t0_commit)
        except GitError:
            shutil.rmtree(path, ignore_errors=True)
            raise
        (repo.runtime_dir / POOL_FILE).write_text(str(path) + "\n")
        return cls(repo, path, t0_commit, pooled=True)

    def release(self, keep: bool) -> None:
        """Remove the shadow, unless it is the warm pooled one or ``keep`` asks to keep it."""
        if not (keep or self.pooled):
            self.remove()

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
        if self.pooled:
            (self.repo.runtime_dir / POOL_FILE).unlink(missing_ok=True)
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


def _pooled_path(repo: Repository) -> Path | None:
    """The recorded warm shadow, if it is still one of this repository's worktrees."""
    record = repo.runtime_dir / POOL_FILE
    if not record.exists():
        return None
    path = Path(record.read_text().strip())
    listing = repo.git.run("worktree", "list", "--porcelain", "-z").stdout.split(b"\0")
    registered = {
        entry[len(b"worktree ") :].decode("utf-8", "surrogateescape")
        for entry in listing
        if entry.startswith(b"worktree ")
    }
    if path.name.startswith(POOL_PREFIX) and str(path) in registered and (path / ".git").is_file():
        return path
    record.unlink(missing_ok=True)
    if str(path) in registered or path.exists():
        repo.git.run("worktree", "remove", "--force", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
    repo.git.run("worktree", "prune", check=False)
    return None
