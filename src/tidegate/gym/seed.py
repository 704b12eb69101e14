"""Deterministic seed repositories: the same files, commit and hashes every time (fixed
identity and dates), then the user's staged, unstaged and untracked work on top; and that
work's bytes, to tell what a run changed of it."""

from __future__ import annotations

import os
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


def user_bytes(repo: Path) -> dict[str, bytes]:
    """Every file of the work tree (not .git) and the index: the user's work."""
    state: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if not (dirpath == str(repo) and d == ".git")]
        for name in filenames:
            full = Path(dirpath) / name
            state[str(full.relative_to(repo))] = (
                os.readlink(full).encode() if full.is_symlink() else full.read_bytes()
            )
    index = repo / ".git" / "index"
    state["<index>"] = index.read_bytes() if index.exists() else b""
    return state


def damage(
    before: dict[str, bytes], after: dict[str, bytes], allowed: set[str]
) -> tuple[int, list[str]]:
    """Bytes of user work changed outside ``allowed``, and which paths."""
    total, paths = 0, []
    for path in sorted(set(before) | set(after)):
        if path in allowed or path.startswith(".tidegate/"):
            continue
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        paths.append(path)
        if old is None or new is None:
            total += len(old or new or b"")
        else:
            total += sum(a != b for a, b in zip(old, new, strict=False)) + abs(len(old) - len(new))
    return total, paths
