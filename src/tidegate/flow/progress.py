"""The engine's resumable state: what a checkpoint holds about a run, and how a resumed
run gets it back.

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
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tidegate.config.records import TidegateConfig
from tidegate.errors import ErrorClass, PhaseError, UsageError
from tidegate.exec.runner import CommandResult
from tidegate.flow.pipeline import ResumePoint
from tidegate.flow.state import RunState
from tidegate.planners.objective import parse_objective
from tidegate.records.proposal import ContentCheck, FileEdit, Finding, Plan, Proposal
from tidegate.records.report import AppliedFile, AttemptEvent, ContainmentOut, PhaseEvent
from tidegate.records.request import RunRequest
from tidegate.text.floats import decode_floats, encode_floats
from tidegate.workspace.changes import diff_trees
from tidegate.workspace.loose import write_blob
from tidegate.workspace.repo import Repository

STATE_FORMAT = "tidegate.engine/1"
MODEL_HASHES = (
    "prompt",
    "system_prompt",
    "task_contract",
    "registry",
    "effect_policy",
    "model_identity",
    "model_capability",
)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


# -- blobs in the user's object store -------------------------------------------------------


class RunBlobs:
    """Run inputs kept as git blobs under ``refs/tidegate/runs/<run-id>/``."""

    def __init__(self, repo: Repository, run_id: str) -> None:
        self.repo = repo
        self.prefix = f"refs/tidegate/runs/{run_id}"
        self._known: dict[tuple[str, str], str] = {}

    def keep(self, name: str, data: bytes) -> dict[str, str]:
        """Store ``data`` under ``<prefix>/<name>``; return its blob id and SHA-256."""
        digest = sha256_hex(data)
        oid = self._known.get((name, digest))
        if oid is None:
            oid = write_blob(self.repo, data)
            self.repo.git.update_ref(f"{self.prefix}/{name}", oid)
            self._known[(name, digest)] = oid
        return {"blob": oid, "sha256": digest}

    def pin(self, name: str, oid: str) -> None:
        """Keep an existing object (a candidate tree) reachable until the run is gone."""
        if self._known.get((name, oid)) != oid:
            self.repo.git.update_ref(f"{self.prefix}/{name}", oid)
            self._known[(name, oid)] = oid

    def read(self, ref: Mapping[str, Any], what: str) -> bytes:
        """The blob ``ref`` names, checked against its recorded SHA-256."""
        res = self.repo.git.run("cat-file", "blob", str(ref["blob"]), check=False)
        if res.returncode != 0:
            raise UsageError(f"cannot resume: the recorded {what} is missing from the repository")
        if sha256_hex(res.stdout) != ref["sha256"]:
            raise UsageError(f"cannot resume: the recorded {what} does not match its checkpoint")
        return res.stdout


# -- inputs ---------------------------------------------------------------------------------


def request_bytes(request: RunRequest) -> bytes:
    return _canonical(request.model_dump(mode="json"))


def planner_inputs_sha256(request: RunRequest) -> str:
    """SHA-256 over what the planner reads besides the objective: a scripted planner's
    script, and the files ``patch-file:`` blocks name (absent files count as absent)."""
    digest = hashlib.sha256(request.planner.encode() + b"\0")
    files: list[Path] = []
    if request.planner.startswith("scripted:"):
        path = Path(request.planner.removeprefix("scripted:")).expanduser()
        files.append(path if path.is_absolute() else request.objective_base / path)
    elif request.objective.strip():
        try:
            objective = parse_objective(request.objective, request.objective_source)
        except UsageError:
            objective = None
        for block in objective.blocks if objective else ():
            if block.kind == "patch-file":
                files.append((request.objective_base / block.path).expanduser())
    for file in files:
        try:
            content = file.read_bytes()
        except OSError:
            content = b"<absent>"
        digest.update(str(file).encode("utf-8", "surrogateescape") + b"\0")
        digest.update(sha256_hex(content).encode() + b"\n")
    return digest.hexdigest()


def config_sha256(config: TidegateConfig) -> str:
    return sha256_hex(_canonical(config.model_dump(mode="json", by_alias=True)))


@dataclass(frozen=True)
class RunInputs:
    """What a resume must find unchanged, captured when the run started."""

    fingerprint: Mapping[str, str | None]
    """``value`` plus the ``head``, ``tree`` and ``index`` digests it was computed from."""
    request: Mapping[str, str]
    planner_sha256: str
    config_sha256: str
    model_hashes: Mapping[str, str | None] = field(
        default_factory=lambda: dict.fromkeys(MODEL_HASHES)
    )

    def to_json(self) -> dict[str, object]:
        return {
            "workspace_fingerprint": dict(self.fingerprint),
            "request": dict(self.request),
            "planner_sha256": self.planner_sha256,
            "config_sha256": self.config_sha256,
            "hashes": dict(self.model_hashes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunInputs:
        return cls(
            fingerprint=dict(data["workspace_fingerprint"]),
            request=dict(data["request"]),
            planner_sha256=str(data["planner_sha256"]),
            config_sha256=str(data["config_sha256"]),
            model_hashes=dict(data["hashes"]),
        )


@dataclass
class LoopState:
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
    attempt = state.attempt
    number = attempt.number
    recorded_inputs = inputs.to_json()
    if workspace_fingerprint is not None:
        recorded_inputs["workspace_fingerprint"] = dict(workspace_fingerprint)
    proposal = None
    if attempt.proposal is not None:
        data = _canonical(proposal_to_json(attempt.proposal))
        proposal = {
            **blobs.keep(f"attempt-{number}/proposal", data),
            "fingerprint": attempt.proposal.fingerprint(),
        }
    if attempt.candidate_tree is not None:
        blobs.pin(f"attempt-{number}/candidate", attempt.candidate_tree)
    error = attempt.error
    diagnosis = attempt.diagnosis
    verify = attempt.verify
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
            "attempt": {
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
            },
            "run": {
                "phases": [e.model_dump(mode="json") for e in events],
                "attempt_events": [e.model_dump(mode="json") for e in state.attempt_events],
                "feedback": list(state.feedback),
                "focus_files": list(state.focus_files),
                "findings": [dict(f.__dict__) for f in state.findings],
                "notes": list(state.notes),
                "context_files": dict(state.context_files),
                "applied_files": [f.model_dump(mode="json") for f in state.applied_files],
                "rejects": list(state.rejects),
                "rejects_dir": None if state.rejects_dir is None else str(state.rejects_dir),
                "containment": None
                if state.containment is None
                else state.containment.model_dump(mode="json"),
            },
            "tool_calls": [dict(call) for call in tool_calls],
        }
    )
    return saved


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


# -- restore --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Restored:
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
