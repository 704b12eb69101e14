"""The transitions that hold an item back or change the task's course: requeue (a retry,
or a blocker resolved), block, discard, and the route change. The state machine and the
forward transitions are in ``tidegate.ledger.transitions``."""

from __future__ import annotations

from tidegate.ledger.budgets import over_budget, unchanged_condition
from tidegate.ledger.errors import TransitionRefused
from tidegate.ledger.model import (
    CHECK_KINDS,
    Blocker,
    BlockerKind,
    CheckEntry,
    FailureType,
    Item,
    Route,
    TaskState,
)
from tidegate.ledger.routes import review_required
from tidegate.ledger.transitions import (
    Change,
    S,
    add_trigger,
    append_log,
    check_edge,
    gate_of,
    get_item,
    log_failure,
    need_text,
    shipped,
)

RETRY_FAILURES = {
    S.IN_PROGRESS: (FailureType.VERIFICATION_FAILED, FailureType.AGENT_ERROR),
    S.DONE: (FailureType.REVIEW_BLOCKED,),
}


def requeue(
    state: TaskState,
    item_id: str,
    reason: str,
    failure: FailureType | None = None,
    decision: str | None = None,
) -> Change:
    item = get_item(state, item_id)
    check_edge(item, S.PENDING)
    reason = need_text(reason, "--reason")
    if item.status is S.BLOCKED:
        return _resolve(state, item, reason, decision)
    failure = _retry_failure(state, item, failure)
    blind = unchanged_condition(state, item)
    if blind:
        raise TransitionRefused(blind)
    budget = over_budget(state, item)
    if budget:
        return _exhausted(state, item, failure, reason, budget)
    log_failure(state, item, failure, "requeued", reason)
    if failure is FailureType.REVIEW_BLOCKED:
        state.checkpoint.conditions.append(CheckEntry(f"{item.id}: {reason}"))
    item.retries += 1
    item.status, item.assignee = S.PENDING, None
    state.checkpoint.resume_pointer = item.id
    return Change(
        f"{item.id} requeued ({failure}); retry {item.retries}, attempt {item.attempt} next"
    )


def _retry_failure(state: TaskState, item: Item, failure: FailureType | None) -> FailureType:
    """The failure type of a retry of ``item``, checked against what that type requires."""
    allowed = RETRY_FAILURES[item.status]
    failure = failure or allowed[0]
    if failure not in allowed:
        use_block = failure in (FailureType.SCOPE_DRIFT, FailureType.NEEDS_USER_DECISION)
        raise TransitionRefused(
            f"{failure} is not a retry of a {item.status} item (allowed: "
            f"{', '.join(allowed)}){'; use `block`' if use_block else ''}"
        )
    if failure is FailureType.VERIFICATION_FAILED:
        checks = [e for e in state.evidence_of(item.id, item.attempt) if e.kind in CHECK_KINDS]
        if not any(not e.passed for e in checks):
            raise TransitionRefused(
                f"verification_failed needs the failing check recorded first: "
                f"ledger record ... {item.id} --evidence 'command: CMD (exit N)' (or --run CMD)"
            )
    return failure


def _exhausted(
    state: TaskState, item: Item, failure: FailureType, reason: str, budget: str
) -> Change:
    text = f"{budget}; last failure ({failure}): {reason}"
    log_failure(state, item, failure, "blocked", text)
    item.status, item.blocker = S.BLOCKED, Blocker(BlockerKind.BUDGET_EXHAUSTED, text)
    state.checkpoint.resume_pointer = item.id
    if state.route is Route.SMALL:
        add_trigger(state, f"small->medium: more than one retry is needed ({item.id})")
    if state.route is Route.HIGH and "loop iterations" in budget:
        add_trigger(state, f"high->epic: repeated failures exhaust the loop budget ({item.id})")
    return Change(f"{item.id} blocked: {text}", stopped=True)


