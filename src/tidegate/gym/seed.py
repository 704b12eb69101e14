"""Deterministic seed repositories: the same files, commit and hashes every time (fixed
identity and dates), then the user's staged, unstaged and untracked work on top."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | _ENV
    res = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null", *args],
        cwd=root, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return res.stdout


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
