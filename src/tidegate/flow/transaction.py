"""The transaction runner: bootstrap, attempts with retries, terminal failure mapping,
cleanup, and the final FlowReport.

Bootstrap (the run's own lock, T0 snapshot, shadow worktree) changes nothing in the user's work tree
or index; if it fails the run ends with nothing applied. An attempt is retried only when
its error class is retryable and the condition changed (new feedback, a new proposal).

With a ``RunRecorder`` the run is durable: its start, every phase boundary and every
attempt end are flushed to the trace with a checkpoint, and the run counts as finished only
once the store has acknowledged its final report. A store that fails (or commits without
acknowledging) turns any outcome into PERSISTENCE_ERROR; a store failure before APPLY_BACK
stops the run before the work tree is touched. Ctrl-C pauses a recorded run at its last
checkpoint (status ``paused``, exit code 130); ``tidegate resume`` continues it.

The attempts and the durable record are ``driver``'s; the report is ``outcome``'s.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from tidegate.config import load_policy
from tidegate.config.records import LoadedConfig, TidegateConfig
from tidegate.errors import (
    ErrorClass,
    GitError,
    RepositoryLockedError,
    UsageError,
)
from tidegate.exec.containment import policy_for, probe, uncontained_reason
from tidegate.exec.guard import GuardRefused, admit
from tidegate.flow import headstart
from tidegate.flow.driver import Driver
from tidegate.flow.headstart import new_run_id
from tidegate.flow.outcome import bootstrap_failure, finish_report
from tidegate.flow.pipeline import PhaseObserver, RunRecorder
from tidegate.flow.policy_record import effective_policy
from tidegate.flow.rebase import rebasable, rebase
from tidegate.flow.request import verify_clearance
from tidegate.flow.retention import fold_ended
from tidegate.flow.state import RunState
from tidegate.planners import Planner, planner_for
from tidegate.records.modes import Mode, Phase
from tidegate.records.report import EffectivePolicyOut, FlowReport, PhaseEvent
from tidegate.records.request import RunRequest
from tidegate.workspace import landed
from tidegate.workspace.claims import release as release_claim
from tidegate.workspace.fs import LocalFS, ReadOnlyFS, WorkspaceFS
from tidegate.workspace.lock import LockFileError, RunLock, crashed_journal
from tidegate.workspace.prep_slots import PrepSlot, held_through, take_for
from tidegate.workspace.repo import Repository, discover
from tidegate.workspace.shadow import PoolCleaning, ShadowWorktree, acquire_shadow
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
    """Run ``request`` to completion. Usage errors raise; every run failure is a report.
    A conflict at APPLY_BACK with ``request.rebase`` left goes on as a rebase
    (``flow.rebase``): the last run's report is returned."""
    started = time.monotonic()
    head = headstart.adopt(request.repo)
    try:
        report = _execute(request, head, started, observer, planner, recorder)
    finally:
        if head is not None:
            head.drop()  # whatever of it the run did not take over

    def again(req: RunRequest, rebased: Planner) -> FlowReport:
        return _execute(req, None, time.monotonic(), observer, rebased, recorder)

    while rebasable(report, request):
        done = rebase(discover(request.repo), report, request, again)
        if done is None:
            break
        request, report = done
    return report


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
    judged = {"effective_policy": policy, "notes": [*request.notes, *loaded.ignored]}
    if planner is None:
        planner = planner_for(request, recorder=recorder, config=config)
    run_id = head.run_id if head is not None else new_run_id()
    boot = _Bootstrap(request, repo, run_id, planner, started, recorder, judged)
    if refusal := containment_refusal(request, config):
        # Refused before the lock, the snapshot, or any planning (and model spending).
        return boot.failed(ErrorClass.CAPABILITY_MISMATCH, refusal)
    lock = RunLock(repo.runtime_dir, run_id)
    try:
        if head is not None:
            assert head.lock is not None
            lock, head.lock = head.lock, None  # taken over: released below, as our own
        else:
            lock.acquire()
    except RepositoryLockedError as exc:
        return boot.failed(ErrorClass.RESOURCE_LOCK_ERROR, str(exc))
    except LockFileError as exc:
        return boot.failed(ErrorClass.PERSISTENCE_ERROR, str(exc))
    # Another run's apply-back in progress holds the landing lock and is not a crash.
    if pending := crashed_journal(repo.runtime_dir):
        lock.release()
        raise UsageError(
            f"an apply-back interrupted by a crash is pending (run {pending}); "
            "run `tidegate recover` (or `tidegate recover --rollback`) first"
        )
    lock.describe(mode=request.mode.value, planner=boot.planner.name, phase="BOOTSTRAP")
    return _run_locked(boot, head, loaded, policy, lock, observer)


class _Bootstrap(msgspec.Struct):
    """What a run starts with, and the report of a bootstrap that failed."""

    request: RunRequest
    repo: Repository
    run_id: str
    planner: Planner
    started: float
    recorder: RunRecorder | None
    judged: dict[str, object]
    """What judged the run (the effective policy, the ignored settings): on every report."""

    def failed(self, error_class: ErrorClass, message: str) -> FlowReport:
        report = bootstrap_failure(
            self.request, self.repo, self.run_id, self.planner, error_class, message, self.started
        )
        return finish_report(self.recorder, report.model_copy(update=self.judged))