def _resolve(state: TaskState, item: Item, reason: str, decision: str | None) -> Change:
    """blocked -> pending: the blocker is resolved; what counts depends on its kind."""
    assert item.blocker is not None
    kind = item.blocker.kind
    if kind is BlockerKind.NEEDS_USER_DECISION:
        made = need_text(decision, f"{item.id} waits for a person: --decision (the decision made)")
        gate = gate_of(state, item)
        fields = {"item": item.id, **({"gate": gate.value} if gate else {})}
        append_log(state.decisions, "user_decision", **fields, decision=made)
    elif kind is BlockerKind.SCOPE_DRIFT:
        made = need_text(
            decision, f"{item.id} drifted out of scope: --decision (the revised scope)"
        )
        last = [f for f in state.failures if f.get("item") == item.id and f.kind == "scope_drift"]
        if last and last[-1].get("plan") == state.plan_digest_of(item.id)[:12]:
            raise TransitionRefused(
                f"{item.id} drifted out of scope and its plan is unchanged: revise its section "
                f"in {state.plan_file} (or discard the item)"
            )
        append_log(state.decisions, "scope_revision", item=item.id, decision=made)
    elif kind is BlockerKind.BUDGET_EXHAUSTED:
        budget = over_budget(state, item)
        if budget:
            raise TransitionRefused(
                f"{budget}: promote the route (ledger route --to ...) or discard {item.id}"
            )
        blind = unchanged_condition(state, item)
        if blind:
            raise TransitionRefused(blind)
        blocks = [
            f for f in state.failures if f.get("item") == item.id and f.get("outcome") == "blocked"
        ]
        kind_failed = FailureType(blocks[-1].kind) if blocks else FailureType.VERIFICATION_FAILED
        log_failure(state, item, kind_failed, "requeued", reason)
        item.retries += 1
    else:
        append_log(state.decisions, "unblock", item=item.id, blocker=kind.value, reason=reason)
    item.status, item.blocker, item.assignee = S.PENDING, None, None
    state.checkpoint.resume_pointer = item.id
    return Change(f"{item.id} unblocked ({kind} resolved): {reason}")


def block(
    state: TaskState, item_id: str, reason: str, failure: FailureType | None = None
) -> Change:
    item = get_item(state, item_id)
    check_edge(item, S.BLOCKED)
    failure = failure or FailureType.NEEDS_USER_DECISION
    reason = need_text(reason, "--reason (for needs_user_decision: the exact decision needed)")
    log_failure(state, item, failure, "blocked", reason)
    item.status, item.blocker = S.BLOCKED, Blocker(BlockerKind(failure.value), reason)
    state.checkpoint.resume_pointer = item.id
    if failure is FailureType.SCOPE_DRIFT and state.route is Route.SMALL:
        add_trigger(state, f"small->medium: touched scope grows beyond the brief ({item.id})")
    blocks = [f for f in state.failures if f.get("outcome") == "blocked"]
    if state.route is Route.HIGH and len(blocks) >= 2:
        add_trigger(
            state,
            f"high->epic: repeated blockers ({', '.join(sorted({b.get('item') or '' for b in blocks}))}) "
            "suggest a missing product decision",
        )
    return Change(f"{item.id} blocked ({failure}): {reason}")


def discard(state: TaskState, item_id: str, decision: str) -> Change:
    item = get_item(state, item_id)
    check_edge(item, S.DISCARDED)
    made = need_text(decision, "--decision (why the item leaves the scope)")
    append_log(state.decisions, "discard", item=item.id, decision=made)
    item.status, item.blocker = S.DISCARDED, None
    if state.checkpoint.resume_pointer == item.id:
        state.checkpoint.resume_pointer = None
    return Change(f"{item.id} discarded: {made}")


def change_route(state: TaskState, to: Route, reason: str) -> Change:
    if shipped(state):
        raise TransitionRefused("the task is shipped; its ledger is closed")
    old = state.route
    if to is old:
        raise TransitionRefused(f"the route is already {old}")
    reason = need_text(reason, "--reason (the evidence-based reason)")
    entry = append_log(
        state.decisions, "route_change", **{"from": old.value, "to": to.value}, reason=reason
    )
    for trigger in state.checkpoint.triggers:
        trigger.closed = True
    state.checkpoint.route = to
    kind = "promoted" if _rank(to) > _rank(old) else "demoted"
    note = "; review now gates ship" if review_required(to) and not review_required(old) else ""
    return Change(f"route {kind} {old} -> {to} (D-{entry.number}){note}")


def _rank(route: Route) -> int:
    return list(Route).index(route)
