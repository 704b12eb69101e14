"""One attempt: run the mode's phases in order and record one audit event per phase.

With a ``RunRecorder`` every phase boundary is durable: the phase's trace events and a
checkpoint of the run's state are flushed before the next phase starts, so a paused or
killed run resumes after its last finished phase. A ``ResumePoint`` says which phases of
the attempt already finished in an earlier execution; they are not run again.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Protocol

import msgspec

from tidegate.disk.faults import maybe_crash
from tidegate.errors import ErrorClass, PhaseError
from tidegate.flow.phases import PHASES
from tidegate.flow.state import RunState
from tidegate.records.modes import EFFECTS, MODE_PHASES, Effect, Phase, When
from tidegate.records.report import FlowReport, PhaseEvent


class PhaseObserver(Protocol):
    """Told about every phase as it starts and ends (progress output, audits, tests)."""

    def phase_started(self, attempt: int, phase: Phase) -> None: ...

    def phase_finished(self, event: PhaseEvent) -> None: ...

    # Optional: ``command_output(line)``, told the latest line of a phase's command as it
    # runs (VERIFY's), at most every 100 ms; raw text, to sanitise before printing.


class RunRecorder(Protocol):
    """Where a run's trace and checkpoints go (``tidegate.store.recorder.StoreRecorder``).

    ``event`` buffers; ``checkpoint`` and ``finish`` are durable when they return and raise
    ``PersistenceError`` when they cannot be. ``pausable``: Ctrl-C pauses the run at its
    last checkpoint instead of aborting it."""

    pausable: bool

    def begin(
        self, run_id: str, repo: str, mode: str, request: Mapping[str, object], *, resumed: bool
    ) -> None: ...

    def event(
        self,
        kind: str,
        *,
        attempt: int | None = None,
        phase: str | None = None,
        payload: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> None: ...

    def checkpoint(self, reason: str, state: Mapping[str, object]) -> None: ...

    def finish(self, report: FlowReport) -> FlowReport: ...

    def tool_calls(self) -> list[dict[str, object]]:
        """The run's recorded tool calls with their status and effects, kept in every
        checkpoint: a resumed run never dispatches a finished call again, and treats one
        that was dispatched but never finished as an unknown outcome."""
        ...


class ResumePoint(msgspec.Struct, frozen=True):
    """Where an attempt picks up: the phases that finished before, the failure if one
    happened, and the phases to run again because their effect did not survive (APPLY's
    shadow is rebuilt from T0 on resume)."""

    completed: tuple[str, ...] = ()
    failed: PhaseError | None = None
    redo: frozenset[str] = msgspec.field(default_factory=frozenset)

    def skips(self, phase: Phase) -> bool:
        return phase.value in self.completed and phase.value not in self.redo


Boundary = Callable[[RunState, list[PhaseEvent], str], None]
"""Called after each phase with the state, the events so far and the phase name."""


def run_attempt(
    state: RunState,
    events: list[PhaseEvent],
    observer: PhaseObserver | None,
    recorder: RunRecorder | None = None,
    boundary: Boundary | None = None,
    resume: ResumePoint | None = None,
) -> PhaseError | None:
    """Run one attempt; return the first phase error (None when every phase passed)."""
    failed: PhaseError | None = resume.failed if resume else None
    number = state.attempt.number
    state.command_output = getattr(observer, "command_output", None)
    for phase, when in MODE_PHASES[state.request.mode]:
        if not _due(when, failed) or (resume is not None and resume.skips(phase)):
            continue
        maybe_crash(f"phase.{phase.value}", number)
        if observer:
            observer.phase_started(number, phase)
        if recorder:
            recorder.event("phase.started", attempt=number, phase=phase.value)
        # A phase that writes the user's work tree is never abandoned halfway: Ctrl-C is
        # held until it is done, and then the run finishes rather than pausing.
        writes_workspace = EFFECTS[phase] is Effect.WORKSPACE
        with deferred_interrupts(writes_workspace, deliver=False) as held:
            event, error = _run_phase(state, phase)
        events.append(event)
        if error is not None:
            failed = _note_failure(state, phase, failed, error)
        if observer:
            observer.phase_finished(event)
        if boundary is not None:
            # The checkpoint is written whole; an interrupt meanwhile pauses right after it.
            with deferred_interrupts(deliver=not writes_workspace) as late:
                boundary(state, events, phase.value)
            held += late
        if held and writes_workspace:
            state.notes.append(f"Ctrl-C arrived during {phase.value}; the run finished instead")
    return failed


def _due(when: When, failed: PhaseError | None) -> bool:
    """Whether a phase scheduled ``when`` runs, given the attempt's failure so far."""
    if (when is When.ALWAYS and failed) or (when is When.ON_FAILURE and not failed):
        return False
    return not (when is When.ON_SUCCESS and failed)


def _run_phase(state: RunState, phase: Phase) -> tuple[PhaseEvent, PhaseError | None]:
    """Run one phase; its audit event and its error (None when it passed)."""
    start = time.monotonic()
    error: PhaseError | None = None
    detail = ""
    try:
        detail = PHASES[phase](state)
    except PhaseError as exc:
        error = exc
    except Exception as exc:  # fail fast: an unexpected error ends the run
        error = PhaseError(ErrorClass.UNKNOWN, f"{type(exc).__name__}: {exc}", retryable=False)
    event = PhaseEvent(
        attempt=state.attempt.number,
        phase=phase.value,
        effect=EFFECTS[phase].value,
        status="failed" if error else "ok",
        duration_ms=round((time.monotonic() - start) * 1000, 2),
        detail=error.message if error else detail,
        error_class=error.error_class.value if error else None,
    )
    return event, error


def _note_failure(
    state: RunState, phase: Phase, failed: PhaseError | None, error: PhaseError
) -> PhaseError:
    """The attempt's failure after ``phase`` raised ``error``: the first one stands."""
    if failed is None:
        state.attempt.error = error
        state.attempt.failed_phase = phase.value
        return error
    # A recovery phase failed too: the shadow can no longer be trusted.
    failed.retryable = False
    return failed


@contextmanager
def deferred_interrupts(active: bool = True, *, deliver: bool = True) -> Iterator[list[int]]:
    """Hold SIGINT while the block runs. Yields the list of signals received meanwhile;
    with ``deliver`` the first one is raised as KeyboardInterrupt when the block ends.

    Only the main thread can own signal handlers; elsewhere nothing is held."""
    received: list[int] = []
    if not active or threading.current_thread() is not threading.main_thread():
        yield received
        return
    held = [signal.SIGINT]
    if callable(signal.getsignal(signal.SIGTERM)):
        held.append(signal.SIGTERM)  # the CLI turns SIGTERM into an interrupt as well
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in held}
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received and deliver:
        raise KeyboardInterrupt
