"""The warm shadow pool as the tests see it: where its record says it is, and removing it
after a test (it lives under the OS temp dir, outside the test's own tmp_path)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import Repo
from tidegate.workspace.lock import POOL_SLOTS, pool_name


def pool_record(repo: Repo, slot: int = 0) -> Path:
    return repo.root / ".git" / "tidegate" / pool_name(slot)


def pool_path(repo: Repo, slot: int = 0) -> Path:
    return Path(pool_record(repo, slot).read_text().strip())


def pool_paths(repo: Repo) -> dict[int, Path]:
    """Every slot's recorded shadow, by slot."""
    return {s: pool_path(repo, s) for s in range(POOL_SLOTS) if pool_record(repo, s).exists()}


def remove_pool(repo: Repo) -> None:
    for path in pool_paths(repo).values():
        shutil.rmtree(path, ignore_errors=True)
