"""The warm shadow pool as the tests see it: where its record says it is, and removing it
after a test (it lives under the OS temp dir, outside the test's own tmp_path)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import Repo


def pool_record(repo: Repo) -> Path:
    return repo.root / ".git" / "tidegate" / "shadow-pool"


def pool_path(repo: Repo) -> Path:
    return Path(pool_record(repo).read_text().strip())


def remove_pool(repo: Repo) -> None:
    if pool_record(repo).exists():
        shutil.rmtree(pool_path(repo), ignore_errors=True)
