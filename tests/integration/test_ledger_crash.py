"""A crash between the ledger.md and the checkpoint.md write, and the task directory lock.

The real CLI runs in a subprocess with ``TIDEGATE_FAULT=ledger.between_writes``, which
SIGKILLs it after ledger.md is replaced and before checkpoint.md is: the checkpoint must be
exactly the old one (it is written last, so it never points at unrecorded work), every file
must parse, and the next command must carry on from the ledger.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import tidegate_cli
from tests.unit.ledger.helpers import item, new_task, passing, read
from tidegate import ledger
from tidegate.ledger import ItemStatus
from tidegate.ledger.atomic import TaskLock, stale_temp_files

FAULT = {"TIDEGATE_FAULT": "ledger.between_writes"}


def _in_progress(task: Path) -> None:
    ledger.claim(task, "T1", "ana")


def _with_evidence(task: Path) -> None:
    ledger.claim(task, "T1", "ana")
    passing(task, "T1")


def _with_failure(task: Path) -> None:
    ledger.claim(task, "T1", "ana")
    ledger.record(task, "T1", ["command: pytest -q (exit 1)"])


CASES: list[tuple[str, Callable[[Path], None], list[str], ItemStatus]] = [
    ("claim", lambda task: None, ["claim", "{task}", "T1", "--as", "ana"], ItemStatus.IN_PROGRESS),
    (
        "record",
        _in_progress,
        ["record", "{task}", "T1", "--evidence", "command: pytest -q (exit 0)"],
        ItemStatus.IN_PROGRESS,
    ),
    ("done", _with_evidence, ["done", "{task}", "T1"], ItemStatus.DONE),
    ("requeue", _with_failure, ["requeue", "{task}", "T1", "--reason", "red"], ItemStatus.PENDING),
]


@pytest.mark.parametrize(("name", "setup", "argv", "status"), CASES, ids=[c[0] for c in CASES])
def test_crash_between_the_two_writes(
    tmp_path: Path,
    name: str,
    setup: Callable[[Path], None],
    argv: list[str],
    status: ItemStatus,
) -> None:
    task = new_task(tmp_path)
    setup(task)
    checkpoint_before = (task / "checkpoint.md").read_bytes()
    ledger_before = (task / "ledger.md").read_bytes()

    res = tidegate_cli("ledger", *[a.format(task=task) for a in argv], env=FAULT)
    assert res.returncode == -signal.SIGKILL, (res.returncode, res.stdout, res.stderr)

    assert (task / "checkpoint.md").read_bytes() == checkpoint_before  # written last: untouched
    assert (task / "ledger.md").read_bytes() != ledger_before  # the transition is recorded
    assert stale_temp_files(task) == []
    state, action = ledger.load(task)  # both files parse: nothing half-written
    assert item(task, "T1").status is status
    pointer = state.checkpoint.resume_pointer
    assert pointer is None or state.item(pointer) is not None

    # The loop resumes from the ledger, and the next transition makes the checkpoint agree.
    if status is ItemStatus.IN_PROGRESS:
        assert (action.kind, action.item) == ("continue", "T1")
        passing(task, "T1")
        ledger.done(task, "T1")
    elif status is ItemStatus.PENDING:
        assert (action.kind, action.item) == ("claim", "T1")
        ledger.claim(task, "T1", "ana")
    else:
        assert (action.kind, action.item) == ("claim", "T2")
        ledger.claim(task, "T2", "ana")
    state, action = ledger.load(task)
    assert state.checkpoint.next_action == action.text
    active = [i.id for i in state.items if i.status is ItemStatus.IN_PROGRESS]
    assert state.checkpoint.resume_pointer in (active or [None])


def test_a_killed_writer_leaves_a_temp_file_that_is_ignored_then_removed(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    leftover = task / ".ledger.md.99999.tmp"
    leftover.write_text("| half a row")
    assert ledger.load(task)[1].item == "T1"
    ledger.claim(task, "T1", "ana")
    assert not leftover.exists()


def test_a_second_writer_is_refused_with_exit_4(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    before = read(task, "ledger.md")
    with TaskLock(task):
        res = tidegate_cli("ledger", "claim", str(task), "T1")
    assert res.returncode == 4, res.stderr
    assert res.stderr == f"tidegate: error: {task}: another ledger command is updating this task\n"
    assert read(task, "ledger.md") == before
