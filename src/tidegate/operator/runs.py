"""The ``run`` commands of meeting, goal curation, review and improvement curation. Each
parses and checks its whole objective first, then validates the state root, then writes;
each returns the view its command renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidegate.operator.goals import active_top, apply_updates, parse_goal_objective
from tidegate.operator.guarded import Backend, run_engine
from tidegate.operator.handoff import objective_metadata
from tidegate.operator.identities import Selection
from tidegate.operator.improvement import curate, parse_decisions
from tidegate.operator.meeting import parse_meeting, record_meeting
from tidegate.operator.records import EVIDENCE_FILE, append_records, evidence_record
from tidegate.operator.review import latest_artifact, write_artifact
from tidegate.operator.state_root import run_root

CAPTURE = "local-harness::structured-capture"
"""What serves meeting, goal and improvement capture whatever base type was selected: they
parse structured objectives and call no model, and their records say so."""


def _source(selection: Selection, mode: str, implementation: str | None = None) -> str:
    return f"{mode}::{implementation or CAPTURE}"


def meeting_run(selection: Selection, objective: str, explicit_root: str | None) -> dict[str, Any]:
    record = parse_meeting(objective)
    root = run_root(explicit_root)
    entry = record_meeting(root, record, _source(selection, "meeting"))
    changes = apply_updates(root, record["goals"], _source(selection, "meeting"))
    return {
        "selection": selection.as_dict(CAPTURE),
        "objective": objective_metadata(objective),
        "meeting": record,
        "record": {"created_at_unix_ms": entry["created_at_unix_ms"], "goal_changes": len(changes)},
    }


def goal_curation_run(
    selection: Selection, objective: str, explicit_root: str | None
) -> dict[str, Any]:
    updates = parse_goal_objective(objective)
    root = run_root(explicit_root)
    changes = apply_updates(root, updates, _source(selection, "goal-curation"))
    return {
        "selection": selection.as_dict(CAPTURE),
        "objective": objective_metadata(objective),
        "changes": changes,
        "active_top": active_top(root),
    }


def review_run(
    selection: Selection,
    backend: Backend,
    repo_path: Path,
    objective: str,
    explicit_root: str | None,
    *,
    verify: str | None,
) -> dict[str, Any]:
    from tidegate.workspace.repo import discover

    repo = discover(repo_path)
    root = run_root(explicit_root, repo)
    report, implementation = run_engine(
        repo.root, root, selection, backend, mode="review", objective=objective, verify=verify
    )
    selected = selection.as_dict(implementation)
    findings = [f.model_dump() for f in report.findings]
    path = write_artifact(
        root,
        {
            "run_id": report.run_id,
            "selection": selected,
            "status": report.status,
            "objective_metadata": objective_metadata(objective),
            "verify": None if report.verify is None else report.verify.model_dump(),
            "findings": findings,
        },
    )
    append_records(
        root,
        EVIDENCE_FILE,
        "evidence",
        [
            evidence_record(
                "review",
                "review-artifact",
                f"{path.name}: {len(findings)} finding(s)",
                _source(selection, "review", implementation),
            )
        ],
    )
    _, artifact = latest_artifact(root)
    return {
        "selection": selected,
        "objective": objective_metadata(objective),
        "run": {"run_id": report.run_id, "status": report.status, "fs_mode": report.fs_mode},
        "artifact": path.name,
        "findings": findings,
        "proposals": artifact["proposals"],
        "exit_code": report.exit_code,
    }


def improvement_run(
    selection: Selection, objective: str, explicit_root: str | None
) -> dict[str, Any]:
    parse_decisions(objective)  # refuse a malformed objective before touching the root
    root = run_root(explicit_root)
    path, artifact = latest_artifact(root)
    entry = curate(root, path, artifact, objective, _source(selection, "improvement-curation"))
    return {
        "selection": selection.as_dict(CAPTURE),
        "objective": objective_metadata(objective),
        "review_artifact": path.name,
        "decision": entry["value"],
        "active_goals": active_top(root),
    }
