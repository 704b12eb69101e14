"""Deterministic seed repositories: the same files, commit and hashes every time (fixed
identity and dates), then the user's staged, unstaged and untracked work on top."""

from __future__ import annotations

from pathlib import Path

from tidegate.git.command import Git
from tidegate.gym.scenarios import Seed

_ENV = {
    "GIT_AUTHOR_NAME": "gym",
    "GIT_AUTHOR_EMAIL": "gym@tidegate.invalid",
    "GIT_COMMITTER_NAME": "gym",
    "GIT_COMMITTER_EMAIL": "gym@tidegate.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def _git(root: Path, *args: str) -> str:
    """git through the one wrapper (its scrubbed environment, no hooks), with the seed's
    fixed identity and dates; a failure raises GitError."""
    return Git(root, config=("init.defaultBranch=main",)).run(*args, env=_ENV).text


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="")


def build(seed: Seed, root: Path) -> str:
    """Build the seed repository at ``root`` (created); returns the commit id."""
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    _write(root, seed.files)
    for rel in seed.executable:
        (root / rel).chmod(0o755)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", "seed")
    _write(root, seed.staged)
    if seed.staged:
        _git(root, "add", "--", *seed.staged)
    _write(root, seed.unstaged)
    _write(root, seed.untracked)
    return _git(root, "rev-parse", "HEAD").strip()
