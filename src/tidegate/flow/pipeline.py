"""One attempt: run the mode's phases in order and record one audit event per phase."""

from __future__ import annotations

import time
from typing import Protocol

from tidegate.errors import ErrorClass, PhaseError
from tidegate.faults import maybe_crash
from tidegate.flow.modes import EFFECTS, MODE_PHASES, Phase, When
from tidegate.flow.phases import PHASES
from tidegate.flow.report import PhaseEvent
from tidegate.flow.state import RunState


class PhaseObserver(Protocol):
    """Told about every phase as it starts and ends (progress output, audits, tests)."""

    def phase_started(self, attempt: int, phase: Phase) -> None: ...

    def phase_finished(self, event: PhaseEvent) -> None: ...


def run_attempt(
    state: RunState, events: list[PhaseEvent], observer: PhaseObserver | None
) -> PhaseError | None:
    """Run one attempt; return the first phase error (None when every phase passed)."""
    failed: PhaseError | None = None
    for phase, when in MODE_PHASES[state.request.mode]:
        if (when is When.ALWAYS and failed) or (when is When.ON_FAILURE and not failed):
            continue
        if when is When.ON_SUCCESS and failed:
            continue
        maybe_crash(f"phase.{phase.value}", state.attempt.number)
        if observer:
            observer.phase_started(state.attempt.number, phase)
        start = time.monotonic()
        error: PhaseError | None = None
        detail = ""
        try:
            detail = PHASES[phase](state)
        except PhaseError as exc:
            error = exc
        except Exception as exc:  # fail fast: an unexpected error ends the run, after ROLLBACK
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
        events.append(event)
        if observer:
            observer.phase_finished(event)
        if error is not None:
            if failed is None:
                failed = error
                state.attempt.error = error
                state.attempt.failed_phase = phase.value
            else:
                # A recovery phase failed too: the shadow can no longer be trusted.
                failed.retryable = False
    return failed
