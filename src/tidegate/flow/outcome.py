"""The run's outcome as a FlowReport: built from the run's state (or from a failed
bootstrap), and stored so that only an acknowledged report keeps its status."""

from __future__ import annotations

import hashlib
import time

from msgspec.structs import asdict

from tidegate.errors import ErrorClass, PersistenceError, PhaseError
from tidegate.flow.pipeline import RunRecorder, deferred_interrupts
from tidegate.flow.state import AttemptState, RunState
from tidegate.git.command import Git
from tidegate.planners import Planner
from tidegate.records.modes import Mode, fs_mode
from tidegate.records.report import ChangedFile, FindingOut, FlowReport, PhaseEvent, VerifyOut
from tidegate.records.request import RunRequest
from tidegate.workspace.changes import PathChange, Version, worktree_forms
from tidegate.workspace.keep import kept_spec
from tidegate.workspace.repo import Repository


def finish_report(recorder: RunRecorder | None, report: FlowReport) -> FlowReport:
    """Store the final report; only an acknowledged report keeps its status. On failure
    the run is reported (and, if the store still takes it, recorded) as PERSISTENCE_ERROR."""
    if recorder is None:
        return report
    with deferred_interrupts(deliver=False):
        try:
            return recorder.finish(report)
        except PersistenceError as exc:
            failed = _not_recorded(report, exc)
            try:
                return recorder.finish(failed)
            except PersistenceError:
                return failed


def _not_recorded(report: FlowReport, exc: PersistenceError) -> FlowReport:
    if report.error_class == ErrorClass.PERSISTENCE_ERROR.value:
        return report
    written = sum(1 for f in report.applied_files if f.action != "unchanged")
    applied = f"; the change was applied to {written} path(s) of your work tree" if written else ""
    return report.model_copy(
        update={
            "status": "failed",
            "error_class": ErrorClass.PERSISTENCE_ERROR.value,
            "failure_phase": report.failure_phase or "RECORD",
            "message": f"the run ended {report.status} but its record could not be stored "
            f"durably: {exc}{applied}",
        }
    )


def failing_phase(events: list[PhaseEvent], attempt: int) -> str | None:
    """The phase that failed the attempt (not a recovery phase that ran after it)."""
    return next(
        (e.phase for e in events if e.attempt == attempt and e.status == "failed"),
        None,
    )


def run_report(
    state: RunState,
    events: list[PhaseEvent],
    error: PhaseError | None,
    started: float,
    deciding: AttemptState | None = None,
) -> FlowReport:
    """The run's report. ``deciding``: the earlier failed attempt whose proposal the last
    one repeated. Its failure (phase, class, message), change and verification are the
    run's; the stop on the repeat is said after the message."""
    attempt = state.attempt
    status = "held" if state.request.hold and state.request.mode is not Mode.REVIEW else "succeeded"
    if error is not None:
        status = "conflict" if error.error_class is ErrorClass.CONFLICT else "failed"
    shown, error, message = _deciding_failure(state, error, deciding)
    failure_phase = failing_phase(events, shown.number) if error else None
    diff, changed = _change(state, shown)
    verify = _verify_out(state, shown)
    return FlowReport(
        status=status,  # type: ignore[arg-type]
        mode=state.request.mode.value,
        run_id=state.run_id,
        repo=str(state.repo.root),
        attempts=attempt.number,
        max_attempts=state.request.max_attempts,
        failure_phase=failure_phase,
        error_class=error.error_class.value if error else None,
        message=message,
        fs_mode=fs_mode(state.request.mode),  # type: ignore[arg-type]
        planner=state.planner.name,
        # Where T0 is once the run has ended (``workspace.keep``); a paused run's own ref.
        t0_ref=state.snapshot.ref if status == "paused" else kept_spec(state.run_id, "t0"),
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
        findings=[FindingOut(**asdict(f)) for f in state.findings],
        feedback=state.feedback,
        verify=verify,
        containment=state.containment,
        effective_policy=state.policy,
        attempt_events=state.attempt_events,
        phases=events,
        notes=state.notes,
        landing=state.landing,
        duration_s=round(time.monotonic() - started, 3),
    )


def _deciding_failure(
    state: RunState, error: PhaseError | None, deciding: AttemptState | None
) -> tuple[AttemptState, PhaseError | None, str]:
    """The attempt the report shows, its error and the run's message."""
    attempt = state.attempt
    shown = attempt
    message = error.message if error else _success_message(state)
    if deciding is not None and deciding.error is not None:
        shown, error = deciding, deciding.error
        message = (
            f"{error.message} (attempt {attempt.number} proposed the same change again; "
            "stopped instead of retrying)"
        )
    return shown, error, message


def _change(state: RunState, shown: AttemptState) -> tuple[str, list[ChangedFile]]:
    """The shown attempt's diff against T0 and its changed files (none in REVIEW)."""
    diff: str = ""
    changed: list[ChangedFile] = []
    if shown.candidate_tree is not None and state.request.mode is not Mode.REVIEW:
        diff = final_diff(state.repo.git, state.snapshot.commit, shown.candidate_tree)
        changed = changed_files(state.repo.git, shown.changes, shown.forms)
    return diff, changed


def _verify_out(state: RunState, shown: AttemptState) -> VerifyOut | None:
    if shown.verify is None or not state.request.verify:
        return None
    return VerifyOut(
        command=state.request.verify,
        exit_code=shown.verify.exit_code,
        timed_out=shown.verify.timed_out,
        duration_s=round(shown.verify.duration_s, 3),
    )


def _success_message(state: RunState) -> str:
    if state.request.mode is Mode.REVIEW:
        request = state.request
        if not (request.verify or state.findings or request.objective.strip() or request.model):
            return (
                "review checked nothing: no verify command (none given, configured or "
                "detected) and no objective or model to find anything; nothing was changed"
            )
        return f"review finished with {len(state.findings)} finding(s); nothing was changed"
    if state.request.hold:
        count = len(state.attempt.changes)
        what = "verified" if state.request.verify else "validated (unverified: no --verify)"
        return (
            f"{what} change held, not applied: {count} path(s); land it with `tidegate "
            f"apply {state.run_id}`, drop it with `tidegate discard {state.run_id}`"
        )
    written = sum(1 for f in state.applied_files if f.action != "unchanged")
    if not state.request.verify:
        # Validated (and its content checks passed), but no command verified it.
        return f"validated change applied, unverified (no --verify), as unstaged edits to {written} path(s)"
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


def changed_files(
    git: Git,
    changes: list[PathChange],
    forms: dict[tuple[str, str], bytes] | None = None,
) -> list[ChangedFile]:
    """Each changed path with the SHA-256 of its work-tree content on both sides
    (``forms``: the work-tree forms APPLY_BACK already read, when it ran)."""
    if forms is None:
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


def bootstrap_failure(
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
