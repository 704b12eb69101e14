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
budget, a changed condition) are checked by the transition. claim, record and done are
here; requeue, block, discard and the route change are in ``tidegate.ledger.setbacks``.
"""

from __future__ import annotations

import msgspec

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
from tidegate.ledger.routes import final_stage, micro_gates

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


class Change(msgspec.Struct, frozen=True):
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


def log_failure(
    state: TaskState, item: Item, kind: FailureType, outcome: str, reason: str
) -> LogEntry:
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


def need_text(text: str | None, what: str) -> str:
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
        log_failure(state, item, FailureType.NEEDS_USER_DECISION, "blocked", text)
        item.status, item.blocker = S.BLOCKED, Blocker(BlockerKind.NEEDS_USER_DECISION, text)
        state.checkpoint.resume_pointer = item.id
        if state.route is Route.MEDIUM:
            add_trigger(state, f"medium->high: external side effects ({item.id}: {gate})")
        return Change(f"{item.id} blocked: {text}", stopped=True)
    item.status, item.assignee = S.IN_PROGRESS, need_text(assignee, "an assignee")
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
