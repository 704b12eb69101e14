"""A task directory on disk: load every file into one ``TaskState``, check the files agree
with each other, and write a transition back.

Write order: files the route newly needs, implementation-notes.md (evidence first), then
ledger.md, then checkpoint.md last. Each write is atomic, so a crash at any point leaves
each file old or new; and since the checkpoint is written last it never points at work the
ledger does not record yet. The fault point ``ledger.between_writes`` (inert unless
``TIDEGATE_FAULT`` names it) kills the process between the ledger and the checkpoint write.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from tidegate.disk.faults import maybe_crash
from tidegate.errors import UsageError
from tidegate.ledger.atomic import remove_stale_temp_files, write_into
from tidegate.ledger.errors import LedgerFormatError
from tidegate.ledger.markdown import TextFile
from tidegate.ledger.model import Checkpoint, Item, Route, TaskState
from tidegate.ledger.parse import digest, parse_checkpoint, parse_ledger
from tidegate.ledger.parse_notes import parse_notes
from tidegate.ledger.parse_plan import parse_plan, parse_review, parse_roadmap
from tidegate.ledger.render import update_checkpoint, update_ledger, update_notes
from tidegate.ledger.routes import (
    BRIEF,
    CHECKPOINT,
    LEDGER,
    NOTES,
    PLAN,
    REQUIRED_FILES,
    REVIEW,
    ROADMAP,
    plan_file,
)

FAULT_BETWEEN_WRITES = "ledger.between_writes"


class Task(msgspec.Struct):
    dir: Path
    state: TaskState
    files: dict[str, TextFile]
    original_items: dict[str, Item]
    original_checkpoint: Checkpoint
    create: dict[str, str] = msgspec.field(default_factory=dict)
    """Files to create on save (a route change can require new ones)."""


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read(task_dir: Path, name: str) -> TextFile | None:
    path = task_dir / name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from exc
    return TextFile.parse(name, data)


def load_task(task_dir: Path) -> Task:
    """Read and check every file of the task. Raises UsageError / LedgerFormatError."""
    if not task_dir.is_dir():
        raise UsageError(
            f"{task_dir}: no such task directory (create one with `tidegate ledger init`)"
        )
    cp_file = _read(task_dir, CHECKPOINT)
    if cp_file is None:
        raise UsageError(
            f"{task_dir}: not a task directory (no {CHECKPOINT}; run `tidegate ledger init`)"
        )
    checkpoint = parse_checkpoint(cp_file)
    files = {CHECKPOINT: cp_file}
    for name in (LEDGER, NOTES, PLAN, BRIEF, REVIEW, ROADMAP):
        text = _read(task_dir, name)
        if text is not None:
            files[name] = text
    missing = [n for n in REQUIRED_FILES[checkpoint.route] if n not in files]
    if missing:
        raise LedgerFormatError(
            CHECKPOINT,
            checkpoint.key_lines["route"],
            f"route {checkpoint.route} needs {', '.join(missing)}, which is missing",
        )
    state = _state(checkpoint, files)
    _cross_check(state, files)
    return Task(
        dir=task_dir,
        state=state,
        files=files,
        original_items={i.id: copy.deepcopy(i) for i in state.items},
        original_checkpoint=copy.deepcopy(checkpoint),
    )


def _state(checkpoint: Checkpoint, files: dict[str, TextFile]) -> TaskState:
    items, optional = parse_ledger(files[LEDGER])
    evidence, decisions, failures = parse_notes(files[NOTES])
    source = plan_file(checkpoint.route, PLAN in files)
    plan, plan_digest = {}, digest([])
    if source in files:
        sole = items[0].id if source == BRIEF and len(items) == 1 else None
        plan = parse_plan(files[source], {i.id for i in items}, sole)
        plan_digest = digest(files[source].lines)
    milestones = parse_roadmap(files[ROADMAP]) if ROADMAP in files else ()
    if checkpoint.route is Route.EPIC and milestones:
        for item in items:  # a ledger without a Milestone column: all in the first one
            item.milestone = item.milestone or milestones[0]
    return TaskState(
        checkpoint=checkpoint,
        items=items,
        evidence=evidence,
        decisions=decisions,
        failures=failures,
        plan=plan,
        plan_file=source,
        plan_digest=plan_digest,
        review=parse_review(files[REVIEW]) if REVIEW in files else None,
        milestones=milestones,
        has_gate_column="gate" in optional,
    )


def _cross_check(state: TaskState, files: dict[str, TextFile]) -> None:
    """What one file says about another must hold: pointers, evidence ids, milestones."""
    cp, ledger, notes = files[CHECKPOINT], files[LEDGER], files[NOTES]
    ids = {i.id for i in state.items}
    pointer = state.checkpoint.resume_pointer
    if pointer is not None and pointer not in ids:
        raise cp.error(
            state.checkpoint.key_lines["resume pointer"] - 1,
            f"resume pointer {pointer!r} is not an item in {LEDGER}",
        )
    evidence = {e.id: e for e in state.evidence}
    for ev in state.evidence:
        if ev.item not in ids:
            raise notes.error(
                ev.line - 1, f"{ev.id} belongs to {ev.item!r}, which is not in {LEDGER}"
            )
    for item in state.items:
        for ref in item.evidence:
            if ref not in evidence:
                raise ledger.error(item.line - 1, f"evidence {ref} of {item.id} is not in {NOTES}")
            if evidence[ref].item != item.id:
                raise ledger.error(
                    item.line - 1, f"evidence {ref} belongs to {evidence[ref].item}, not {item.id}"
                )
        if state.milestones and item.milestone and item.milestone not in state.milestones:
            raise ledger.error(item.line - 1, f"milestone {item.milestone!r} is not in {ROADMAP}")
    for entry in state.checkpoint.conditions:
        target = entry.text.split(":", 1)[0].strip()
        if target not in ids:
            raise cp.error(
                entry.line - 1, f"re-execution condition must start with an item ID, not {target!r}"
            )


def save_task(task: Task) -> None:
    """Render what changed and write it: new files, notes, ledger, then the checkpoint;
    all through one descriptor of the task directory (``atomic.write_into``)."""
    state = task.state
    state.checkpoint.updated = now()
    first = [(name, text.encode("utf-8")) for name, text in task.create.items()]
    notes = task.files[NOTES]
    before = notes.render()
    update_notes(notes, state)
    if notes.render() != before:
        first.append((NOTES, notes.render().encode("utf-8")))
    ledger = task.files[LEDGER]
    update_ledger(ledger, task.original_items, state.items)
    first.append((LEDGER, ledger.render().encode("utf-8")))
    cp = task.files[CHECKPOINT]
    update_checkpoint(cp, task.original_checkpoint, state.checkpoint)
    with write_into(task.dir) as write:
        for name, data in first:
            write(name, data)
        maybe_crash(FAULT_BETWEEN_WRITES)
        write(CHECKPOINT, cp.render().encode("utf-8"))
    remove_stale_temp_files(task.dir)


def create_task(task_dir: Path, files: dict[str, str]) -> None:
    """Write a new task's files; the checkpoint last, so a half-created task is refused."""
    task_dir.mkdir(parents=True, exist_ok=True)
    with write_into(task_dir) as write:
        for name in sorted(files, key=lambda n: n == CHECKPOINT):
            write(name, files[name].encode("utf-8"))
