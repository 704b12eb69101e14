"""The item state machine and the transitions that move items along it.

Legal edges (anything else is refused, naming the edges that are allowed)::

    pending      -> in_progress (claim), blocked (block), discarded (discard)
    in_progress  -> done (done), pending (requeue: a retry), blocked, discarded
    blocked      -> pending (requeue: the blocker is resolved), discarded
    done         -> pending (requeue: review asks for re-execution; a retry)
    discarded    -> nothing

Each transition changes the ``TaskState`` in memory and returns a ``Change``; the caller
refreshes the checkpoint and saves. Preconditions beyond the edge (evidence for ``done``,
a failing check for a verification retry, a person's decision for a human gate, the retry
budget, a changed condition) are checked here.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidegate.ledger.budgets import over_budget, unchanged_condition
from tidegate.ledger.errors import TransitionRefused
from tidegate.ledger.evidence import Draft
from tidegate.ledger.gates import infer_gate
from tidegate.ledger.model import (
    CHECK_KINDS,
    Blocker,
    BlockerKind,
    CheckEntry,
    Evidence,
    FailureType,
    Gate,
    Item,
    ItemStatus,
    LogEntry,
    Route,
    StageStatus,
    TaskState,
)
from tidegate.ledger.routes import final_stage, micro_gates, review_required

S = ItemStatus
EDGES: dict[ItemStatus, dict[ItemStatus, str]] = {
    S.PENDING: {S.IN_PROGRESS: "claim", S.BLOCKED: "block", S.DISCARDED: "discard"},
    S.IN_PROGRESS: {
        S.DONE: "done",
        S.PENDING: "requeue",
        S.BLOCKED: "block",
        S.DISCARDED: "discard",
    },
    S.BLOCKED: {S.PENDING: "requeue", S.DISCARDED: "discard"},
    S.DONE: {S.PENDING: "requeue"},
    S.DISCARDED: {},
}
RETRY_FAILURES = {
    S.IN_PROGRESS: (FailureType.VERIFICATION_FAILED, FailureType.AGENT_ERROR),
    S.DONE: (FailureType.REVIEW_BLOCKED,),
}


@dataclass(frozen=True)
class Change:
    message: str
    stopped: bool = False
    """The command ended somewhere other than asked (a gate or a budget blocked the item):
    a person should look. The CLI exits 1."""


def allowed_from(status: ItemStatus) -> str:
    edges = EDGES[status]
    if not edges:
        return f"nothing ({status} is final)"
    return ", ".join(f"{to} ({command})" for to, command in edges.items())


def check_edge(item: Item, to: ItemStatus) -> None:
    if to not in EDGES[item.status]:
        raise TransitionRefused(
            f"{item.id}: {item.status} -> {to} is not allowed; from {item.status}: "
            f"{allowed_from(item.status)}"
        )


def shipped(state: TaskState) -> bool:
    cp = state.checkpoint
    return cp.stage == final_stage(cp.route) and cp.stage_status is StageStatus.COMPLETED


def shipped_milestones(state: TaskState) -> set[str]:
    return {d.fields.get("milestone", "") for d in state.decisions if d.kind == "ship"}


def get_item(state: TaskState, item_id: str) -> Item:
    if shipped(state):
        raise TransitionRefused("the task is shipped; its ledger is closed")
    item = state.item(item_id)
    if item is None:
        known = ", ".join(i.id for i in state.items) or "none"
        raise TransitionRefused(f"no item {item_id!r} in ledger.md (items: {known})")
    if state.route is Route.EPIC and item.milestone in shipped_milestones(state):
        raise TransitionRefused(
            f"{item.id} belongs to milestone {item.milestone}, which is shipped"
        )
    return item


def gate_of(state: TaskState, item: Item) -> Gate | None:
    return item.gate if state.has_gate_column else infer_gate(item.title)


def has_decision(state: TaskState, item: Item) -> bool:
    return any(d.kind == "user_decision" and d.get("item") == item.id for d in state.decisions)


def append_log(entries: list[LogEntry], kind: str, **fields: str) -> LogEntry:
    entry = LogEntry(
        number=max((e.number for e in entries), default=0) + 1,
        kind=kind,
        fields=fields,
        text=fields.get("reason") or fields.get("decision") or "",
    )
    entries.append(entry)
    return entry


def _fail(state: TaskState, item: Item, kind: FailureType, outcome: str, reason: str) -> LogEntry:
    return append_log(
        state.failures,
        kind.value,
        item=item.id,
        attempt=str(item.attempt),
        outcome=outcome,
        plan=state.plan_digest_of(item.id)[:12],
        reason=reason,
    )


def add_trigger(state: TaskState, text: str) -> None:
    if all(t.text != text for t in state.checkpoint.triggers):
        state.checkpoint.triggers.append(CheckEntry(text))


def _need(text: str | None, what: str) -> str:
    if text is None or not text.strip():
        raise TransitionRefused(f"{what} is required")
    return " ".join(text.split())


# -- claim -----------------------------------------------------------------------------


def claim(state: TaskState, item_id: str, assignee: str) -> Change:
    item = get_item(state, item_id)
    check_edge(item, S.IN_PROGRESS)
    waiting = [
        d for d in _depends(state, item) if (dep := state.item(d)) and dep.status is not S.DONE
    ]
    if waiting:
        raise TransitionRefused(f"{item.id} depends on {', '.join(waiting)}, not done yet")
    gate = gate_of(state, item)
    if gate is not None and not has_decision(state, item):
        text = (
            f"human gate ({gate}): a person must decide before {item.id} runs "
            f"(ledger requeue {item.id} --reason ... --decision ...)"
        )
        _fail(state, item, FailureType.NEEDS_USER_DECISION, "blocked", text)
        item.status, item.blocker = S.BLOCKED, Blocker(BlockerKind.NEEDS_USER_DECISION, text)
        state.checkpoint.resume_pointer = item.id
        if state.route is Route.MEDIUM:
            add_trigger(state, f"medium->high: external side effects ({item.id}: {gate})")
        return Change(f"{item.id} blocked: {text}", stopped=True)
    item.status, item.assignee = S.IN_PROGRESS, _need(assignee, "an assignee")
    state.checkpoint.resume_pointer = item.id
    return Change(f"{item.id} claimed by {item.assignee} (attempt {item.attempt})")


def _depends(state: TaskState, item: Item) -> tuple[str, ...]:
    section = state.plan.get(item.id)
    return section.depends_on if section else ()


def dependencies_met(state: TaskState, item: Item) -> bool:
    return all(
        (dep := state.item(d)) is None or dep.status in (S.DONE, S.DISCARDED)
        for d in _depends(state, item)
    )


# -- record / done ---------------------------------------------------------------------


def record(state: TaskState, item_id: str, draft: Draft, recorded_at: str) -> Change:
    item = get_item(state, item_id)
    if item.status in (S.PENDING, S.DISCARDED):
        raise TransitionRefused(
            f"{item.id} is {item.status}: evidence is recorded for claimed, blocked or done items"
            + (f" (claim {item.id} first)" if item.status is S.PENDING else "")
        )
    ev = Evidence(
        id=f"E-{max((e.number for e in state.evidence), default=0) + 1}",
        item=item.id,
        attempt=item.attempt,
        kind=draft.kind,
        passed=draft.passed,
        ref=draft.ref,
        fingerprint=draft.fingerprint,
        detail=(f"- recorded: {recorded_at}", *draft.detail),
    )
    earlier = next((e for e in state.evidence_of(item.id) if e.fingerprint == ev.fingerprint), None)
    state.evidence.append(ev)
    item.evidence.append(ev.id)
    state.checkpoint.latest_evidence = ev.id
    result = "pass" if ev.passed else "fail"
    message = f"{ev.id} recorded for {item.id} attempt {item.attempt} ({ev.kind}, {result})"
    if earlier is not None:
        message += f"; it is the same evidence as {earlier.id}, so it does not count as new"
    return Change(message)


def counting_evidence(state: TaskState, item: Item) -> list[Evidence]:
    """Evidence of the current attempt that no earlier record of the item already showed."""
    seen: set[str] = set()
    found = []
    for e in state.evidence_of(item.id):
        if e.attempt == item.attempt and e.fingerprint not in seen:
            found.append(e)
        seen.add(e.fingerprint)
    return found


def done_gaps(state: TaskState, item: Item) -> list[str]:
    """What ``item`` lacks to be done with accepted evidence (empty: nothing)."""
    current = counting_evidence(state, item)
    passing = [e for e in current if e.passed]
    checks = [e for e in state.evidence_of(item.id, item.attempt) if e.kind in CHECK_KINDS]
    gaps = []
    if not passing:
        repeats = len(state.evidence_of(item.id, item.attempt)) - len(current)
        gaps.append(
            f"{item.id} has no accepted passing evidence for attempt {item.attempt}"
            + (
                f" ({repeats} record(s) repeat earlier evidence and do not count)"
                if repeats
                else ""
            )
        )
    if checks and not checks[-1].passed:
        gaps.append(f"the latest check of {item.id} ({checks[-1].id}) failed")
    if micro_gates(state.route) and not any(e.kind in CHECK_KINDS for e in passing):
        gaps.append(
            f"route {state.route} needs a passing executed check (command or run) before done"
        )
    return gaps


def done(state: TaskState, item_id: str) -> Change:
    item = get_item(state, item_id)
    check_edge(item, S.DONE)
    gaps = done_gaps(state, item)
    if gaps:
        raise TransitionRefused("; ".join(gaps))
    item.status = S.DONE
    for cond in state.checkpoint.conditions:
        if not cond.closed and cond.text.split(":", 1)[0].strip() == item.id:
            cond.closed = True
    if state.checkpoint.resume_pointer == item.id:
        state.checkpoint.resume_pointer = None
    return Change(
        f"{item.id} done with {', '.join(e.id for e in counting_evidence(state, item) if e.passed)}"
    )


# -- requeue / block / discard ---------------------------------------------------------


def requeue(
    state: TaskState,
    item_id: str,
    reason: str,
    failure: FailureType | None = None,
    decision: str | None = None,
) -> Change:
    item = get_item(state, item_id)
    check_edge(item, S.PENDING)
    reason = _need(reason, "--reason")
    if item.status is S.BLOCKED:
        return _resolve(state, item, reason, decision)
    failure = _retry_failure(state, item, failure)
    blind = unchanged_condition(state, item)
    if blind:
        raise TransitionRefused(blind)
    budget = over_budget(state, item)
    if budget:
        return _exhausted(state, item, failure, reason, budget)
    _fail(state, item, failure, "requeued", reason)
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
    _fail(state, item, failure, "blocked", text)
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
        made = _need(decision, f"{item.id} waits for a person: --decision (the decision made)")
        gate = gate_of(state, item)
        fields = {"item": item.id, **({"gate": gate.value} if gate else {})}
        append_log(state.decisions, "user_decision", **fields, decision=made)
    elif kind is BlockerKind.SCOPE_DRIFT:
        made = _need(decision, f"{item.id} drifted out of scope: --decision (the revised scope)")
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
        _fail(state, item, kind_failed, "requeued", reason)
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
    reason = _need(reason, "--reason (for needs_user_decision: the exact decision needed)")
    _fail(state, item, failure, "blocked", reason)
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
    made = _need(decision, "--decision (why the item leaves the scope)")
    append_log(state.decisions, "discard", item=item.id, decision=made)
    item.status, item.blocker = S.DISCARDED, None
    if state.checkpoint.resume_pointer == item.id:
        state.checkpoint.resume_pointer = None
    return Change(f"{item.id} discarded: {made}")


# -- route -----------------------------------------------------------------------------


def change_route(state: TaskState, to: Route, reason: str) -> Change:
    if shipped(state):
        raise TransitionRefused("the task is shipped; its ledger is closed")
    old = state.route
    if to is old:
        raise TransitionRefused(f"the route is already {old}")
    reason = _need(reason, "--reason (the evidence-based reason)")
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
