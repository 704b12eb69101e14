"""Retry budgets, and the rule that a retry needs a changed condition.

A retry is a requeue after a failure (``in_progress -> pending`` or, after review,
``done -> pending``); the item's Retries column counts them. Budgets per route:

=======  ===============  ====================================================
route    retries per item loop budget (retries summed over ...)
=======  ===============  ====================================================
small    1                -
medium   2                -
high     2                3, over the whole task
epic     2                3, over each milestone (the budget is the milestone's)
=======  ===============  ====================================================

A retry needs a changed condition: after a previous retry of the same item, either its plan
text changed or its current attempt recorded evidence never seen in an earlier attempt.
Evidence is compared by fingerprint, so recording the same result again does not count.
"""

from __future__ import annotations

import msgspec

from tidegate.ledger.model import Item, ItemStatus, LogEntry, Route, TaskState


class Budget(msgspec.Struct, frozen=True):
    per_item: int
    loop: int | None


BUDGETS: dict[Route, Budget] = {
    Route.SMALL: Budget(1, None),
    Route.MEDIUM: Budget(2, None),
    Route.HIGH: Budget(2, 3),
    Route.EPIC: Budget(2, 3),
}


def loop_scope(state: TaskState, item: Item) -> list[Item]:
    """The items whose retries share the loop budget: the milestone's on epic, else all."""
    if state.route is Route.EPIC:
        return [i for i in state.items if i.milestone == item.milestone]
    return state.items


def loop_used(state: TaskState, item: Item) -> int:
    return sum(i.retries for i in loop_scope(state, item) if i.status is not ItemStatus.DISCARDED)


def over_budget(state: TaskState, item: Item, extra: int = 1) -> str | None:
    """Why ``extra`` more retries of ``item`` would exceed the route's budget (None: they fit)."""
    budget = BUDGETS[state.route]
    if item.retries + extra > budget.per_item:
        return (
            f"{item.id} has used {item.retries} of {budget.per_item} "
            f"retr{'y' if budget.per_item == 1 else 'ies'} allowed on route {state.route}"
        )
    if budget.loop is not None and loop_used(state, item) + extra > budget.loop:
        scope = f"milestone {item.milestone}" if state.route is Route.EPIC else "the task"
        return (
            f"{scope} has used {loop_used(state, item)} of {budget.loop} loop iterations "
            f"allowed on route {state.route}"
        )
    return None


def last_retry(state: TaskState, item: Item) -> LogEntry | None:
    retries = [
        f for f in state.failures if f.get("item") == item.id and f.get("outcome") == "requeued"
    ]
    return retries[-1] if retries else None


def new_evidence(state: TaskState, item: Item) -> list[str]:
    """Evidence of the current attempt whose fingerprint no earlier attempt recorded."""
    seen = {e.fingerprint for e in state.evidence_of(item.id) if e.attempt < item.attempt}
    return [e.id for e in state.evidence_of(item.id, item.attempt) if e.fingerprint not in seen]


def unchanged_condition(state: TaskState, item: Item) -> str | None:
    """Why another retry of ``item`` would be a blind rerun (None: the condition changed,
    or this is its first retry)."""
    previous = last_retry(state, item)
    if previous is None:
        return None
    if previous.get("plan") != state.plan_digest_of(item.id)[:12]:
        return None
    if new_evidence(state, item):
        return None
    return (
        f"nothing changed since F-{previous.number}: the plan of {item.id} is the same and "
        f"attempt {item.attempt} recorded no new evidence (the same evidence twice does not "
        "count); change the code or the plan and record the new result, or block the item"
    )
