"""The engine's resumable state: what a checkpoint holds about a run.

A checkpoint's ``state`` (format ``tidegate.engine/1``) records:

* ``inputs``: what a resume must find unchanged -- the workspace fingerprint (with the
  HEAD, tree and staged-entries digests that make it up), T0, the digests of the request,
  the planner's inputs and the repository configuration, and the model-side hashes
  (prompt, system prompt, task contract, registry, effect policy, model identity and
  capability: None for engine runs, which have no model; the fields are kept so that a
  model-driven run fills them);
* ``budgets`` and ``counters`` (attempts, failed proposals, the last failure condition);
* ``attempt``: the current attempt's finished phases, its failure, plan, proposal,
  candidate tree and verification;
* ``run``: everything the final report is built from (events, feedback, notes, findings,
  applied files) and ``tool_calls`` (completed tool calls with their effects, so an agent
  loop never executes a recorded write twice).

Inputs that can hold repository content -- the request (its objective) and proposals --
are kept as git blobs under ``refs/tidegate/runs/<run-id>/`` in the user's own object
store, where that content already lives; the state root keeps only their ids and SHA-256.
Everything else is redacted by the store. Floats are stored as ``{"$float": repr}`` so
that the JSON stays canonical.

The inputs and their blobs are ``progress_inputs``; getting a checkpoint back into a run
is ``progress_restore``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence

import msgspec

from tidegate.flow.progress_inputs import RunBlobs, RunInputs, canonical_json
from tidegate.flow.state import RunState
from tidegate.records.proposal import Proposal
from tidegate.records.report import PhaseEvent
from tidegate.text.floats import encode_floats

STATE_FORMAT = "tidegate.engine/1"


class LoopState(msgspec.Struct):
    """The retry loop's memory between attempts."""

    previous_condition: str | None = None
    attempt_closed: bool = False
    """The current attempt's record is complete (its attempt event was written)."""
    stop: bool = False
    """Decided at the close of the attempt: the run ends with it."""


# -- proposals ------------------------------------------------------------------------------


def proposal_to_json(proposal: Proposal) -> dict[str, object]:
    return {
        "diff": proposal.diff,
        "search_replace": proposal.search_replace,
        "edits": [
            {
                "path": e.path,
                "content": None
                if e.content is None
                else base64.b64encode(e.content).decode("ascii"),
                "executable": e.executable,
            }
            for e in proposal.edits
        ],
        "checks": [{"path": c.path, "contains": c.contains} for c in proposal.checks],
    }


# -- capture --------------------------------------------------------------------------------


def capture(
    state: RunState,
    events: Sequence[PhaseEvent],
    inputs: RunInputs,
    loop: LoopState,
    blobs: RunBlobs,
    *,
    workspace_fingerprint: Mapping[str, str | None] | None = None,
    tool_calls: Sequence[Mapping[str, object]] = (),
) -> dict[str, object]:
    """The checkpoint state of a run at a phase or attempt boundary. ``tool_calls``: the
    completed tool calls with their effects, which a resumed agent loop must not repeat."""
    number = state.attempt.number
    recorded_inputs = inputs.to_json()
    if workspace_fingerprint is not None:
        recorded_inputs["workspace_fingerprint"] = dict(workspace_fingerprint)
    attempt = _attempt_json(state, events, blobs)
    snap = state.snapshot
    saved: dict[str, object] = encode_floats(
        {
            "format": STATE_FORMAT,
            "run_id": state.run_id,
            "repo": str(state.repo.root),
            "mode": state.request.mode.value,
            "inputs": recorded_inputs,
            "t0": {
                "ref": snap.ref,
                "commit": snap.commit,
                "head": snap.head,
                "index_tree": snap.index_tree,
            },
            "budgets": {
                "max_attempts": state.request.max_attempts,
                "verify_timeout_s": state.request.verify_timeout_s,
            },
            "counters": {
                "attempt": number,
                "phase_events": len(events),
                "failed_proposals": dict(state.failed_proposals),
                "previous_condition": loop.previous_condition,
                "attempt_closed": loop.attempt_closed,
                "stop": loop.stop,
            },
            "attempt": attempt,
            "run": _run_json(state, events),
            "tool_calls": [dict(call) for call in tool_calls],
        }
    )
    return saved


