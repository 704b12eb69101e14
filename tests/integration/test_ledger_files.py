"""The task files on disk: what init creates per route, hand edits surviving transitions
byte for byte, and malformed files refused with file:line, never repaired."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from tests.unit.ledger.helpers import item, new_task, passing, read
from tidegate import ledger
from tidegate.errors import UsageError
from tidegate.ledger import LedgerFormatError
from tidegate.ledger.taskdir import load_task, save_task

FILES = {
    "small": {"brief.md", "checkpoint.md", "implementation-notes.md", "ledger.md"},
    "medium": {
        "checkpoint.md",
        "implementation-notes.md",
        "ledger.md",
        "plan.md",
        "review-report.md",
    },
    "high": {
        "checkpoint.md",
        "implementation-notes.md",
        "ledger.md",
        "plan.md",
        "review-report.md",
    },
    "epic": {
        "checkpoint.md",
        "implementation-notes.md",
        "ledger.md",
        "plan.md",
        "review-report.md",
        "roadmap.md",
    },
}


@pytest.mark.parametrize("route", list(FILES))
def test_init_creates_the_files_the_route_requires(tmp_path: Path, route: str) -> None:
    task = new_task(tmp_path, route=route)
    assert {p.name for p in task.iterdir() if not p.name.startswith(".")} == FILES[route]
    state = load_task(task).state
    assert state.route.value == route
    assert [i.id for i in state.items] == ["T1", "T2"]
    assert state.checkpoint.resume_pointer is None
    assert "Fix calc" in read(task, "implementation-notes.md")


def test_init_refuses_an_existing_task(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    before = read(task, "ledger.md")
    with pytest.raises(UsageError, match="already holds a task"):
        ledger.init(task, ledger.Route.SMALL, "again", [])
    assert read(task, "ledger.md") == before


HAND_LEDGER = """\
# Ledger

> Kept by Ana. **Do not** reorder rows.

| ID | Title      | Status  | Owner note    | Required | Gate | Assignee | Retries | Blocker | Evidence |
|:---|:-----------|:--------|:--------------|:--------:|------|----------|--------:|---------|----------|
| T1 | Fix add    | pending | ask Bo \\| Cy  | yes      | -    | -        |       0 | -       | -        |
| T2 | Fix mul    | pending |               | no       | -    | -        |       0 | -       | -        |

