"""How a resumed run gets its state back from an engine checkpoint (``progress.capture``
wrote it)."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from tidegate.errors import ErrorClass, PhaseError
from tidegate.exec.runner import CommandResult
from tidegate.flow.pipeline import ResumePoint
from tidegate.flow.progress import LoopState
from tidegate.flow.progress_inputs import RunBlobs
from tidegate.flow.state import RunState
from tidegate.records.proposal import ContentCheck, FileEdit, Finding, Plan, Proposal
from tidegate.records.report import AppliedFile, AttemptEvent, ContainmentOut, PhaseEvent
from tidegate.text.floats import decode_floats
from tidegate.workspace.changes import diff_trees


def proposal_from_json(data: Mapping[str, Any]) -> Proposal:
    return Proposal(
        diff=data["diff"],
        search_replace=data["search_replace"],
        edits=tuple(
            FileEdit(
                path=e["path"],
                content=None if e["content"] is None else base64.b64decode(e["content"]),
                executable=bool(e["executable"]),
            )
            for e in data["edits"]
        ),
        checks=tuple(ContentCheck(path=c["path"], contains=c["contains"]) for c in data["checks"]),
    )


class Restored(msgspec.Struct, frozen=True):
    events: list[PhaseEvent]
    loop: LoopState
    resume: ResumePoint | None
    """Where the current attempt continues; None when the attempt had closed."""


def restore(state: RunState, saved: Mapping[str, Any], blobs: RunBlobs) -> Restored:
    """Put a checkpoint's run and attempt state back into ``state`` (whose snapshot, shadow
    and planner are already set up)."""
    data = decode_floats(saved)
    run = data["run"]
    state.feedback = list(run["feedback"])
    state.focus_files = tuple(run["focus_files"])
    state.findings = [Finding(**f) for f in run["findings"]]
    state.notes = list(run["notes"])
    state.context_files = dict(run["context_files"])
    state.attempt_events = [AttemptEvent.model_validate(e) for e in run["attempt_events"]]
    state.applied_files = [AppliedFile.model_validate(f) for f in run["applied_files"]]
    state.rejects = list(run["rejects"])
    state.rejects_dir = None if run["rejects_dir"] is None else Path(run["rejects_dir"])
    if run.get("containment") is not None:
        state.containment = ContainmentOut.model_validate(run["containment"])
    counters = data["counters"]
    state.failed_proposals = {str(k): int(v) for k, v in counters["failed_proposals"].items()}
    loop = LoopState(
        previous_condition=counters["previous_condition"],
        attempt_closed=bool(counters["attempt_closed"]),
        stop=bool(counters["stop"]),
    )
    _restore_attempt(state, data["attempt"], blobs)
    events = [PhaseEvent.model_validate(e) for e in run["phases"]]
    if loop.attempt_closed:
        return Restored(events, loop, None)
    completed = tuple(data["attempt"]["completed"])
    failed = state.attempt.error
    redo: frozenset[str] = frozenset()
    if "APPLY" in completed and failed is None and "VERIFY" not in completed:
        redo = frozenset({"APPLY"})  # the shadow is new: bring it to the candidate again
    return Restored(events, loop, ResumePoint(completed=completed, failed=failed, redo=redo))


def _restore_attempt(state: RunState, saved: Mapping[str, Any], blobs: RunBlobs) -> None:
    from tidegate.feedback.diagnostics import Diagnosis
    from tidegate.flow.state import AttemptState

    attempt = AttemptState(int(saved["number"]))
    if saved["plan"] is not None:
        attempt.plan = Plan(saved["plan"]["summary"], tuple(saved["plan"]["targets"]))
    if saved["proposal"] is not None:
        raw = blobs.read(saved["proposal"], f"proposal of attempt {attempt.number}")
        attempt.proposal = proposal_from_json(json.loads(raw))
    if saved["candidate_tree"] is not None:
        attempt.candidate_tree = saved["candidate_tree"]
        attempt.changes = diff_trees(state.repo.git, state.snapshot.commit, saved["candidate_tree"])
    if saved["verify"] is not None:
        v = saved["verify"]
        attempt.verify = CommandResult(
            argv=[],
            exit_code=v["exit_code"],
            timed_out=v["timed_out"],
            duration_s=v["duration_s"],
            stdout_tail="",
            stderr_tail="",
            stdout_file=Path(os.devnull),
            stderr_file=Path(os.devnull),
            stdout_truncated=False,
            stderr_truncated=False,
        )
    if saved["failed"] is not None:
        f = saved["failed"]
        attempt.error = PhaseError(
            ErrorClass(f["error_class"]), f["message"], f["feedback"], retryable=f["retryable"]
        )
        attempt.failed_phase = f["phase"]
    if saved["diagnosis"] is not None:
        d = saved["diagnosis"]
        attempt.diagnosis = Diagnosis(
            error_class=ErrorClass(d["error_class"]),
            summary=d["summary"],
            feedback=d["feedback"],
            files_involved=list(d["files_involved"]),
            failing_tests=list(d["failing_tests"]),
            locations=list(d["locations"]),
        )
    attempt.feedback_chars = int(saved["feedback_chars"])
    state.attempt = attempt
