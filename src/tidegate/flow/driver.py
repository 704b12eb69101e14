"""One execution of a run: its attempts with retries, and its durable record (the start,
a checkpoint at every boundary, a pause on Ctrl-C)."""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from tidegate.disk.faults import maybe_crash
from tidegate.errors import ErrorClass, GitError, PersistenceError, PhaseError
from tidegate.flow.outcome import failing_phase, finish_report, run_report
from tidegate.flow.phases.planning import RepeatedProposal
from tidegate.flow.pipeline import (
    PhaseObserver,
    ResumePoint,
    RunRecorder,
    deferred_interrupts,
    run_attempt,
)
from tidegate.flow.progress import LoopState, capture, phase_facts
from tidegate.flow.progress_inputs import (
    RunBlobs,
    RunInputs,
    config_sha256,
    planner_hashes,
    planner_inputs_sha256,
    request_bytes,
    workspace_identity,
)
from tidegate.flow.progress_restore import Restored
from tidegate.flow.state import AttemptState, RunState
from tidegate.records.report import AttemptEvent, FlowReport, PhaseEvent
from tidegate.records.request import RunRequest


class Driver:
    """Runs the attempts of one execution of a run and keeps its durable record.
    ``last_saved``: the state of the last durable checkpoint, what a pause resumes from.
    ``failed``: the failed attempts of this execution (one a repeated proposal points back
    to decides the run)."""

    def __init__(
        self,
        state: RunState,
        recorder: RunRecorder | None,
        started: float,
        *,
        events: list[PhaseEvent] | None = None,
        loop: LoopState | None = None,
        inputs: RunInputs | None = None,
        last_saved: dict[str, Any] | None = None,
    ) -> None:
        self.state = state
        self.recorder = recorder
        self.started = started
        self.events: list[PhaseEvent] = [] if events is None else events
        self.loop = LoopState() if loop is None else loop
        self.inputs = inputs
        self.last_saved = last_saved
        self.failed: dict[int, AttemptState] = {}
        self.blobs = RunBlobs(state.repo, state.run_id)

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
        report = run_report(self.state, self.events, error, self.started, deciding)
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
            base = run_report(self.state, self.events, None, self.started)
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
        report = run_report(self.state, self.events, error, self.started)
        phase = self.events[-1].phase if self.events else "BOOTSTRAP"
        return report.model_copy(update={"failure_phase": report.failure_phase or phase})


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
        failure_phase=failing_phase(events, attempt.number) if error else None,
        error_class=error.error_class.value if error else None,
        retryable=error.retryable if error else None,
        proposal_sha256=attempt.proposal.fingerprint() if attempt.proposal else None,
        candidate_tree=attempt.candidate_tree,
        diagnostics=len(attempt.diagnosis.diagnostics) if attempt.diagnosis else 0,
        feedback_chars=attempt.feedback_chars,
        duration_ms=round((time.monotonic() - started) * 1000, 2),
    )
