"""Shared by the hold/apply/discard/undo tests: a repository with staged, unstaged and
untracked work, the change the tests hold or land, and what must not change."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration._store import cli

FIX = (
    "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    "edit-file: README.md\nreplace: # calc\nwith: # calc (fixed)\n"
)
CHECK = f"{sys.executable} -c 'from calc import add; assert add(2, 3) == 5'"
USER_TAIL = "\n\ndef sub(a, b):\n    return a - b\n"
"""An edit of the user's to calc.py, far from the change's line."""


@pytest.fixture
def dirty(committed_repo: Repo) -> Repo:
    """Staged, unstaged and untracked work, none of it on the change's lines."""
    repo = committed_repo
    repo.write("staged.txt", "staged\n")
    repo.git("add", "staged.txt")
    repo.write("README.md", "# calc\n\nunstaged notes\n")
    repo.write("notes/untracked.txt", "untracked\n")
    return repo


def outside_refs(repo: Repo) -> str:
    """HEAD and every ref outside refs/tidegate/, with their objects."""
    refs = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    kept = [r for r in refs.splitlines() if not r.startswith("refs/tidegate/")]
    return repo.git("rev-parse", "HEAD") + "\n".join(kept)


def held(repo: Repo, objective: str = FIX, verify: str = CHECK) -> str:
    """Run ``objective`` with --hold; the run id."""
    code, report, err = cli(
        "run", "--hold", "--objective", objective, "--verify", verify, cwd=repo.root
    )
    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "held", report
    return str(report["run_id"])


def landed(repo: Repo, objective: str = FIX, verify: str = CHECK) -> str:
    """Run ``objective`` (applied by its APPLY_BACK); the run id."""
    code, report, err = cli("run", "--objective", objective, "--verify", verify, cwd=repo.root)
    assert code == 0, err
    assert isinstance(report, dict) and report["status"] == "succeeded", report
    return str(report["run_id"])


def files_but(repo: Repo, *paths: str) -> dict[str, object]:
    """The tree state (bytes, modes, index bytes) without ``paths`` and .tidegate/."""
    state = repo.tree_state()
    return {
        k: v
        for k, v in state.items()
        if k not in paths and not k.startswith((".tidegate", "dir:.tidegate"))
    }


def rejects_of(repo: Repo) -> list[Path]:
    return sorted((repo.root / ".tidegate" / "rejects").rglob("*.rej"))
