"""The replay hash covers what a run did and nothing that varies between runs."""

from __future__ import annotations

from tidegate.store.replay import replay_hash
from tidegate.store.trace import Trace, TraceEvent


def _trace(run_id: str, execution: str, clock: int, meta: str, payload: str) -> list[TraceEvent]:
    trace = Trace(run_id, f"task-{run_id}", execution, clock=lambda: clock)
    trace.append("run.started", payload={"mode": "patch"}, meta={"shadow": meta})
    trace.append(
        "phase.finished",
        attempt=1,
        phase="VALIDATE",
        payload={"candidate_tree": payload},
        meta={"duration_us": clock, "detail": f"tree in {meta}"},
    )
    trace.append("tool.requested", tool_call_id=f"call-{clock}", payload={"tool": "x"})
    return trace.events


def test_ids_times_and_meta_do_not_change_the_hash() -> None:
    one = _trace("run-a", "exec-1", 1000, "/tmp/tidegate-shadow-a", "abc")
    two = _trace("run-b", "exec-9", 99999, "/var/tmp/other", "abc")
    assert replay_hash(one) == replay_hash(two)
    assert replay_hash(reversed(one)) == replay_hash(one)  # sequence order, not list order


def test_a_different_outcome_changes_the_hash() -> None:
    one = _trace("run-a", "exec-1", 1000, "/tmp/a", "abc")
    two = _trace("run-a", "exec-1", 1000, "/tmp/a", "abd")
    assert replay_hash(one) != replay_hash(two)
    assert replay_hash(one[:-1]) != replay_hash(one)


def test_events_carry_every_correlation_id() -> None:
    event = _trace("run-a", "exec-1", 5, "/tmp/a", "abc")[2]
    assert (event.run_id, event.task_id, event.execution_id) == ("run-a", "task-run-a", "exec-1")
    assert (event.seq, event.event_id, event.tool_call_id) == (3, "run-a/3", "call-5")