def _attempt_json(
    state: RunState, events: Sequence[PhaseEvent], blobs: RunBlobs
) -> dict[str, object]:
    """The current attempt's part of a checkpoint; its proposal is kept as a blob and its
    candidate tree pinned."""
    attempt = state.attempt
    number = attempt.number
    proposal = None
    if attempt.proposal is not None:
        data = canonical_json(proposal_to_json(attempt.proposal))
        proposal = {
            **blobs.keep(f"attempt-{number}/proposal", data),
            "fingerprint": attempt.proposal.fingerprint(),
        }
    if attempt.candidate_tree is not None:
        blobs.pin(f"attempt-{number}/candidate", attempt.candidate_tree)
    error = attempt.error
    diagnosis = attempt.diagnosis
    verify = attempt.verify
    return {
        "number": number,
        "completed": [e.phase for e in events if e.attempt == number],
        "failed": None
        if error is None
        else {
            "phase": attempt.failed_phase,
            "error_class": error.error_class.value,
            "message": error.message,
            "feedback": error.feedback,
            "retryable": error.retryable,
        },
        "diagnosis": None
        if diagnosis is None
        else {
            "error_class": diagnosis.error_class.value,
            "summary": diagnosis.summary,
            "feedback": diagnosis.feedback,
            "files_involved": list(diagnosis.files_involved),
            "failing_tests": list(diagnosis.failing_tests),
            "locations": list(diagnosis.locations),
        },
        "plan": None
        if attempt.plan is None
        else {"summary": attempt.plan.summary, "targets": list(attempt.plan.targets)},
        "proposal": proposal,
        "candidate_tree": attempt.candidate_tree,
        "verify": None
        if verify is None
        else {
            "exit_code": verify.exit_code,
            "timed_out": verify.timed_out,
            "duration_s": verify.duration_s,
        },
        "feedback_chars": attempt.feedback_chars,
    }


def _run_json(state: RunState, events: Sequence[PhaseEvent]) -> dict[str, object]:
    """The run's part of a checkpoint: everything the final report is built from."""
    return {
        "phases": [e.model_dump(mode="json") for e in events],
        "attempt_events": [e.model_dump(mode="json") for e in state.attempt_events],
        "feedback": list(state.feedback),
        "focus_files": list(state.focus_files),
        "findings": [msgspec.structs.asdict(f) for f in state.findings],
        "notes": list(state.notes),
        "context_files": dict(state.context_files),
        "applied_files": [f.model_dump(mode="json") for f in state.applied_files],
        "rejects": list(state.rejects),
        "rejects_dir": None if state.rejects_dir is None else str(state.rejects_dir),
        "containment": None
        if state.containment is None
        else state.containment.model_dump(mode="json"),
    }


def phase_facts(state: RunState, event: PhaseEvent) -> dict[str, object]:
    """The deterministic outcome of a phase, for the trace (and so the replay hash)."""
    facts: dict[str, object] = {
        "phase": event.phase,
        "effect": event.effect,
        "status": event.status,
        "error_class": event.error_class,
    }
    attempt = state.attempt
    if event.status != "ok":
        return facts
    if event.phase == "PATCH" and attempt.proposal is not None:
        facts["proposal"] = attempt.proposal.fingerprint()
    elif event.phase == "VALIDATE" and attempt.candidate_tree is not None:
        facts["candidate_tree"] = attempt.candidate_tree
        facts["changed"] = [[c.path, c.action] for c in attempt.changes]
    elif event.phase == "VERIFY" and attempt.verify is not None:
        facts["exit_code"] = attempt.verify.exit_code
    elif event.phase == "APPLY_BACK":
        facts["applied"] = [
            [f.path, f.action, f.merged, f.before_sha256, f.after_sha256]
            for f in state.applied_files
        ]
    elif event.phase in ("REVIEW", "REPORT"):
        facts["findings"] = len(state.findings)
    return facts
