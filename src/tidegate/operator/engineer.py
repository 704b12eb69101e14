"""The engineer: inspect the repository, state a short plan and the verification steps,
take exactly one bounded action, verify it, and persist memory, evidence and a handoff.

Action shapes:

- a read-only scan (``git-tracked-file-scan`` or ``project-manifest-scan``) when the
  objective holds no edit block and the base type runs no model;
- one structured edit (``edit-file:`` / ``replace:`` / ``with:`` / ``verify-contains:``,
  exactly one file) through the guarded engine: shadow, VERIFY, apply-back as unstaged
  edits, so a dirty tree is safe and staged work is untouched;
- with a model base type (openai, anthropic), one guarded model-driven run of a free-text
  objective.

Verification is explicit and host-side: the engine's report, then the file's content on
disk and the git-visible state (exactly the expected path changed, the index's bytes
unchanged; for a scan, nothing changed at all).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.operator.context import carried, terminal_continuity
from tidegate.operator.errors import OperatorError
from tidegate.operator.grounding import GitState, file_sha256, git_state, ground, scan_name
from tidegate.operator.guarded import Backend, run_engine
from tidegate.operator.handoff import objective_metadata, write_handoff
from tidegate.operator.identities import Selection
from tidegate.operator.records import (
    EVIDENCE_FILE,
    MEMORY_FILE,
    append_records,
    evidence_record,
    memory_record,
)
from tidegate.operator.state_root import run_root

if TYPE_CHECKING:
    from tidegate.workspace.repo import Repository


def plan_action(objective: str, selection: Selection) -> dict[str, Any]:
    """The one action the objective asks for, refused (naming why) when it is not one of
    the bounded shapes."""
    from tidegate.planners.objective import parse_objective

    parsed = parse_objective(objective)
    if not parsed.has_edits:
        if selection.base_type.needs_model:
            return {"shape": "model-run", "name": "guarded-model-run"}
        return {"shape": "scan"}
    blocks = parsed.blocks
    if len(blocks) != 1 or blocks[0].kind != "edit-file":
        raise OperatorError(
            "an engineer action edits exactly one file: give one edit-file: block "
            f"(got {len(blocks)} block(s): {', '.join(b.kind for b in blocks)})"
        )
    block = blocks[0]
    if not block.replacements or not block.checks:
        raise OperatorError(
            f"objective line {block.line}: the edit needs replace:, with: and verify-contains:"
        )
    return {
        "shape": "structured-edit",
        "name": "structured-text-replacement",
        "path": block.path,
        "verify_contains": list(block.checks),
    }


def _steps(action: dict[str, Any]) -> tuple[list[str], list[str]]:
    shape = action["shape"]
    if shape == "scan":
        return (
            ["inspect the repository read-only", f"run {action['name']}", "record the findings"],
            ["git status and the index are byte-identical before and after the scan"],
        )
    if shape == "structured-edit":
        return (
            [
                "snapshot the work tree (T0) without touching the index",
                f"apply the replacement to {action['path']} in a shadow worktree",
                "verify it there, then merge it back as an unstaged edit",
            ],
            [
                "the guarded run succeeded (VERIFY passed in the shadow)",
                f"{action['path']} on disk contains the verify-contains text",
                f"git shows {action['path']} changed, no other path changed, index unchanged",
            ],
        )
    return (
        ["let the model explore T0 read-only and propose one change", "verify it in a shadow"],
        ["the guarded run succeeded", "only the run's changed files changed; index unchanged"],
    )


def _verify_edit(
    repo_root: Path, action: dict[str, Any], before: GitState, after: GitState, report: Any
) -> list[dict[str, Any]]:
    """The edit against what the run merged, not against HEAD or the index: a file the user
    had already edited (`` M``, ``MM``) shows the same status code after the merge."""
    path = action["path"]
    checks = [{"check": "guarded run succeeded", "passed": report.status == "succeeded"}]
    try:
        text = (repo_root / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    for needle in action["verify_contains"]:
        checks.append({"check": f"{path} contains {needle[:60]!r}", "passed": needle in text})
    written = _written(repo_root, report)
    code = after.changed_paths().get(path, "  ")
    checks.append(
        {
            "check": f"{path} holds the merge the run wrote, as an unstaged edit",
            "passed": written.get(path) is True and code[1] == "M",
        }
    )
    others = [p for p in after.changed_since(before) if p != path]
    checks.append({"check": "no other path changed", "passed": not others, "detail": others[:5]})
    checks.append({"check": "index unchanged", "passed": before.index_sha256 == after.index_sha256})
    return checks


def _verify_model_run(
    repo_root: Path, before: GitState, after: GitState, report: Any
) -> list[dict[str, Any]]:
    expected = {f.path for f in report.changed_files} if report.status == "succeeded" else set()
    unexpected = sorted(set(after.changed_since(before)) - expected)
    missing = sorted(p for p, ok in _written(repo_root, report).items() if not ok)
    return [
        {"check": "guarded run succeeded", "passed": report.status == "succeeded"},
        {"check": "the run's files hold what it wrote", "passed": not missing, "detail": missing},
        {"check": "only the run's files changed", "passed": not unexpected, "detail": unexpected},
        {"check": "index unchanged", "passed": before.index_sha256 == after.index_sha256},
    ]


def _written(repo_root: Path, report: Any) -> dict[str, bool]:
    """path -> whether the work tree holds exactly what APPLY_BACK wrote there (the
    report's after-hash, from the bytes it wrote; None: it deleted the path)."""
    out: dict[str, bool] = {}
    for applied in report.applied_files:
        if applied.action == "unchanged":
            continue
        raw = base64.b64decode(applied.path_bytes) if applied.path_bytes else None
        full = repo_root / (os.fsdecode(raw) if raw is not None else applied.path)
        now = file_sha256(full)
        out[applied.path] = now == (applied.after_sha256 or "absent")
    return out


def engineer_run(
    selection: Selection,
    backend: Backend,
    repo_path: Path,
    objective: str,
    explicit_root: str | None,
    *,
    verify: str | None = None,
) -> dict[str, Any]:
    """Run one bounded engineer action; returns the view (also persisted as the handoff).
    Everything is checked (objective, repository, state root) before anything is written."""
    from tidegate.workspace.repo import discover

    if not objective.strip():
        raise OperatorError("the engineer objective is empty")
    repo = discover(repo_path)
    action = plan_action(objective, selection)
    root = run_root(explicit_root, repo)
    grounding = ground(repo)
    if action["shape"] == "scan":
        action["name"] = scan_name(grounding)
    plan, verification_steps = _steps(action)
    context = carried(root)
    continuity = terminal_continuity(root, strict=False)
    checks, implementation, run_id, exit_code = _act(
        repo, root, selection, backend, action, grounding, objective, verify
    )
    passed = all(c["passed"] for c in checks)
    sel = selection.as_dict(implementation)
    evidence, memory = _records(
        action, checks, grounding, passed, run_id, f"engineer::{implementation}"
    )
    append_records(root, MEMORY_FILE, "memory", memory)
    append_records(root, EVIDENCE_FILE, "evidence", evidence)
    view = {
        "selection": sel,
        "objective": objective_metadata(objective),
        "repo_grounding": grounding,
        "carried_context": context,
        "terminal_continuity": continuity,
        "plan": plan,
        "verification_steps": verification_steps,
        "action": action,
        "verification": {"passed": passed, "checks": checks},
        "exit_code": 0 if passed else (exit_code or 1),
    }
    handoff = write_handoff(
        root, "engineer", _handoff_body(view, sel, passed, objective, memory, evidence)
    )
    view["records"] = {
        "handoff": handoff.name,
        "memory_records": len(memory),
        "evidence_records": len(evidence),
    }
    return view


def _act(
    repo: Repository,
    root: Path,
    selection: Selection,
    backend: Backend,
    action: dict[str, Any],
    grounding: dict[str, Any],
    objective: str,
    verify: str | None,
) -> tuple[list[dict[str, Any]], str, str | None, int]:
    """The action itself (a scan, or a guarded engine run) and its host-side checks; also
    the implementation that served, the run id and the run's exit code."""
    before = git_state(repo)
    implementation = selection.base_type.implementation
    run_id = None
    exit_code = 0
    if action["shape"] == "scan":
        after = git_state(repo)
        checks = [
            {"check": "git status unchanged", "passed": before.status == after.status},
            {"check": "index unchanged", "passed": before.index_sha256 == after.index_sha256},
        ]
        action["result"] = (
            f"{grounding['tracked_files']} tracked files; manifests: "
            f"{', '.join(grounding['manifests']) or 'none'}"
        )
        return checks, implementation, run_id, exit_code
    report, implementation = run_engine(
        repo.root, root, selection, backend, mode="patch", objective=objective, verify=verify
    )
    run_id = report.run_id
    exit_code = report.exit_code
    after = git_state(repo)
    action["result"] = f"guarded run {report.run_id}: {report.status}" + (
        f" ({report.error_class}: {report.message})" if report.error_class else ""
    )
    action["changed_files"] = [f.path for f in report.changed_files]
    if action["shape"] == "structured-edit":
        checks = _verify_edit(repo.root, action, before, after, report)
    else:
        checks = _verify_model_run(repo.root, before, after, report)
    return checks, implementation, run_id, exit_code


def _records(
    action: dict[str, Any],
    checks: list[dict[str, Any]],
    grounding: dict[str, Any],
    passed: bool,
    run_id: str | None,
    source: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The session's evidence records (grounding, action, each check) and its memory."""
    evidence = [
        evidence_record(
            "engineer",
            "repo-grounding",
            f"HEAD {grounding['head']}, {grounding['tracked_files']} tracked files",
            source,
        ),
        evidence_record("engineer", "action", f"{action.get('name')}: {action['result']}", source),
        *(
            evidence_record("engineer", "verification", f"{c['check']}: {c['passed']}", source)
            for c in checks
        ),
    ]
    memory = [
        memory_record(
            "engineer",
            "engineer-session",
            "engineer-session",
            {"action": action.get("name"), "passed": passed, "run_id": run_id},
            source,
        )
    ]
    return evidence, memory


def _handoff_body(
    view: dict[str, Any],
    sel: dict[str, Any],
    passed: bool,
    objective: str,
    memory: list[dict[str, Any]],
    evidence: list[dict[str, Any]],
) -> dict[str, Any]:
    """What the engineer's handoff holds: the selection, the phase reached, the
    objective's metadata, the records and a summary of the view."""
    return {
        "selection": sel,
        "session_phase": "complete" if passed else "verification-failed",
        "objective_metadata": objective_metadata(objective),
        "memory": memory,
        "evidence": evidence,
        "summary": {k: view[k] for k in ("repo_grounding", "carried_context", "action")}
        | {"verification": view["verification"]},
    }
