"""APPLY_BACK: merge the verified change into the main work tree, never the index."""

from __future__ import annotations

import hashlib

from tidegate.config import load_policy
from tidegate.errors import ErrorClass, PhaseError, UsageError
from tidegate.flow.policy_record import effective_policy
from tidegate.flow.report import AppliedFile
from tidegate.flow.state import RunState
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.journal import ApplyBackRace, apply_ops
from tidegate.workspace.merge_back import Conflict, plan_merge


def apply_back(state: RunState) -> str:
    _policy_unchanged(state)
    plan = plan_merge(state.repo.git, state.workspace, state.attempt.changes, state.scratch)
    if plan.conflicts:
        _write_rejects(state, plan.conflicts)
        first = plan.conflicts[0]
        raise PhaseError(
            ErrorClass.CONFLICT,
            f"{len(plan.conflicts)} path(s) conflict with your edits (first: {first.path}: "
            f"{first.reason}); nothing was changed",
            retryable=False,
        )
    try:
        apply_ops(state.workspace, plan.ops, state.repo.runtime_dir, state.run_id)
    except ApplyBackRace as exc:
        raise PhaseError(ErrorClass.CONFLICT, str(exc), retryable=False) from exc
    for op in plan.ops:
        state.applied_files.append(
            AppliedFile(
                path=op.path,
                action="delete" if op.new.kind == "missing" else "write",
                merged=op.merged,
                before_sha256=_sha(op.old.content),
                after_sha256=_sha(op.new.content),
            )
        )
    for path in plan.unchanged:
        state.applied_files.append(
            AppliedFile(
                path=path, action="unchanged", merged=False, before_sha256=None, after_sha256=None
            )
        )
    merged = sum(1 for op in plan.ops if op.merged)
    return f"{len(plan.ops)} path(s) written ({merged} merged with your edits)"


def _policy_unchanged(state: RunState) -> None:
    """Refuse to apply when tidegate's configuration in the work tree is no longer the one
    the run was judged by. Only something outside the run's own change can have done it
    (you, or a verification command run without containment, which can write anywhere);
    either way the run's verdict no longer speaks for the policy that is there now."""
    if state.policy is None:
        return
    try:
        now = effective_policy(load_policy(state.repo.root), state.request).sha256
    except UsageError:
        now = None
    if now != state.policy.sha256:
        raise PhaseError(
            ErrorClass.UNKNOWN,
            "tidegate's configuration (pyproject.toml [tool.tidegate] or "
            ".tidegate/config.toml) changed in your work tree during the run; nothing was "
            "applied. Check who changed it before running again",
            retryable=False,
        )


def _sha(content: bytes | None) -> str | None:
    return None if content is None else hashlib.sha256(content).hexdigest()


def _write_rejects(state: RunState, conflicts: list[Conflict]) -> None:
    fs = LocalFS(state.repo.root)
    base = f".tidegate/rejects/{state.run_id}"
    for c in conflicts:
        header = f"# tidegate could not apply this change to {c.path}: {c.reason}\n"
        rel = f"{base}/{c.path}.rej"
        fs.write_file(
            rel,
            (header + c.rejected_diff).encode("utf-8", "surrogateescape"),
            0o644,
            ".tidegate-tmp-rej",
        )
        state.rejects.append(rel)
    state.rejects_dir = state.repo.root / base
