"""Ship: allowed only when every required item is done with accepted evidence, nothing is
waiting for re-execution or promotion, and (on medium and above) review approved it.

``ship_gaps`` names everything missing; ``ship`` records the decision and the summary of
the real evidence each item shipped with.
"""

from __future__ import annotations

from pathlib import Path

from tidegate.ledger.errors import TransitionRefused
from tidegate.ledger.evidence import normalised_ref
from tidegate.ledger.model import ItemStatus, Route, StageStatus, TaskState, Verdict
from tidegate.ledger.routes import final_stage, review_required
from tidegate.ledger.transitions import (
    Change,
    append_log,
    done_gaps,
    gate_of,
    has_decision,
    shipped,
    shipped_milestones,
)


def _scope(state: TaskState, milestone: str | None) -> list[str]:
    if state.route is Route.EPIC:
        if milestone is None:
            raise TransitionRefused("an epic ships per milestone: give --milestone")
        known = set(state.milestones) | {i.milestone for i in state.items if i.milestone}
        if milestone not in known:
            raise TransitionRefused(
                f"no milestone {milestone!r} (roadmap.md: {', '.join(sorted(known)) or 'none'})"
            )
        if milestone in shipped_milestones(state):
            raise TransitionRefused(f"milestone {milestone} is already shipped")
        return [i.id for i in state.items if i.milestone == milestone]
    if milestone is not None:
        raise TransitionRefused(f"--milestone is for the epic route; this task is {state.route}")
    return [i.id for i in state.items]


def ship_gaps(state: TaskState, task_dir: Path, milestone: str | None = None) -> list[str]:
    """Everything that stops a ship, one line each (empty: ready)."""
    if shipped(state):
        return ["the task is already shipped"]
    gaps: list[str] = []
    for item_id in _scope(state, milestone):
        item = state.item(item_id)
        assert item is not None
        if item.status is ItemStatus.DISCARDED or not item.required:
            continue
        if item.status is not ItemStatus.DONE:
            why = f" ({item.blocker.render()})" if item.blocker else ""
            gaps.append(f"{item.id} is {item.status}{why}")
            continue
        if not item.evidence:
            gaps.append(f"{item.id} is done but has no evidence ref")
            continue
        gaps += [g.replace("for attempt", "in attempt") for g in done_gaps(state, item)]
        gate = gate_of(state, item)
        if gate is not None and not has_decision(state, item):
            gaps.append(f"{item.id} is a human gate ({gate}) with no recorded decision")
    gaps += [
        f"re-execution condition open: {c.text}"
        for c in state.checkpoint.conditions
        if not c.closed
    ]
    gaps += [f"promotion trigger open: {t.text}" for t in state.checkpoint.triggers if not t.closed]
    if review_required(state.route):
        gaps += _review_gaps(state, task_dir)
    return gaps


def _review_gaps(state: TaskState, task_dir: Path) -> list[str]:
    review = state.review
    if review is None:
        return ["review-report.md is missing"]
    if review.verdict is not Verdict.APPROVED:
        return [
            f"review-report.md:{review.verdict_line}: verdict is {review.verdict}; ship needs approved"
        ]
    known = {e.id for e in state.evidence}
    if not review.refs:
        return ["review-report.md: the approval names no evidence refs (Refs: E-N, URLs or paths)"]
    bad = [r for r in review.refs if not normalised_ref(r, task_dir, known)]
    return [f"review-report.md: ref {r!r} is not an evidence id, URL or existing path" for r in bad]


def ship(state: TaskState, task_dir: Path, milestone: str | None, reason: str) -> Change:
    gaps = ship_gaps(state, task_dir, milestone)
    if gaps:
        return Change("ship refused:\n" + "\n".join(f"  - {g}" for g in gaps), stopped=True)
    scope = _scope(state, milestone)
    fields = {"milestone": milestone} if milestone else {}
    entry = append_log(
        state.decisions, "ship", **fields, reason=reason or "all required gates pass"
    )
    state.ship_summary = _summary(state, scope, milestone, entry.number)
    state.checkpoint.resume_pointer = None
    everything = state.route is not Route.EPIC or set(state.milestones) <= shipped_milestones(state)
    if everything:  # else the refresh moves the checkpoint on to the next milestone
        state.checkpoint.stage = final_stage(state.route)
        state.checkpoint.stage_status = StageStatus.COMPLETED
    what = f"milestone {milestone}" if milestone else "task"
    return Change(f"{what} shipped (D-{entry.number}); summary in implementation-notes.md")


def _summary(state: TaskState, scope: list[str], milestone: str | None, number: int) -> list[str]:
    lines = [
        f"Shipped{' milestone ' + milestone if milestone else ''} (D-{number}) with this evidence:",
        "",
    ]
    evidence = {e.id: e for e in state.evidence}
    for item_id in scope:
        item = state.item(item_id)
        assert item is not None
        if item.status is ItemStatus.DISCARDED:
            lines.append(f"- {item.id} {item.title}: discarded")
            continue
        refs = [
            evidence[r]
            for r in item.evidence
            if r in evidence and evidence[r].attempt == item.attempt
        ]
        shown = "; ".join(f"{e.id} {e.ref}" for e in refs) or "none"
        lines.append(f"- {item.id} {item.title}: {shown}")
    if state.route in (Route.HIGH, Route.EPIC):
        lines += [
            "",
            f"Long-run extract: {len(state.failures)} failure(s), {len(state.decisions)} "
            "decision(s) recorded above; carry the lessons into the next task.",
        ]
    return lines