Some closing words, *emphasised*.
"""


def test_hand_formatting_survives_transitions(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    (task / "ledger.md").write_text(HAND_LEDGER)
    cp = task / "checkpoint.md"
    cp.write_bytes(
        cp.read_text()
        .replace("- Resume Pointer: none", "- **Resume Pointer:** none")
        .replace("## Promotion Triggers", "A note for the reader.\n\n## Promotion Triggers")
        .replace("\n", "\r\n")
        .encode()
    )
    notes = task / "implementation-notes.md"
    notes.write_text(notes.read_text().replace("## Decisions\n", "## Decisions\n\n_None yet._\n"))
    ledger.claim(task, "T1", "ana")
    passing(task, "T1")
    ledger.done(task, "T1")

    changed = [
        line
        for line in difflib.ndiff(HAND_LEDGER.splitlines(), read(task, "ledger.md").splitlines())
        if line[:2] in ("- ", "+ ")
    ]
    assert changed == [
        "- | T1 | Fix add    | pending | ask Bo \\| Cy  | yes      | -    | -        |       0 | -       | -        |",
        "+ | T1 | Fix add    | done    | ask Bo \\| Cy  | yes      | -    | ana      |       0 | -       | E-1      |",
    ]
    raw = cp.read_bytes()
    assert b"\n" not in raw.replace(b"\r\n", b"")  # CRLF kept, and used for new lines
    text = raw.decode()
    assert "- **Resume Pointer:** none\r\n" in text
    assert "A note for the reader.\r\n" in text
    assert "- Next Action: review: every required item is done" not in text  # T2 is not done
    assert "_None yet._" in read(task, "implementation-notes.md")
    assert item(task, "T2").required is False


def test_a_save_without_changes_rewrites_nothing_but_the_time(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    ledger.claim(task, "T1", "ana")
    before = {p.name: p.read_text() for p in task.glob("*.md")}
    loaded = load_task(task)
    save_task(loaded)
    after = {p.name: p.read_text() for p in task.glob("*.md")}
    diff = [n for n in before if before[n] != after[n]]
    assert diff in ([], ["checkpoint.md"])
    if diff:
        changed = set(after["checkpoint.md"].splitlines()) - set(
            before["checkpoint.md"].splitlines()
        )
        assert all(line.startswith("- Updated: ") for line in changed)


def _break(task: Path, name: str, old: str, new: str) -> None:
    path = task / name
    text = path.read_text()
    assert old in text, (old, text)
    path.write_text(text.replace(old, new, 1))


MALFORMED = [
    (
        "ledger.md",
        "| T2 | Fix mul | pending |",
        "| T2 | Fix mul | doing |",
        8,
        "unknown status 'doing' (expected one of: pending, in_progress, blocked, done, discarded)",
    ),
    (
        "ledger.md",
        "| T2 | Fix mul |",
        "| T1 | Fix mul |",
        8,
        "duplicate item ID 'T1' (first at line 7)",
    ),
    (
        "ledger.md",
        "| T2 | Fix mul | pending | yes |",
        "| T2 | Fix mul | pending |",
        8,
        "broken table: row has 8 cells, the header has 9",
    ),
    (
        "ledger.md",
        "| --- | --- | --- |",
        "| --- | - | --- |",
        6,
        "broken table: separator row must have 9 '---' cells",
    ),
    ("ledger.md", "| Retries |", "| Tries |", 5, "missing column(s) 'retries'"),
    (
        "ledger.md",
        "| T2 | Fix mul | pending | yes | - | - | 0 |",
        "| T2 | Fix mul | pending | yes | - | - | two |",
        8,
        "retries of T2 must be a whole number",
    ),
    (
        "ledger.md",
        "| T2 | Fix mul | pending | yes | - | - | 0 | - |",
        "| T2 | Fix mul | blocked | yes | - | - | 0 | waiting on Bo |",
        8,
        "blocker of T2 must start with its kind",
    ),
    (
        "ledger.md",
        "| T2 | Fix mul | pending |",
        "| T2 | Fix mul | in_progress |",
        8,
        "T2 is in_progress but has no assignee",
    ),
    (
        "ledger.md",
        "| T2 | Fix mul | pending | yes | - | - | 0 | - | - |",
        "| T2 | Fix mul | pending | yes | - | - | 0 | - | E-4 |",
        8,
        "evidence E-4 of T2 is not in implementation-notes.md",
    ),
    (
        "ledger.md",
        "| T2 | Fix mul | pending | yes | - |",
        "| T2 | Fix mul | pending | yes | deploy |",
        8,
        "unknown gate 'deploy'",
    ),
    ("checkpoint.md", "- Resume Pointer: none\n", "", 1, "missing 'Resume Pointer:' line"),
    (
        "checkpoint.md",
        "- Resume Pointer: none",
        "- Resume Pointer: T7",
        7,
        "resume pointer 'T7' is not an item in ledger.md",
    ),
    ("checkpoint.md", "- Route: medium", "- Route: huge", 5, "unknown route 'huge'"),
    (
        "checkpoint.md",
        "- Stage: plan (in_progress)",
        "- Stage: plan (paused)",
        6,
        "unknown stage status 'paused'",
    ),
    (
        "checkpoint.md",
        "- Stage: plan (in_progress)",
        "- Stage: ship_summary (in_progress)",
        6,
        "unknown stage for route medium 'ship_summary'",
    ),
    (
        "checkpoint.md",
        "## Promotion Triggers\n",
        "## Promotion Triggers\n\n- [~] bigger\n",
        16,
        "malformed checklist entry",
    ),
    (
        "implementation-notes.md",
        "## Decisions\n",
        "## Decisions\n\n- D-1 route_change from=small reason=x\n",
        9,
        "route_change entry needs to=",
    ),
    (
        "implementation-notes.md",
        "## Decisions\n",
        "## Decisions\n\n- D-1 reroute to=high\n",
        9,
        "unknown entry kind 'reroute'",
    ),
    ("review-report.md", "- Verdict: pending", "- Verdict: maybe", 3, "unknown verdict 'maybe'"),
    (
        "plan.md",
        "## T2: Fix mul\n",
        "## T2: Fix mul\n\n```tidegate\nedit-file: calc.py\n",
        13,
        "```tidegate block opened here is never closed",
    ),
    (
        "plan.md",
        "## T2: Fix mul\n",
        "## T1: Fix mul again\n",
        11,
        "second plan section for T1 (first at line 7)",
    ),
]


@pytest.mark.parametrize(
    ("name", "old", "new", "line", "message"), MALFORMED, ids=[m[4][:40] for m in MALFORMED]
)
def test_malformed_files_name_file_and_line_and_stay_untouched(
    tmp_path: Path, name: str, old: str, new: str, line: int, message: str
) -> None:
    task = new_task(tmp_path)
    _break(task, name, old, new)
    before = {p.name: p.read_bytes() for p in task.glob("*.md")}
    with pytest.raises(LedgerFormatError) as error:
        ledger.claim(task, "T1", "ana")
    assert (error.value.file, error.value.line) == (name, line), str(error.value)
    assert message in error.value.message
    assert str(error.value).startswith(f"{name}:{line}: ")
    assert {p.name: p.read_bytes() for p in task.glob("*.md")} == before  # never repaired


def test_a_required_file_that_is_missing(tmp_path: Path) -> None:
    task = new_task(tmp_path)
    (task / "plan.md").unlink()
    with pytest.raises(LedgerFormatError, match=r"^checkpoint.md:5: route medium needs plan.md"):
        ledger.load(task)


def test_not_a_task_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such task directory"):
        ledger.load(tmp_path / "nope")
    with pytest.raises(UsageError, match="not a task directory"):
        ledger.load(tmp_path)
