"""What each ``tidegate ledger`` command does: lock the task, load it, make one transition,
refresh the checkpoint, save. The CLI only parses arguments and prints the ``Outcome``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import msgspec

from tidegate.errors import UsageError
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command, shell_argv
from tidegate.ledger import setbacks, transitions
from tidegate.ledger.atomic import TaskLock
from tidegate.ledger.budgets import BUDGETS, loop_used
from tidegate.ledger.evidence import Draft, attested_command, parse_ref
from tidegate.ledger.gates import infer_gate
from tidegate.ledger.model import (
    Checkpoint,
    FailureType,
    Item,
    ItemStatus,
    Route,
    StageStatus,
    TaskState,
)
from tidegate.ledger.next_action import Action, next_action, refresh
from tidegate.ledger.render import new_files, new_plan, new_review, new_roadmap
from tidegate.ledger.routes import (
    BRIEF,
    CHECKPOINT,
    FLOWS,
    LEDGER,
    NOTES,
    PLAN,
    REQUIRED_FILES,
    REVIEW,
    ROADMAP,
    start_stage,
)
from tidegate.ledger.ship import ship as ship_task
from tidegate.ledger.taskdir import Task, create_task, load_task, now, save_task
from tidegate.ledger.transitions import Change

TASK_FILES = (CHECKPOINT, LEDGER, NOTES, PLAN, REVIEW, BRIEF, ROADMAP)


class Outcome(msgspec.Struct, frozen=True):
    lines: list[str]
    action: Action | None = None
    exit_code: int = 0


def default_assignee() -> str:
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "someone"


def _transition(task_dir: Path, change: Callable[[Task], Change]) -> Outcome:
    """Lock, load, change, refresh the checkpoint, save; refused changes write nothing."""
    if not task_dir.is_dir():
        raise UsageError(
            f"{task_dir}: no such task directory (create one with `tidegate ledger init`)"
        )
    with TaskLock(task_dir):
        task = load_task(task_dir)
        result = change(task)
        action = refresh(task.state)
        save_task(task)
    lines = [*result.message.splitlines(), f"next: {action.text}"]
    return Outcome(lines, action, 1 if result.stopped else 0)


# -- init ------------------------------------------------------------------------------


def init(task_dir: Path, route: Route, brief: str, titles: list[str]) -> Outcome:
    brief = brief.strip()
    if not brief:
        raise UsageError("--brief is empty: say what the task is")
    existing = [n for n in TASK_FILES if (task_dir / n).exists()]
    if existing:
        raise UsageError(
            f"{task_dir} already holds a task ({', '.join(existing)}); not overwritten"
        )
    titles = [" ".join(t.split()) for t in titles] or [brief.splitlines()[0][:100]]
    if any(not t for t in titles):
        raise UsageError("--item needs a title")
    items = _new_items(route, titles)
    cp = Checkpoint(route, start_stage(route), StageStatus.IN_PROGRESS, None, updated=now())
    state = TaskState(
        checkpoint=cp,
        items=items,
        evidence=[],
        decisions=[],
        failures=[],
        plan={},
        plan_file=PLAN,
        plan_digest="",
        milestones=("M1",) if route is Route.EPIC else (),
    )
    action = refresh(state)
    files = new_files(route, brief, items, cp)
    task_dir.mkdir(parents=True, exist_ok=True)
    with TaskLock(task_dir):
        create_task(task_dir, files)
    gates = [f"{i.id} is a human gate ({i.gate})" for i in items if i.gate]
    return Outcome(
        [
            f"task created on route {route}: {', '.join(sorted(files))}",
            *gates,
            f"next: {action.text}",
        ],
        action,
    )


def _new_items(route: Route, titles: list[str]) -> list[Item]:
    """T1, T2, ...: pending, gates inferred from the titles (shown in ledger.md)."""
    return [
        Item(
            id=f"T{n}",
            title=title,
            status=ItemStatus.PENDING,
            gate=infer_gate(title),
            milestone="M1" if route is Route.EPIC else None,
        )
        for n, title in enumerate(titles, start=1)
    ]


# -- reading ---------------------------------------------------------------------------


def load(task_dir: Path) -> tuple[TaskState, Action]:
    """The task and its next action, without changing anything."""
    state = load_task(task_dir).state
    return state, next_action(state)


# -- transitions -----------------------------------------------------------------------


def claim(task_dir: Path, item: str, assignee: str | None = None) -> Outcome:
    return _transition(
        task_dir, lambda t: transitions.claim(t.state, item, assignee or default_assignee())
    )


def record(
    task_dir: Path,
    item: str,
    evidence: list[str],
    run: str | None = None,
    cwd: Path | None = None,
    timeout_s: float = 600.0,
) -> Outcome:
    """Record each ``--evidence`` ref, and with ``run`` the host-attested result of running
    that command (through ``/bin/sh -c`` in ``cwd``)."""
    if not evidence and run is None:
        raise UsageError("give --evidence REF (repeatable) or --run CMD")
    base = (cwd or Path.cwd()).resolve()

    def change(task: Task) -> Change:
        known = {e.id for e in task.state.evidence}
        drafts = [parse_ref(ref, base, known) for ref in evidence]
        if run is not None:
            _check_recordable(task.state, item)
            drafts.append(_run_command(run, base, timeout_s))
        messages = [transitions.record(task.state, item, d, now()).message for d in drafts]
        failed = run is not None and not drafts[-1].passed
        return Change("\n".join(messages), stopped=failed)

    return _transition(task_dir, change)


def _check_recordable(state: TaskState, item_id: str) -> None:
    """Refuse before running the command, not after."""
    item = transitions.get_item(state, item_id)
    if item.status in (ItemStatus.PENDING, ItemStatus.DISCARDED):
        raise UsageError(f"{item_id} is {item.status}: claim it before running its check")


def _run_command(command: str, cwd: Path, timeout_s: float) -> Draft:
    spill = Path(tempfile.mkdtemp(prefix="tidegate-ledger-"))
    try:
        # ``--run CMD``: the user's own command, typed on the command line
        result = run_command(
            shell_argv(command), cwd, timeout_s, spill, label="check", clearance=Clearance.user()
        )
        output = result.stdout_file.read_bytes() + result.stderr_file.read_bytes()
        return attested_command(command, result.exit_code, output, result.combined_tail)
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def done(task_dir: Path, item: str) -> Outcome:
    return _transition(task_dir, lambda t: transitions.done(t.state, item))


def requeue(
    task_dir: Path,
    item: str,
    reason: str,
    failure: FailureType | None = None,
    decision: str | None = None,
) -> Outcome:
    return _transition(
        task_dir, lambda t: setbacks.requeue(t.state, item, reason, failure, decision)
    )


def block(task_dir: Path, item: str, reason: str, failure: FailureType | None = None) -> Outcome:
    return _transition(task_dir, lambda t: setbacks.block(t.state, item, reason, failure))


def discard(task_dir: Path, item: str, decision: str) -> Outcome:
    return _transition(task_dir, lambda t: setbacks.discard(t.state, item, decision))


def route(task_dir: Path, to: Route, reason: str) -> Outcome:
    def change(task: Task) -> Change:
        result = setbacks.change_route(task.state, to, reason)
        task.create = _files_for_route(task, to)
        if task.create:
            result = Change(result.message + f"; created {', '.join(sorted(task.create))}")
        return result

    return _transition(task_dir, change)


def _files_for_route(task: Task, to: Route) -> dict[str, str]:
    """The files ``to`` requires that the task does not have yet."""
    state, have = task.state, set(task.files)
    brief_text = _brief_text(task)
    create: dict[str, str] = {}
    for name in REQUIRED_FILES[to]:
        if name in have:
            continue
        if name == PLAN:
            create[name] = new_plan(brief_text, state.items)
        elif name == REVIEW:
            create[name] = new_review()
        elif name == ROADMAP:
            create[name] = new_roadmap(
                [("M1", brief_text.splitlines()[0][:80] if brief_text else "all")]
            )
        elif name == BRIEF:
            create[name] = f"# Brief\n\n{brief_text}\n"
    return create


def _brief_text(task: Task) -> str:
    if BRIEF in task.files:
        lines = task.files[BRIEF].lines
        body = lines[1:] if lines and lines[0].startswith("# ") else lines
        return "\n".join(body).strip()
    span = task.files[NOTES].section("Reader Summary")
    if span is None:
        return ""
    return "\n".join(task.files[NOTES].lines[span[0] + 1 : span[1]]).strip()


def ship(task_dir: Path, milestone: str | None = None, reason: str = "") -> Outcome:
    return _transition(task_dir, lambda t: ship_task(t.state, task_dir, milestone, reason))


def status_view(state: TaskState, action: Action) -> dict[str, object]:
    """Everything ``status`` shows, as plain data (what ``--json`` prints)."""
    cp = state.checkpoint
    budget = BUDGETS[state.route]
    return {
        "route": cp.route.value,
        "stage": cp.stage,
        "stage_status": cp.stage_status.value,
        "flow": list(FLOWS[state.route]),
        "resume_pointer": cp.resume_pointer,
        "next_action": {"kind": action.kind, "item": action.item, "text": action.text},
        "latest_evidence": cp.latest_evidence,
        "budget": {"retries_per_item": budget.per_item, "loop_iterations": budget.loop},
        "items": [
            {
                "id": i.id,
                "title": i.title,
                "status": i.status.value,
                "required": i.required,
                "gate": i.gate.value if i.gate else None,
                "milestone": i.milestone,
                "assignee": i.assignee,
                "retries": i.retries,
                "retry_budget": budget.per_item,
                "loop_used": loop_used(state, i),
                "blocker": i.blocker.render() if i.blocker else None,
                "evidence": i.evidence,
            }
            for i in state.items
        ],
        "re_execution_conditions": [c.text for c in cp.conditions if not c.closed],
        "promotion_triggers": [t.text for t in cp.triggers if not t.closed],
        "review": state.review.verdict.value if state.review else None,
    }