class _Held(msgspec.Struct):
    """What the run holds while it runs, released in reverse order when it ends (the run
    lock last)."""

    repo: Repository
    run_id: str
    lock: RunLock
    keep_shadow: bool
    kept: contextlib.ExitStack = msgspec.field(default_factory=contextlib.ExitStack)
    scratch: Path | None = None
    shadow: ShadowWorktree | None = None
    warm: PoolCleaning | None = None
    slot: PrepSlot | None = None

    def release(self) -> None:
        if self.slot is not None:
            self.slot.release()
        self.kept.close()
        if self.warm is not None:
            self.warm.wait()  # no git may still run in the pooled shadow once the lock is gone
        if self.shadow is not None:
            self.shadow.release(keep=self.keep_shadow)
        if self.warm is not None:
            self.warm.release()  # the pool, when no shadow took it over
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        release_claim(self.repo, self.run_id)
        self.lock.release()


def _run_locked(
    boot: _Bootstrap,
    head: headstart.HeadStart | None,
    loaded: LoadedConfig,
    policy: EffectivePolicyOut,
    lock: RunLock,
    observer: PhaseObserver | None,
) -> FlowReport:
    """Under the run lock: T0, the shadow, the attempts; then release what the run held."""
    request, repo, config = boot.request, boot.repo, loaded.config
    pool = request.warm_shadow or config.shadow.pool
    held = _Held(repo, boot.run_id, lock, keep_shadow=request.keep_shadow)
    try:
        # The long-lived cat-file and update-ref (``Git.kept_processes``) serve the bootstrap
        # (T0's refs, the shadow's move) as well as every phase; they end before the lock.
        held.kept.enter_context(repo.git.kept_processes())
        try:
            snapshot, excluded, seen = _prepare(repo, boot.run_id, head, held, pool)
        except (GitError, OSError) as exc:
            return boot.failed(ErrorClass.UNKNOWN, str(exc))
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM before the first checkpoint: nothing to pause; the
            # half-made shadow is already gone (ShadowWorktree removes it on the way out).
            message = (
                "interrupted while preparing the run (Ctrl-C or SIGTERM); nothing was "
                "changed and no shadow was kept"
            )
            return boot.failed(ErrorClass.CANCELLED, message)
        shadow, scratch = held.shadow, held.scratch
        assert shadow is not None and scratch is not None
        state = new_state(
            request, boot.run_id, repo, snapshot, shadow, boot.planner, scratch, config
        )
        state.landed_seen = seen
        state.notes.extend((*request.notes, *loaded.ignored))
        if not excluded:
            state.notes.append(
                ".git/info/exclude is not a plain file (a symlink?): .tidegate/ was not added"
            )
        state.policy = policy
        if held.slot is not None and held.slot.gave_up:
            state.notes.append(
                f"every preparation slot stayed taken for {held.slot.waited_s:.0f}s "
                "(`tidegate status`); this run prepared without one"
            )
        driver = Driver(state, boot.recorder, boot.started)
        announced = Announced(lock, observer, held.slot, boot.planner.name)
        report = driver.run(announced, driver.start, closing_notes(state, lock, shadow))
        fold_ended(repo, boot.run_id, report.status, config.retention, boot.recorder)
        return report
    finally:
        held.release()


class Announced:
    """The caller's observer, plus the run's live registration kept up to date with the
    phase it is in (what ``tidegate status`` shows), and its preparation slot given back
    before the first phase that may wait on anything outside tidegate."""

    def __init__(
        self,
        lock: RunLock,
        inner: PhaseObserver | None,
        slot: PrepSlot | None = None,
        planner: str = "",
    ) -> None:
        self.lock = lock
        self.inner = inner
        self.slot = slot
        self.planner = planner

    def phase_started(self, attempt: int, phase: Phase) -> None:
        if self.slot is not None and not held_through(phase, self.planner):
            self.slot.release()
            self.slot = None
        self.lock.describe(phase=phase.value, attempt=attempt)
        if self.inner is not None:
            self.inner.phase_started(attempt, phase)

    def phase_finished(self, event: PhaseEvent) -> None:
        if self.inner is not None:
            self.inner.phase_finished(event)

    def __getattr__(self, name: str) -> Any:
        """The observer's optional parts (``command_output``) are the caller's."""
        return getattr(self.inner, name)


def _prepare(
    repo: Repository,
    run_id: str,
    head: headstart.HeadStart | None,
    held: _Held,
    pool: bool,
) -> tuple[T0Snapshot, bool, int]:
    """The scratch dir, T0 and the shadow (each kept in ``held`` as soon as it exists),
    taken over from the head start when there is one. Returns T0, whether
    ``.git/info/exclude`` holds ``.tidegate/``, and how many landings the work tree had
    seen before T0 (``workspace.landed``)."""
    if head is not None:
        # T0's trees were taken, and the warm shadow cleaned, beside the imports.
        assert head.trees is not None and head.scratch is not None
        held.slot, head.slot = head.slot, None
        held.scratch, head.scratch = head.scratch, None
        cleaning, head.cleaning = head.cleaning, None
        if cleaning is not None and not pool:
            cleaning.release()
        held.warm = cleaning if pool else None
        if pool and held.warm is None:
            held.warm = PoolCleaning.start(repo)
        excluded, seen = True, head.landed_seen
        snapshot = record_snapshot(repo, run_id, head.trees)
    else:
        held.slot = take_for(held.lock, repo.runtime_dir)
        held.scratch = scratch = make_scratch(repo, run_id)
        excluded = ensure_excluded(repo)
        seen = landed.count(repo.runtime_dir)  # before T0: a landing meanwhile counts
        # The warm shadow's own scan runs beside T0's scan of the main tree.
        held.warm = PoolCleaning.start(repo) if pool else None
        snapshot = take_snapshot(repo, run_id, scratch)
    held.shadow = acquire_shadow(repo, snapshot.commit, run_id, pool=pool, warm=held.warm)
    return snapshot, excluded, seen


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
