"""Conformance 29: an adapter that throws after dispatch ends the run with an unknown
side-effect outcome, never a retryable error - even a read-only tool. When the host can
still observe the workspace, the mutations the command made before the throw are explicit
in the recorded result; every later call is refused. Through the agent loop the outcome is
durable: the run store holds the call as unknown with the writes, and the run ends failed
(UNKNOWN_OUTCOME) without asking the model for another turn."""

from __future__ import annotations

import pytest

from tests.conformance._agent import CHECK, Recorded, answer, scripted, session, turn
from tests.conformance._agent import call as model_call
from tests.conftest import Repo, requires_containment
from tests.integration._store import readonly_store
from tests.integration.tools.support import ThrowingReader, WritesThenThrows, call, executor
from tidegate.agent import run_loop
from tidegate.errors import ErrorClass, UnknownOutcome
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.scripted import ListRecorder
from tidegate.workspace.states import sha256_bytes


@requires_containment
def test_command_adapter_throws_after_writing(committed_repo: Repo) -> None:
    recorder = ListRecorder()
    adapter = WritesThenThrows({"out/report.txt": "partial\n", "calc.py": "broken\n"})
    with executor(committed_repo.root, overrides={"command.run": adapter}, recorder=recorder) as ex:
        with pytest.raises(ToolOutcomeUnknown) as caught:
            ex.execute(call("command_run", "c-crash", command="make report"))
        unknown = caught.value
        assert isinstance(unknown, UnknownOutcome)
        assert unknown.error_class is ErrorClass.UNKNOWN_OUTCOME
        assert "RuntimeError" in unknown.reason
        result = unknown.result
        assert result.status == "unknown_outcome" and not result.ok
        assert result.error is not None and not result.error.retryable
        writes = {w.path: w for w in result.effects.write}
        assert set(writes) == {"out", "out/report.txt", "calc.py"}
        assert writes["out"].before.kind == "missing" and writes["out"].after.kind == "dir"
        assert writes["out/report.txt"].after.sha256 == sha256_bytes(b"partial\n")
        assert writes["calc.py"].before.kind == "file"
        assert result.effects.state_version == 1
        ((recorded_call, recorded_result),) = recorder.calls
        assert recorded_call.call_id == "c-crash" and recorded_call.name == "command_run"
        assert recorded_result is result and result.call_id == "c-crash"

        refused = ex.execute(call("workspace_read", path="calc.py"))
        assert refused.error is not None and refused.error.code == "run_ended"
        assert not refused.error.retryable


def test_read_only_tool_throwing_is_still_unknown(committed_repo: Repo) -> None:
    with (
        executor(committed_repo.root, overrides={"workspace.read": ThrowingReader()}) as ex,
        pytest.raises(ToolOutcomeUnknown) as caught,
    ):
        ex.execute(call("workspace_read", path="calc.py"))
    assert caught.value.result.effects.write == ()
    assert "ConnectionResetError" in caught.value.reason


@requires_containment
def test_the_unknown_outcome_is_durable_in_the_run_store(committed_repo: Repo) -> None:
    record = Recorded(committed_repo.root)
    model = scripted(
        turn(model_call("command_run", "c-crash", command="make report")), answer("all done")
    )
    adapter = WritesThenThrows({"out/report.txt": "partial\n"})
    with executor(
        committed_repo.root,
        overrides={"command.run": adapter},
        network="denied",
        validation_command=CHECK,
    ) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "failed" and outcome.error_class is ErrorClass.UNKNOWN_OUTCOME
    assert model.turns_left == 1, "the model was never asked again"
    record.store.close()

    store = readonly_store(committed_repo)  # a fresh, read-only connection
    try:
        (stored,) = store.tool_calls(record.run_id)
        assert stored.tool_call_id == "c-crash"
        assert stored.canonical_tool == "command.run"
        assert stored.status == "unknown" and stored.finish_seq is not None
        writes = {w["path"]: w for w in stored.effects["write"]}
        assert set(writes) == {"out", "out/report.txt"}
        assert writes["out/report.txt"]["before"]["kind"] == "missing"
        assert writes["out/report.txt"]["after"]["sha256"] == sha256_bytes(b"partial\n")
        assert store.get(record.run_id).status == "failed"
    finally:
        store.close()
