"""Matrix 42 (the context half, in the agent loop): context assembly limits report
CONTEXT_BUDGET, and a store failing under a running session reports PERSISTENCE_ERROR --
neither is mistaken for a provider failure.

A request that cannot fit the model's window even after compaction is refused before it is
sent (the model sees no request). A run store that stops taking writes mid-session (an
injected fault at the real store's trace write) ends the session with PERSISTENCE_ERROR.
A provider that refuses the request is, by contrast, a provider failure.
"""

from __future__ import annotations

from tests.conformance._agent import Recorded, answer, call, executor, scripted, session, turn
from tests.conftest import Repo
from tidegate.agent import run_loop
from tidegate.errors import ErrorClass
from tidegate.store import StoreFaults


def test_a_context_that_cannot_fit_is_refused_before_sending(committed_repo: Repo) -> None:
    model = scripted(answer("never"), context_window=2048, max_output_tokens=256)
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "failed" and outcome.error_class is ErrorClass.CONTEXT_BUDGET
    assert "after compaction" in outcome.reason
    assert model.turns_left == 1, "nothing was sent to the provider"
    assert s.transcript.turns == []


def test_a_store_that_stops_taking_writes_is_a_persistence_error(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root, faults=StoreFaults(["trace.write:2"]))
    model = scripted(
        turn(call("workspace_read", path="calc.py")),
        turn(call("workspace_read", path="README.md")),
        answer("never"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
    assert outcome.status == "failed"
    assert outcome.error_class is ErrorClass.PERSISTENCE_ERROR
    assert "stored durably" in outcome.reason
    assert model.turns_left == 2, "the session stopped at the failed write"


def test_a_provider_refusal_is_a_provider_failure(committed_repo: Repo) -> None:
    model = scripted({"error": "rejected"})
    with executor(committed_repo.root) as ex:
        outcome = run_loop(session(model, ex))
    assert outcome.status == "failed"
    assert outcome.error_class is ErrorClass.DEPENDENCY_ERROR
    assert outcome.error_class not in (ErrorClass.CONTEXT_BUDGET, ErrorClass.PERSISTENCE_ERROR)
