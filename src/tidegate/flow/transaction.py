"""The transaction runner: bootstrap, attempts with retries, terminal failure mapping,
cleanup, and the final FlowReport.

Bootstrap (run lock, T0 snapshot, shadow worktree) changes nothing in the user's work tree
or index; if it fails the run ends with nothing applied. An attempt is retried only when
its error class is retryable and the condition changed (new feedback, a new proposal).

With a ``RunRecorder`` the run is durable: its start, every phase boundary and every
attempt end are flushed to the trace with a checkpoint, and the run counts as finished only
once the store has acknowledged its final report. A store that fails (or commits without
acknowledging) turns any outcome into PERSISTENCE_ERROR; a store failure before APPLY_BACK
stops the run before the work tree is touched. Ctrl-C pauses a recorded run at its last
checkpoint (status ``paused``, exit code 130); ``tidegate resume`` continues it.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tidegate.config import load_policy
from tidegate.config.records import TidegateConfig
from tidegate.disk.faults import maybe_crash
from tidegate.errors import (
    ErrorClass,
    GitError,
    PersistenceError,
    PhaseError,
    RepositoryLockedError,
    UsageError,
)
from tidegate.exec.containment import policy_for, probe, uncontained_reason
from tidegate.exec.guard import GuardRefused, admit
from tidegate.flow import headstart
from tidegate.flow.headstart import new_run_id
from tidegate.flow.phases.planning import RepeatedProposal
from tidegate.flow.pipeline import (
    PhaseObserver,
    ResumePoint,
    RunRecorder,
    deferred_interrupts,
    run_attempt,
)
from tidegate.flow.policy_record import effective_policy
from tidegate.flow.progress import (
    MODEL_HASHES,
    LoopState,
    Restored,
    RunBlobs,
    RunInputs,
    capture,
    config_sha256,
    phase_facts,
    planner_inputs_sha256,
    request_bytes,
)
from tidegate.flow.request import verify_clearance
from tidegate.flow.state import AttemptState, RunState
from tidegate.git.command import Git
from tidegate.planners import Planner, planner_for
from tidegate.records.modes import Mode, fs_mode
from tidegate.records.report import (
    AttemptEvent,
    ChangedFile,
    FindingOut,
    FlowReport,
    PhaseEvent,
    VerifyOut,
)
from tidegate.records.request import RunRequest
from tidegate.workspace.changes import PathChange, Version, worktree_forms
from tidegate.workspace.claims import release as release_claim
from tidegate.workspace.fs import LocalFS, ReadOnlyFS, WorkspaceFS
from tidegate.workspace.journal import pending_journals
from tidegate.workspace.lock import LockFileError, RunLock
from tidegate.workspace.repo import Repository, discover
from tidegate.workspace.shadow import PoolCleaning, ShadowWorktree
from tidegate.workspace.shadow.leftovers import make_scratch
from tidegate.workspace.snapshot import (
    T0Snapshot,
    ensure_excluded,
    record_snapshot,
    take_snapshot,
)


def execute(
    request: RunRequest,
    observer: PhaseObserver | None = None,
    planner: Planner | None = None,
    recorder: RunRecorder | None = None,
) -> FlowReport:
    """Run ``request`` to completion. Usage errors raise; every run failure is a report."""
    started = time.monotonic()
    head = headstart.adopt(request.repo)
    try:
        return _execute(request, head, started, observer, planner, recorder)
    finally:
        if head is not None:
            head.drop()  # whatever of it the run did not take over


def _execute(
    request: RunRequest,
    head: headstart.HeadStart | None,
    started: float,
    observer: PhaseObserver | None,
    planner: Planner | None,
    recorder: RunRecorder | None,
) -> FlowReport:
    # An adopted head start is complete: repository, lock, scratch and trees are all there.
    repo = head.repo if head is not None and head.repo is not None else discover(request.repo)
    # The policy is the user's: read once, here, from the work tree as the run starts.
    loaded = load_policy(repo.root)
    config = loaded.config
    policy = effective_policy(loaded, request)
    # What judged the run, on every report: the policy, and what of the repository's was not.
    judged = {"effective_policy": policy, "notes": list(loaded.ignored)}
    if planner is None:
        planner = planner_for(request, recorder=recorder, config=config)
    run_id = head.run_id if head is not None else new_run_id()
    if refusal := containment_refusal(request, config):
        # Refused before the lock, the snapshot, or any planning (and model spending).
        return finish_report(
            recorder,
            _bootstrap_failure(
                request, repo, run_id, planner, ErrorClass.CAPABILITY_MISMATCH, refusal, started
            ).model_copy(update=judged),
        )
    lock = RunLock(repo.runtime_dir, run_id)
    try:
        if head is not None:
            assert head.lock is not None
            lock, head.lock = head.lock, None  # taken over: released below, as our own
        else:
            lock.acquire()
    except RepositoryLockedError as exc:
        return finish_report(
            recorder,
            _bootstrap_failure(
                request, repo, run_id, planner, ErrorClass.RESOURCE_LOCK_ERROR, str(exc), started
            ).model_copy(update=judged),
        )
    except LockFileError as exc:
        return finish_report(
            recorder,
            _bootstrap_failure(
                request, repo, run_id, planner, ErrorClass.PERSISTENCE_ERROR, str(exc), started
            ).model_copy(update=judged),
        )
    pending = pending_journals(repo.runtime_dir)
    if pending:
        lock.release()
        raise UsageError(
            f"an apply-back interrupted by a crash is pending (run {pending[0].name}); "
            "run `tidegate recover` (or `tidegate recover --rollback`) first"
        )
    scratch: Path | None = None
    shadow: ShadowWorktree | None = None
    warm: PoolCleaning | None = None
    pool = request.warm_shadow or config.shadow.pool
    # The long-lived cat-file and update-ref (``Git.kept_processes``) serve the bootstrap
    # (T0's refs, the shadow's move) as well as every phase; they end before the lock.
    kept = contextlib.ExitStack()
    try:
        kept.enter_context(repo.git.kept_processes())
        try:
            if head is not None:
                # T0's trees were taken, and the warm shadow cleaned, beside the imports.
                assert head.trees is not None and head.scratch is not None
                scratch, head.scratch = head.scratch, None
                cleaning, head.cleaning = head.cleaning, None
                if cleaning is not None and not pool:
                    cleaning.wait()
                warm = cleaning if pool else None
                if pool and warm is None:
                    warm = PoolCleaning.start(repo)
                excluded = True
                snapshot = record_snapshot(repo, run_id, head.trees)
            else:
                scratch = make_scratch(repo, run_id)
                excluded = ensure_excluded(repo)
                # The warm shadow's own scan runs beside T0's scan of the main tree.
                warm = PoolCleaning.start(repo) if pool else None
                snapshot = take_snapshot(repo, run_id, scratch)
            shadow = ShadowWorktree.acquire(repo, snapshot.commit, run_id, pool=pool, warm=warm)
        except (GitError, OSError) as exc:
            return finish_report(
                recorder,
                _bootstrap_failure(
                    request, repo, run_id, planner, ErrorClass.UNKNOWN, str(exc), started
                ).model_copy(update=judged),
            )
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM before the first checkpoint: nothing to pause; the
            # half-made shadow is already gone (ShadowWorktree removes it on the way out).
            message = (
                "interrupted while preparing the run (Ctrl-C or SIGTERM); nothing was "
                "changed and no shadow was kept"
            )
            return finish_report(
                recorder,
                _bootstrap_failure(
                    request, repo, run_id, planner, ErrorClass.CANCELLED, message, started
                ).model_copy(update=judged),
            )
        state = new_state(request, run_id, repo, snapshot, shadow, planner, scratch, config)
        state.notes.extend(loaded.ignored)
        if not excluded:
            state.notes.append(
                ".git/info/exclude is not a plain file (a symlink?): .tidegate/ was not added"
            )
        state.policy = policy
        driver = Driver(state, recorder, started)
        return driver.run(observer, driver.start, closing_notes(state, lock, shadow))
    finally:
        kept.close()
        if warm is not None:
            warm.wait()  # no git may still run in the pooled shadow once the lock is gone
        if shadow is not None:
            shadow.release(keep=request.keep_shadow)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        release_claim(repo, run_id)
        lock.release()


def new_state(
    request: RunRequest,
    run_id: str,
    repo: Repository,
    snapshot: T0Snapshot,
    shadow: ShadowWorktree,
    planner: Planner,
    scratch: Path,
    config: TidegateConfig,
) -> RunState:
    workspace: WorkspaceFS = LocalFS(repo.root)
    if request.mode is Mode.REVIEW:
        workspace = ReadOnlyFS(workspace)
    return RunState(
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


def closing_notes(
    state: RunState, lock: RunLock, shadow: ShadowWorktree
) -> Callable[[], list[str]]:
    """The notes about bootstrap that go after the attempts' own notes."""

    def notes() -> list[str]:
        out = []
        if lock.took_over:
            out.append(f"took over a stale run lock left by pid {lock.took_over.get('pid')}")
        if shadow.reused:
            how = (
                f"by undoing the {shadow.undone} path(s) the last run wrote"
                if shadow.undone is not None
                else "cleaned in full"
            )
            out.append(f"reused the warm shadow {shadow.path} ({how})")
        if state.request.keep_shadow or shadow.pooled:
            out.append(f"shadow kept at {shadow.path}")
        return out

    return notes


