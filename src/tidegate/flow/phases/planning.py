"""PLAN and PATCH: ask the planner (read-only) for a plan and a proposed change."""

from __future__ import annotations

from tidegate.errors import ErrorClass, PhaseError
from tidegate.flow.state import RunState
from tidegate.records.proposal import PlanRequest


class RepeatedProposal(PhaseError):
    """PATCH proposed exactly what attempt ``earlier`` proposed, and that attempt failed:
    the run stops here, and the earlier failure is the one that decided it."""

    def __init__(self, earlier: int) -> None:
        super().__init__(
            ErrorClass.LOGIC,
            f"the proposal repeats attempt {earlier}, which failed; stopping instead of retrying",
            retryable=False,
        )
        self.earlier = earlier


def _request(state: RunState) -> PlanRequest:
    return PlanRequest(
        objective=state.request.objective,
        mode=state.request.mode.value,
        attempt=state.attempt.number,
        feedback=state.last_feedback,
        findings=tuple(state.findings),
        focus_files=state.focus_files,
    )


def plan(state: RunState) -> str:
    state.attempt.plan = state.planner.plan(_request(state), state.tree)
    return state.attempt.plan.summary.splitlines()[0][:120] if state.attempt.plan.summary else ""


def patch(state: RunState) -> str:
    assert state.attempt.plan is not None
    proposal = state.planner.patch(_request(state), state.attempt.plan, state.tree)
    if proposal.is_empty:
        raise PhaseError(ErrorClass.LOGIC, "the planner proposed no change", retryable=False)
    fingerprint = proposal.fingerprint()
    if fingerprint in state.failed_proposals:
        raise RepeatedProposal(state.failed_proposals[fingerprint])
    state.attempt.proposal = proposal
    parts = []
    if proposal.diff:
        parts.append("a unified diff")
    if proposal.search_replace:
        parts.append("SEARCH/REPLACE blocks")
    if proposal.edits:
        parts.append(f"{len(proposal.edits)} whole-file edit(s)")
    return "proposed " + " and ".join(parts)
