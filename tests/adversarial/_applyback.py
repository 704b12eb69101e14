"""Shared by the apply-back and recovery attack tests: a repository whose change writes,
chmods, deletes and creates (four journalled operations), and the CLI run that applies it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo
from tests.integration._store import cli

OLD: dict[str, tuple[bytes, int] | None] = {
    "a.txt": (b"one\ntwo\nthree\n", 0o600),
    "b.sh": (b"#!/bin/sh\necho b\n", 0o644),
    "c.txt": (b"gamma\n", 0o644),
    "d/new.txt": None,
}
NEW: dict[str, tuple[bytes, int] | None] = {
    "a.txt": (b"one\nTWO\nthree\n", 0o600),
    "b.sh": (b"#!/bin/sh\necho B\n", 0o755),
    "c.txt": None,
    "d/new.txt": (b"created\n", 0o644),
}
OBJECTIVE = (
    "edit-file: a.txt\nreplace: two\nwith: TWO\n"
    "edit-file: b.sh\nreplace: echo b\nwith: echo B\n"
    "chmod-file: b.sh\nexecutable: true\n"
    "delete-file: c.txt\n"
    "create-file: d/new.txt\ncontent: <<<\ncreated\n>>>\n"
)


@pytest.fixture
def four_ops(repo: Repo, tmp_path: Path) -> Repo:
    for path, entry in OLD.items():
        if entry is not None:
            repo.write(path, entry[0], mode=entry[1])
    repo.write("unrelated.txt", "unrelated\n")
    repo.commit_all()
    (repo.root / "a.txt").chmod(0o600)  # a mode git does not record: it must survive
    (tmp_path / "tmp").mkdir()
    return repo


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Shadows and scratch dirs of the run land under tmp_path, not the system temp."""
    return {"TMPDIR": str(tmp_path / "tmp"), **extra}


def run(repo: Repo, tmp_path: Path, **extra: str) -> tuple[int, Any, str]:
    return cli("run", "--objective", OBJECTIVE, cwd=repo.root, env=env(tmp_path, **extra))


def on_disk(repo: Repo, table: dict[str, tuple[bytes, int] | None]) -> bool:
    for path, entry in table.items():
        full = repo.root / path
        if entry is None:
            if full.exists():
                return False
        elif full.read_bytes() != entry[0] or full.stat().st_mode & 0o777 != entry[1]:
            return False
    return True


def journals(repo: Repo) -> list[Path]:
    root = repo.root / ".git" / "tidegate" / "journal"
    return sorted(root.iterdir()) if root.exists() else []


def leftovers(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("tidegate-*"))
