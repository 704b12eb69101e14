"""APPLY_BACK: merge the verified change into the main work tree, never the index.

A write that fails (permission, full disk, read-only file system) ends the run with
PERSISTENCE_ERROR, the class of a durable write the host did not acknowledge: the journal
has already restored every path written before it, so ``applied_files`` stays empty. Only
when that restore fails too are the paths it could not restore listed, and the journal is
kept for ``tidegate recover``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tidegate.config import load_policy
from tidegate.errors import ErrorClass, PhaseError, RepositoryLockedError, UsageError
from tidegate.flow.policy_record import effective_policy
from tidegate.flow.state import RunState
from tidegate.records.report import AppliedFile, LandingOut
from tidegate.workspace import landed
from tidegate.workspace.fs import LocalFS, UnsafePathError
from tidegate.workspace.journal import ApplyBackRace, ApplyBackWriteError, apply_ops
from tidegate.workspace.lock import landing
from tidegate.workspace.loose import write_commit
from tidegate.workspace.merge_back import Conflict, PlannedOp, plan_merge
from tidegate.workspace.repo import Repository
from tidegate.workspace.snapshot import result_ref


def apply_back(state: RunState) -> str:
    _policy_unchanged(state)
    keep_result(state)
    if state.request.hold:
        count = len(state.attempt.changes)
        return f"held: {count} path(s) verified and kept, not applied"
    runtime = state.repo.runtime_dir
    try:
        # One landing at a time: the merge is planned against the tree as it is now,
        # which may hold the user's edits and what other runs landed since this T0.
        with landing(runtime, state.run_id) as lock:
            between = None
            if state.landed_seen is not None:
                between = [e["run_id"] for e in landed.since(runtime, state.landed_seen)]
            done: tuple[str, int | None] | None = None
            try:
                done = _merge_and_write(state)
                return done[0]
            finally:
                lock.release()
                state.landing = LandingOut(
                    seq=done[1] if done else None,
                    landed_between=between,
                    waited_s=round(lock.waited_s, 4),
                    held_s=round(lock.held_s, 4),
                )
    except RepositoryLockedError as exc:
        raise PhaseError(ErrorClass.RESOURCE_LOCK_ERROR, str(exc), retryable=False) from exc
    except UsageError as exc:  # a crashed apply-back's journal waits for `recover`
        raise PhaseError(ErrorClass.CONFLICT, str(exc), retryable=False) from exc


def _merge_and_write(state: RunState) -> tuple[str, int | None]:
    """Under the landing lock: plan the merge, write it through the journal, and take
    the next place in the landing order. Returns what was done and that place."""
    plan = plan_merge(state.repo.git, state.workspace, state.attempt.changes, state.scratch)
    state.attempt.forms = plan.forms
    if plan.conflicts:
        _write_rejects(state, plan.conflicts)
        first = plan.conflicts[0]
        raise PhaseError(
            ErrorClass.CONFLICT,
            f"{len(plan.conflicts)} path(s) conflict with your work tree (first: {first.path}: "
            f"{first.reason}); nothing was changed",
            retryable=False,
        )
    try:
        apply_ops(state.workspace, plan.ops, state.repo.runtime_dir, state.run_id)
    except ApplyBackRace as exc:
        raise PhaseError(ErrorClass.CONFLICT, str(exc), retryable=False) from exc
    except ApplyBackWriteError as exc:
        if not exc.rolled_back:
            _record_applied(state, [op for op in plan.ops if op.path in exc.written], [])
        raise PhaseError(ErrorClass.PERSISTENCE_ERROR, str(exc), retryable=False) from exc
    _record_applied(state, plan.ops, plan.unchanged)
    seq = None
    if plan.ops:
        try:
            seq = landed.append(state.repo.runtime_dir, state.run_id, "apply-back", len(plan.ops))
        except OSError as exc:  # the change is written: only its place in the order is lost
            state.notes.append(f"the landing order could not be recorded: {exc}")
    merged = sum(1 for op in plan.ops if op.merged)
    return f"{len(plan.ops)} path(s) written ({merged} merged with your edits)", seq


def keep_result(state: RunState) -> None:
    """Keep the verified change under ``refs/tidegate/runs/<id>/result`` (folded into
    ``refs/tidegate/keep`` when the run ends: ``workspace.keep``) (a commit of the
    candidate tree on T0): what ``tidegate apply`` lands and ``tidegate undo`` reverses,
    safe from ``git gc`` while the ref stands."""
    tree = state.attempt.candidate_tree
    if tree is None:
        return
    commit = write_commit(
        state.repo, tree, state.snapshot.commit, f"tidegate result of run {state.run_id}"
    )
    state.repo.git.update_ref(result_ref(state.run_id), commit)


def _record_applied(state: RunState, ops: list[PlannedOp], unchanged: list[str]) -> None:
    for op in ops:
        state.applied_files.append(
            AppliedFile(
                path=op.path,
                action="delete" if op.new.kind == "missing" else "write",
                merged=op.merged,
                before_sha256=_sha(op.old.content),
                after_sha256=_sha(op.new.content),
            )
        )
    for path in unchanged:
        state.applied_files.append(
            AppliedFile(
                path=path, action="unchanged", merged=False, before_sha256=None, after_sha256=None
            )
        )


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
    rejects, directory, note = write_rejects(state.repo, state.run_id, conflicts)
    state.rejects[:] = rejects
    state.rejects_dir = directory
    if note is not None:
        state.notes.append(note)


def write_rejects(
    repo: Repository, label: str, conflicts: list[Conflict]
) -> tuple[list[str], Path, str | None]:
    """One ``.rej`` per conflict under ``.tidegate/rejects/<label>/``; when ``.tidegate``
    is not a plain directory (a symlink out of the repository, a file), under the git
    directory instead: never through a symlink, and the conflict is still a conflict.
    Returns the reject paths, their directory and a note when they went elsewhere."""
    try:
        rejects, directory = _write_rejects_under(
            label, conflicts, LocalFS(repo.root), ".tidegate/rejects"
        )
        return rejects, directory, None
    except UnsafePathError as exc:
        rejects, directory = _write_rejects_under(
            label, conflicts, LocalFS(repo.git_dir), "tidegate/rejects"
        )
        note = f"rejects written to {directory}, not .tidegate/ ({exc})"
        return [str(repo.git_dir / rel) for rel in rejects], directory, note


def _write_rejects_under(
    label: str, conflicts: list[Conflict], fs: LocalFS, top: str
) -> tuple[list[str], Path]:
    base = f"{top}/{label}"
    rejects = []
    for c in conflicts:
        header = f"# tidegate could not apply this change to {c.path}: {c.reason}\n"
        rel = f"{base}/{c.path}.rej"
        fs.write_file(
            rel,
            (header + c.rejected_diff).encode("utf-8", "surrogateescape"),
            0o644,
            ".tidegate-tmp-rej",
        )
        rejects.append(rel)
    return rejects, fs.root / base