def planner_hashes(planner: Planner) -> dict[str, str | None]:
    """The prompt/registry/effect-policy/model hashes a model-driven planner runs under
    (all None for planners without a model)."""
    hashes: dict[str, str | None] = dict.fromkeys(MODEL_HASHES)
    own = getattr(planner, "input_hashes", None)
    if callable(own):
        hashes.update(own())
    return hashes


def workspace_identity(root: Path, snapshot: T0Snapshot | None = None) -> dict[str, str | None]:
    """The workspace fingerprint and the digests it is made of (HEAD, tree, staged).

    With the run's T0 ``snapshot`` it is computed from the trees T0 already built (the
    same value, without hashing the work tree again)."""
    from tidegate.workspace.fingerprint import fingerprint_details, git_fingerprint

    if snapshot is not None and snapshot.tree is not None and snapshot.index_tree is not None:
        details = git_fingerprint(snapshot.head, snapshot.tree, "tree:" + snapshot.index_tree)
    else:
        details = fingerprint_details(root)
    return {
        "value": details.value,
        "method": details.method,
        "head": details.head,
        "tree": details.tree,
        "index": details.index,
    }


@dataclass
class Driver:
    """Runs the attempts of one execution of a run and keeps its durable record."""

    state: RunState
    recorder: RunRecorder | None
    started: float
    events: list[PhaseEvent] = field(default_factory=list)
    loop: LoopState = field(default_factory=LoopState)
    inputs: RunInputs | None = None
    last_saved: dict[str, Any] | None = None
    """The state of the last durable checkpoint: what a pause resumes from."""
    failed: dict[int, AttemptState] = field(default_factory=dict)
    """The failed attempts of this execution: one a repeated proposal points back to
    decides the run."""
    blobs: RunBlobs = field(init=False)

    def __post_init__(self) -> None:
        self.blobs = RunBlobs(self.state.repo, self.state.run_id)

    # -- the record ---------------------------------------------------------------------

    def start(self) -> None:
        """Record a new run: its inputs, its start, and the first checkpoint."""
        if self.recorder is None:
            return
        state, request = self.state, self.state.request
        try:
            fingerprint = workspace_identity(state.repo.root, state.snapshot)
            # Crash tests: the process dies while the evidence is being captured.
            maybe_crash("run.evidence")
            self.inputs = RunInputs(
                fingerprint=fingerprint,
                request=self.blobs.keep("request", request_bytes(request)),
                planner_sha256=planner_inputs_sha256(request),
                config_sha256=config_sha256(state.config),
                model_hashes=planner_hashes(state.planner),
            )
        except (GitError, OSError) as exc:
            # Without this evidence no checkpoint can be trusted: the run must not go on.
            raise PersistenceError(f"could not capture the workspace evidence: {exc}") from exc
        self.recorder.begin(
            state.run_id,
            str(state.repo.root),
            request.mode.value,
            request_summary(request),
            resumed=False,
        )
        self.recorder.event(
            "run.started",
            payload={
                "mode": request.mode.value,
                "planner": state.planner.name,
                "max_attempts": request.max_attempts,
                "verify": request.verify is not None,
                "objective_sha256": hashlib.sha256(request.objective.encode()).hexdigest(),
            },
            meta={
                "t0_commit": state.snapshot.commit,
                "head": state.snapshot.head,
                "shadow": str(state.shadow.path),
            },
        )
        if state.policy is not None:
            self.recorder.event("policy.effective", payload=state.policy.model_dump(mode="json"))
        self.loop.attempt_closed = True  # "attempt 0" is over: a resume starts attempt 1
        with deferred_interrupts():
            self.checkpoint("bootstrap")

    def checkpoint(self, reason: str) -> None:
        if self.recorder is None:
            return
        assert self.inputs is not None
        saved = capture(
            self.state,
            self.events,
            self.inputs,
            self.loop,
            self.blobs,
            tool_calls=self.recorder.tool_calls(),
        )
        self.recorder.checkpoint(reason, saved)
        self.last_saved = saved

    def boundary(self, state: RunState, events: list[PhaseEvent], phase: str) -> None:
        """After each phase: its trace event and a checkpoint, durably."""
        if self.recorder is None:
            return
        event = events[-1]
        self.recorder.event(
            "phase.finished",
            attempt=event.attempt,
            phase=event.phase,
            payload=phase_facts(state, event),
            meta={"duration_us": round(event.duration_ms * 1000), "detail": event.detail},
        )
        self.loop.attempt_closed = False
        self.checkpoint("phase")

    # -- the attempts -------------------------------------------------------------------

    def run(
        self,
        observer: PhaseObserver | None,
        begin: Callable[[], None],
        notes: Callable[[], list[str]] | None = None,
        restored: Restored | None = None,
    ) -> FlowReport:
        try:
            begin()
            error = self._attempts(observer, restored)
        except PersistenceError as exc:
            return finish_report(self.recorder, self._persistence_failure(exc))
        except KeyboardInterrupt:
            if self.recorder is None or not self.recorder.pausable or self.last_saved is None:
                raise
            return self._pause()
        if notes is not None:
            self.state.notes.extend(notes())
        deciding = None
        if isinstance(error, RepeatedProposal):
            deciding = self.failed.get(error.earlier)
        report = _report(self.state, self.events, error, self.started, deciding)
        return finish_report(self.recorder, report)

    def _attempts(
        self, observer: PhaseObserver | None, restored: Restored | None
    ) -> PhaseError | None:
        state = self.state
        first, point = 1, None
        if restored is not None:
            if restored.resume is None:  # the attempt had closed: its decision stands
                if self.loop.stop:
                    return state.attempt.error
                first = state.attempt.number + 1
            else:
                first, point = state.attempt.number, restored.resume
        error: PhaseError | None = None
        for number in range(first, state.request.max_attempts + 1):
            resume: ResumePoint | None = point if number == first else None
            if resume is None:
                state.attempt = AttemptState(number)
            start = time.monotonic()
            error = run_attempt(state, self.events, observer, self.recorder, self.boundary, resume)
            if self._close_attempt(error, start):
                return error
        return error

    def _close_attempt(self, error: PhaseError | None, start: float) -> bool:
        """Record the attempt; decide (and record) whether the run stops with it."""
        state = self.state
        number = state.attempt.number
        attempt_event = _attempt_event(state, self.events, error, start)
        state.attempt_events.append(attempt_event)
        stop = True
        if error is not None:
            self.failed[number] = state.attempt
            if state.attempt.proposal is not None:
                state.failed_proposals.setdefault(state.attempt.proposal.fingerprint(), number)
            if error.retryable:
                # A digest, so that the checkpoint holds no feedback text twice.
                condition = hashlib.sha256(
                    f"{error.error_class.value}\n{error.feedback}".encode(
                        "utf-8", "surrogateescape"
                    )
                ).hexdigest()
                if condition == self.loop.previous_condition:
                    state.notes.append(
                        f"attempt {number} failed exactly like attempt {number - 1}; not "
                        "retrying without a changed condition"
                    )
                else:
                    self.loop.previous_condition = condition
                    stop = number >= state.request.max_attempts
        self.loop.attempt_closed, self.loop.stop = True, stop
        if self.recorder is not None:
            facts = attempt_event.model_dump(mode="json", exclude={"duration_ms", "feedback_chars"})
            self.recorder.event(
                "attempt.finished",
                attempt=number,
                payload=facts,
                meta={
                    "duration_us": round(attempt_event.duration_ms * 1000),
                    "feedback_chars": attempt_event.feedback_chars,
                },
            )
            with deferred_interrupts():
                self.checkpoint("attempt")
        return stop

    # -- endings ------------------------------------------------------------------------

    def _pause(self) -> FlowReport:
        """Ctrl-C: record a pause checkpoint (the last boundary's state, with the workspace
        as it is now) and report the run as paused."""
        assert self.recorder is not None and self.last_saved is not None
        with deferred_interrupts(deliver=False):
            saved = copy.deepcopy(self.last_saved)
            counters = saved["counters"]
            attempt = saved["attempt"]
            after = attempt["completed"][-1] if attempt["completed"] else None
            try:
                try:
                    identity = workspace_identity(self.state.repo.root)
                except (GitError, OSError) as exc:
                    raise PersistenceError(
                        f"could not capture the workspace evidence: {exc}"
                    ) from exc
                saved["inputs"]["workspace_fingerprint"] = identity
                self.recorder.event(
                    "run.paused",
                    attempt=counters["attempt"],
                    payload={"attempt": counters["attempt"], "after": after},
                )
                self.recorder.checkpoint("pause", saved)
            except PersistenceError as exc:
                return finish_report(self.recorder, self._persistence_failure(exc))
            where = f"after {after}" if after else "at the start"
            base = _report(self.state, self.events, None, self.started)
            report = base.model_copy(
                update={
                    "status": "paused",
                    "attempts": counters["attempt"],
                    "message": f"paused {where} of attempt {counters['attempt']}; continue "
                    f"with `tidegate resume {self.state.run_id}`",
                    "diff": "",
                    "diff_sha256": None,
                    "changed_files": [],
                }
            )
            return finish_report(self.recorder, report)

    def _persistence_failure(self, exc: PersistenceError) -> FlowReport:
        error = PhaseError(
            ErrorClass.PERSISTENCE_ERROR,
            f"the run's state could not be stored durably, so the run stopped: {exc}",
            retryable=False,
        )
        report = _report(self.state, self.events, error, self.started)
        phase = self.events[-1].phase if self.events else "BOOTSTRAP"
        return report.model_copy(update={"failure_phase": report.failure_phase or phase})


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


