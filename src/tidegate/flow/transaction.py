"""The transaction runner: bootstrap, attempts with retries, terminal failure mapping,
cleanup, and the final FlowReport.

Bootstrap (run lock, T0 snapshot, shadow worktree) changes nothing in the user's work tree
or index; if it fails the run ends with nothing applied. An attempt is retried only when
its error class is retryable and the condition changed (new feedback, a new proposal).
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from tidegate.config import load_config
from tidegate.errors import ErrorClass, GitError, PhaseError, RepositoryLockedError, UsageError
from tidegate.flow.modes import Mode, fs_mode
from tidegate.flow.pipeline import PhaseObserver, run_attempt
from tidegate.flow.report import (
    AttemptEvent,
    ChangedFile,
    FindingOut,
    FlowReport,
    PhaseEvent,
    VerifyOut,
)
from tidegate.flow.request import RunRequest
from tidegate.flow.state import AttemptState, RunState
from tidegate.git import Git
from tidegate.planners import Planner, make_planner
from tidegate.workspace.changes import PathChange, Version, worktree_forms
from tidegate.workspace.fs import LocalFS, ReadOnlyFS, WorkspaceFS
from tidegate.workspace.journal import pending_journals
from tidegate.workspace.lock import RunLock
from tidegate.workspace.repo import Repository, discover
from tidegate.workspace.shadow import SCRATCH_PREFIX, ShadowWorktree
from tidegate.workspace.snapshot import ensure_excluded, take_snapshot


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def execute(
    request: RunRequest, observer: PhaseObserver | None = None, planner: Planner | None = None
) -> FlowReport:
    """Run ``request`` to completion. Usage errors raise; every run failure is a report."""
    started = time.monotonic()
    repo = discover(request.repo)
    config = load_config(repo.root)
    if planner is None:
        planner = make_planner(
            request.planner,
            request.objective,
            request.objective_base,
            needs_edits=request.mode is not Mode.REVIEW,
            source=request.objective_source,
        )
    run_id = new_run_id()
    lock = RunLock(repo.runtime_dir, run_id)
    try:
        lock.acquire()
    except RepositoryLockedError as exc:
        return _bootstrap_failure(
            request, repo, run_id, planner, ErrorClass.RESOURCE_LOCK_ERROR, str(exc), started
        )
    pending = pending_journals(repo.runtime_dir)
    if pending:
        lock.release()
        raise UsageError(
            f"an apply-back interrupted by a crash is pending (run {pending[0].name}); "
            "run `tidegate recover` (or `tidegate recover --rollback`) first"
        )
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{run_id}-"))
    shadow: ShadowWorktree | None = None
    try:
        try:
            ensure_excluded(repo)
            snapshot = take_snapshot(repo, run_id, scratch)
            shadow = ShadowWorktree.acquire(
                repo, snapshot.commit, run_id, pool=request.warm_shadow or config.shadow.pool
            )
        except (GitError, OSError) as exc:
            return _bootstrap_failure(
                request, repo, run_id, planner, ErrorClass.UNKNOWN, str(exc), started
            )
        workspace: WorkspaceFS = LocalFS(repo.root)
        if request.mode is Mode.REVIEW:
            workspace = ReadOnlyFS(workspace)
        state = RunState(
            request=request,
            run_id=run_id,
            repo=repo,
            snapshot=snapshot,
            shadow=shadow,
            workspace=workspace,
            planner=planner,
            scratch=scratch,
            config=config,
        )
        events: list[PhaseEvent] = []
        error = _attempts(state, events, observer)
        if lock.took_over:
            state.notes.append(
                f"took over a stale run lock left by pid {lock.took_over.get('pid')}"
            )
        if shadow.reused:
            state.notes.append(f"reused the warm shadow {shadow.path}")
        if request.keep_shadow or shadow.pooled:
            state.notes.append(f"shadow kept at {shadow.path}")
        return _report(state, events, error, started)
    finally:
        if shadow is not None:
            shadow.release(keep=request.keep_shadow)
        lock.release()
        shutil.rmtree(scratch, ignore_errors=True)


def _attempts(
    state: RunState, events: list[PhaseEvent], observer: PhaseObserver | None
) -> PhaseError | None:
    previous_condition: str | None = None
    error: PhaseError | None = None
    for number in range(1, state.request.max_attempts + 1):
        state.attempt = AttemptState(number)
        start = time.monotonic()
        error = run_attempt(state, events, observer)
        state.attempt_events.append(_attempt_event(state, events, error, start))
        if error is None:
            return None
        if state.attempt.proposal is not None:
            state.failed_proposals.setdefault(state.attempt.proposal.fingerprint(), number)
        if not error.retryable:
            return error
        condition = f"{error.error_class.value}\n{error.feedback}"
        if condition == previous_condition:
            state.notes.append(
                f"attempt {number} failed exactly like attempt {number - 1}; not retrying "
                "without a changed condition"
            )
            return error
        previous_condition = condition
    return error


def _attempt_event(
    state: RunState, events: list[PhaseEvent], error: PhaseError | None, started: float
) -> AttemptEvent:
    attempt = state.attempt
    return AttemptEvent(
        attempt=attempt.number,
        status="failed" if error else "succeeded",
        failure_phase=_failure_phase(events, attempt.number) if error else None,
        error_class=error.error_class.value if error else None,
        retryable=error.retryable if error else None,
        proposal_sha256=attempt.proposal.fingerprint() if attempt.proposal else None,
        candidate_tree=attempt.candidate_tree,
        diagnostics=len(attempt.diagnosis.diagnostics) if attempt.diagnosis else 0,
        feedback_chars=attempt.feedback_chars,
        duration_ms=round((time.monotonic() - started) * 1000, 2),
    )


def _failure_phase(events: list[PhaseEvent], attempt: int) -> str | None:
    """The phase that failed the attempt (not a recovery phase that ran after it)."""
    return next(
        (e.phase for e in events if e.attempt == attempt and e.status == "failed"),
        None,
    )


def _report(
    state: RunState, events: list[PhaseEvent], error: PhaseError | None, started: float
) -> FlowReport:
    attempt = state.attempt
    status = "succeeded"
    if error is not None:
        status = "conflict" if error.error_class is ErrorClass.CONFLICT else "failed"
    failure_phase = _failure_phase(events, attempt.number) if error else None
    diff, changed = "", []
    if attempt.candidate_tree is not None and state.request.mode is not Mode.REVIEW:
        diff = final_diff(state.repo.git, state.snapshot.commit, attempt.candidate_tree)
        changed = changed_files(state.repo.git, attempt.changes)
    verify = None
    if attempt.verify is not None and state.request.verify:
        verify = VerifyOut(
            command=state.request.verify,
            exit_code=attempt.verify.exit_code,
            timed_out=attempt.verify.timed_out,
            duration_s=round(attempt.verify.duration_s, 3),
        )
    return FlowReport(
        status=status,  # type: ignore[arg-type]
        mode=state.request.mode.value,
        run_id=state.run_id,
        repo=str(state.repo.root),
        attempts=attempt.number,
        max_attempts=state.request.max_attempts,
        failure_phase=failure_phase,
        error_class=error.error_class.value if error else None,
        message=error.message if error else _success_message(state),
        fs_mode=fs_mode(state.request.mode),  # type: ignore[arg-type]
        planner=state.planner.name,
        t0_ref=state.snapshot.ref,
        t0_commit=state.snapshot.commit,
        head=state.snapshot.head,
        diff=diff,
        diff_sha256=hashlib.sha256(diff.encode("utf-8", "surrogateescape")).hexdigest()
        if diff
        else None,
        changed_files=changed,
        applied_files=state.applied_files,
        rejects=state.rejects,
        rejects_dir=str(state.rejects_dir) if state.rejects_dir else None,
        findings=[FindingOut(**f.__dict__) for f in state.findings],
        feedback=state.feedback,
        verify=verify,
        attempt_events=state.attempt_events,
        phases=events,
        notes=state.notes,
        duration_s=round(time.monotonic() - started, 3),
    )


def _success_message(state: RunState) -> str:
    if state.request.mode is Mode.REVIEW:
        return f"review finished with {len(state.findings)} finding(s); nothing was changed"
    written = sum(1 for f in state.applied_files if f.action != "unchanged")
    return f"verified change applied as unstaged edits to {written} path(s)"


def final_diff(git: Git, t0: str, tree: str) -> str:
    res = git.run(
        "diff",
        "--binary",
        "--no-renames",
        "--full-index",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        t0,
        tree,
    )
    return res.stdout.decode("utf-8", "surrogateescape")


def changed_files(git: Git, changes: list[PathChange]) -> list[ChangedFile]:
    """Each changed path with the SHA-256 of its work-tree content on both sides."""
    forms = worktree_forms(git, changes)

    def sha(version: Version | None, path: str) -> str | None:
        if version is None:
            return None
        data = forms.get((version.blob, path), version.blob.encode())  # submodule: its commit
        return hashlib.sha256(data).hexdigest()

    return [
        ChangedFile(
            path=c.path,
            action=c.action,  # type: ignore[arg-type]
            before_sha256=sha(c.before, c.path),
            after_sha256=sha(c.after, c.path),
            before_mode=c.before.mode if c.before else None,
            after_mode=c.after.mode if c.after else None,
        )
        for c in changes
    ]


def _bootstrap_failure(
    request: RunRequest,
    repo: Repository,
    run_id: str,
    planner: Planner,
    error_class: ErrorClass,
    message: str,
    started: float,
) -> FlowReport:
    return FlowReport(
        status="failed",
        mode=request.mode.value,
        run_id=run_id,
        repo=str(repo.root),
        attempts=0,
        max_attempts=request.max_attempts,
        failure_phase="BOOTSTRAP",
        error_class=error_class.value,
        message=message,
        fs_mode=fs_mode(request.mode),  # type: ignore[arg-type]
        planner=planner.name,
        head=repo.head,
        duration_s=round(time.monotonic() - started, 3),
    )
