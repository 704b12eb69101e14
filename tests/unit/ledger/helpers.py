"""Small helpers shared by the ledger tests: real task directories in tmp, real files."""

from __future__ import annotations

import itertools
from pathlib import Path

from tidegate import ledger
from tidegate.ledger.model import Item, TaskState
from tidegate.ledger.taskdir import load_task

_unique = itertools.count(1)


def new_task(
    tmp_path: Path,
    route: str = "medium",
    items: tuple[str, ...] = ("Fix add", "Fix mul"),
    brief: str = "Fix calc",
    name: str = "task",
) -> Path:
    task = tmp_path / name
    ledger.init(task, ledger.Route(route), brief, list(items))
    return task


def state(task: Path) -> TaskState:
    return load_task(task).state


def item(task: Path, item_id: str) -> Item:
    found = state(task).item(item_id)
    assert found is not None
    return found


def passing(task: Path, item_id: str) -> None:
    """Record new passing command evidence for the item."""
    n = next(_unique)
    ledger.record(task, item_id, [f"command: check --case {n} (exit 0)"])


def failing(task: Path, item_id: str) -> None:
    """Record new failing command evidence for the item."""
    n = next(_unique)
    ledger.record(task, item_id, [f"command: check --case {n} (exit 1)"])


def fail_attempt(task: Path, item_id: str) -> ledger.Outcome:
    """Claim (if pending), record a new failing check, requeue as verification_failed."""
    if item(task, item_id).status is ledger.ItemStatus.PENDING:
        ledger.claim(task, item_id, "tester")
    failing(task, item_id)
    return ledger.requeue(task, item_id, "the check failed")


def finish(task: Path, item_id: str) -> None:
    ledger.claim(task, item_id, "tester")
    passing(task, item_id)
    ledger.done(task, item_id)


def read(task: Path, name: str) -> str:
    return (task / name).read_text(encoding="utf-8")


def approve_review(task: Path, refs: str = "E-1") -> None:
    path = task / "review-report.md"
    text = path.read_text().replace("Verdict: pending", "Verdict: approved")
    path.write_text(text.replace("Refs: none", f"Refs: {refs}"))
