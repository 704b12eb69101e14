"""The next action, by the loop contract's minimal runtime algorithm::

    read the checkpoint; take the item its resume pointer names
    no pointer (or the item is finished): resume an in_progress item, else take the
        first pending item whose dependencies are done
    item blocked: report the blocker and stop
    item pending: claim it (a human gate stops for a person instead)
    item in_progress: continue it (record evidence, then done or requeue)
    nothing left to run: promotion triggers, then review (if the route needs it), then ship

``refresh`` writes the result into the checkpoint together with the stage it implies.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from tidegate.ledger.model import Item, ItemStatus, Route, StageStatus, TaskState, Verdict
from tidegate.ledger.routes import (
    FLOWS,
    execute_stage,
    final_stage,
    review_required,
    ship_stage,
    start_stage,
)
from tidegate.ledger.transitions import (
    add_trigger,
    dependencies_met,
    gate_of,
    has_decision,
    shipped,
    shipped_milestones,
)

ActionKind = Literal[
    "claim", "continue", "blocked", "decide", "promote", "review", "ship", "shipped"
]
STOPS = frozenset({"blocked", "decide", "promote", "review", "shipped"})
"""Actions that need a person (or are the end): ``ledger run`` stops at them."""


class Action(msgspec.Struct, frozen=True):
    kind: ActionKind
    item: str | None
    text: str
    milestone: str | None = None

    @property
    def stops(self) -> bool:
        return self.kind in STOPS


def next_action(state: TaskState) -> Action:
    if shipped(state):
        return Action("shipped", None, "shipped: nothing left to do")
    item = _resume_item(state)
    if item is not None:
        return _item_action(state, item)
    return _task_action(state)


def _open(state: TaskState) -> list[Item]:
    """Items still in the loop: not discarded, not in a shipped milestone."""
    done_ms = shipped_milestones(state) if state.route is Route.EPIC else set()
    return [
        i
        for i in state.items
        if i.status is not ItemStatus.DISCARDED and i.milestone not in done_ms
    ]


def _resume_item(state: TaskState) -> Item | None:
    items = _open(state)
    pointer = state.checkpoint.resume_pointer
    active = (ItemStatus.PENDING, ItemStatus.IN_PROGRESS, ItemStatus.BLOCKED)
    named = next((i for i in items if i.id == pointer and i.status in active), None)
    if named is not None:
        return named
    claimed = next((i for i in items if i.status is ItemStatus.IN_PROGRESS), None)
    if claimed is not None:
        return claimed  # a crash between the ledger and the checkpoint write lands here
    return next(
        (i for i in items if i.status is ItemStatus.PENDING and dependencies_met(state, i)), None
    )


def _item_action(state: TaskState, item: Item) -> Action:
    if item.status is ItemStatus.BLOCKED:
        assert item.blocker is not None
        return Action(
            "blocked",
            item.id,
            f"{item.id} is blocked ({item.blocker.render()}); {_resolution(item)}",
        )
    if item.status is ItemStatus.PENDING:
        gate = gate_of(state, item)
        if gate is not None and not has_decision(state, item):
            return Action(
                "decide",
                item.id,
                f"{item.id} is a human gate ({gate}): a person must decide before it runs; "
                f"claiming it blocks it for that decision",
            )
        return Action("claim", item.id, f"claim {item.id}: {item.title}")
    return Action(
        "continue",
        item.id,
        f"continue {item.id} (attempt {item.attempt}, {item.assignee}): record evidence, "
        "then done or requeue",
    )


def _resolution(item: Item) -> str:
    assert item.blocker is not None
    kind = item.blocker.kind.value
    if kind == "needs_user_decision":
        return f"a person decides: ledger requeue {item.id} --reason ... --decision ..."
    if kind == "scope_drift":
        return f"revise the plan and requeue {item.id} with --decision, or discard it"
    if kind == "budget_exhausted":
        return f"promote the route (ledger route) then requeue {item.id}, or discard it"
    return f"resolve it, then ledger requeue {item.id} --reason ..."


def _task_action(state: TaskState) -> Action:
    items = _open(state)
    waiting = [i for i in items if i.required and i.status is not ItemStatus.DONE]
    if waiting:
        first = waiting[0]
        return Action(
            "blocked",
            first.id,
            f"{first.id} is {first.status} and waits on its "
            f"dependencies or a decision; nothing can run",
        )
    open_triggers = [t for t in state.checkpoint.triggers if not t.closed]
    if open_triggers:
        return Action(
            "promote",
            None,
            f"promotion trigger: {open_triggers[0].text}; change the route "
            "(ledger route --to ROUTE --reason ...) or close the trigger with a reason",
        )
    if review_required(state.route) and state.review is not None:
        verdict = state.review.verdict
        if verdict is Verdict.CHANGES_REQUESTED:
            return Action(
                "review",
                None,
                "review requested changes: requeue the affected items "
                "(ledger requeue ITEM --reason ...)",
            )
        if verdict is not Verdict.APPROVED:
            return Action(
                "review",
                None,
                "review: every required item is done; record the "
                "verdict and its evidence refs in review-report.md",
            )
    milestone = _next_milestone(state)
    if state.route is Route.EPIC:
        return Action(
            "ship",
            None,
            f"ship milestone {milestone}: ledger ship --milestone {milestone}",
            milestone,
        )
    return Action("ship", None, "ship: every required item is done with evidence (ledger ship)")


def _next_milestone(state: TaskState) -> str | None:
    done = shipped_milestones(state)
    order = list(state.milestones) + [i.milestone for i in state.items if i.milestone]
    return next((m for m in order if m not in done), None)


# -- the checkpoint --------------------------------------------------------------------


def derive_stage(state: TaskState, action: Action) -> tuple[str, StageStatus]:
    route = state.route
    if action.kind == "shipped":
        return final_stage(route), StageStatus.COMPLETED
    work = execute_stage(route)
    if any(not c.closed for c in state.checkpoint.conditions) and "re_execute" in FLOWS[route]:
        work = "re_execute"
    if action.kind in ("blocked", "decide", "promote"):
        return work, StageStatus.BLOCKED
    if action.kind == "continue":
        item = state.item(action.item or "")
        started = item is not None and bool(state.evidence_of(item.id, item.attempt))
        if route is Route.SMALL and started:
            return "self_verify", StageStatus.IN_PROGRESS
        return work, StageStatus.IN_PROGRESS
    if action.kind == "claim":
        fresh = not state.evidence and all(
            i.status is ItemStatus.PENDING and i.retries == 0 for i in state.items
        )
        return (start_stage(route) if fresh else work), StageStatus.IN_PROGRESS
    if action.kind == "review":
        blocked = state.review is not None and state.review.verdict is Verdict.BLOCKED
        return "review", StageStatus.BLOCKED if blocked else StageStatus.IN_PROGRESS
    return ship_stage(route), StageStatus.IN_PROGRESS


def detect_triggers(state: TaskState) -> None:
    """Promotion triggers that the files themselves show (others come from transitions)."""
    with_deps = [s for s in state.plan.values() if s.depends_on]
    if state.route is Route.MEDIUM and len(state.items) > 3 and with_deps:
        add_trigger(state, "medium->high: more than 3 plan items with dependencies")


def refresh(state: TaskState) -> Action:
    """Recompute the next action and the stage, and put them into the checkpoint."""
    detect_triggers(state)
    action = next_action(state)
    state.checkpoint.stage, state.checkpoint.stage_status = derive_stage(state, action)
    state.checkpoint.next_action = action.text
    return action