def request_summary(request: RunRequest) -> Mapping[str, object]:
    """What ``tidegate runs`` shows about a request (the store redacts it)."""
    first_line = request.objective.strip().splitlines()[0] if request.objective.strip() else ""
    return {
        "objective": first_line[:200],
        "objective_source": request.objective_source,
        "planner": request.planner,
        "verify": request.verify,
        "max_attempts": request.max_attempts,
    }


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
    status = "succeeded"
    if error is not None:
        status = "conflict" if error.error_class is ErrorClass.CONFLICT else "failed"
    shown = attempt
    message = error.message if error else _success_message(state)
    if deciding is not None and deciding.error is not None:
        shown, error = deciding, deciding.error
        message = (
            f"{error.message} (attempt {attempt.number} proposed the same change again; "
            "stopped instead of retrying)"
        )
    failure_phase = _failure_phase(events, shown.number) if error else None
    diff, changed = "", []
    if shown.candidate_tree is not None and state.request.mode is not Mode.REVIEW:
        diff = final_diff(state.repo.git, state.snapshot.commit, shown.candidate_tree)
        changed = changed_files(state.repo.git, shown.changes, shown.forms)
    verify = None
    if shown.verify is not None and state.request.verify:
        verify = VerifyOut(
            command=state.request.verify,
            exit_code=shown.verify.exit_code,
            timed_out=shown.verify.timed_out,
            duration_s=round(shown.verify.duration_s, 3),
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
        message=message,
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
        containment=state.containment,
        effective_policy=state.policy,
        attempt_events=state.attempt_events,
        phases=events,
        notes=state.notes,
        duration_s=round(time.monotonic() - started, 3),
    )


def _success_message(state: RunState) -> str:
    if state.request.mode is Mode.REVIEW:
        return f"review finished with {len(state.findings)} finding(s); nothing was changed"
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


def containment_refusal(request: RunRequest, config: TidegateConfig) -> str | None:
    """Why a run whose verification cannot run as the user's policy says would be
    refused anyway, or None: containment required and unavailable, or a command or code
    that is not the user's that would run uncontained without approval (the guard's own
    rule, ``tidegate.exec.guard``, asked here before anything is done or spent)."""
    if request.verify is None:
        return None
    mode = request.containment or config.containment.mode
    if mode == "required":
        report = probe()
        if report.verified:
            return None
        return f"containment is required but {report.reason}; nothing was run"
    # the same question VERIFY asks the guard (flow/phases/verify.run_verify)
    why = uncontained_reason(policy_for(mode, network=request.network, writable=()))
    if why is None:
        return None
    try:
        admit(verify_clearance(request, config.containment.mode), why)
    except GuardRefused as exc:
        return str(exc)
    return None


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
