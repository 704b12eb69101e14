"""Conformance 34: when an adapter commits a real write through the workspace port and
then returns output that fails the tool's schema, or throws after the commit, the call
ends as a durable unknown side-effect outcome that still names the write the host
observed; it is recorded before the run ends and is never retried. Through the agent loop
the run store holds the call (by its ID) as unknown with the write, and the run ends
failed with UNKNOWN_OUTCOME."""

from __future__ import annotations

import pytest

from tests.conformance._agent import CHECK, Recorded, answer, scripted, session, turn
from tests.conformance._agent import call as model_call
from tests.conftest import Repo
from tests.integration._store import readonly_store
from tests.integration.tools.support import PortWriteThen, call, executor
from tidegate.agent import run_loop
from tidegate.errors import ErrorClass
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.scripted import ListRecorder
from tidegate.workspace.states import sha256_bytes


@pytest.mark.parametrize(("then", "reason"), [("malformed", "schema"), ("throw", "ValueError")])
def test_write_then_bad_reply_is_unknown(committed_repo: Repo, then: str, reason: str) -> None:
    recorder = ListRecorder()
    with executor(
        committed_repo.root, overrides={"workspace.write": PortWriteThen(then)}, recorder=recorder
    ) as ex:
        with pytest.raises(ToolOutcomeUnknown) as caught:
            ex.execute(
                call(
                    "workspace_write",
                    "c-write",
                    path="new.txt",
                    content="data\n",
                    expect="must_not_exist",
                )
            )
        assert ex.ended is not None
    assert reason in caught.value.reason
    result = caught.value.result
    assert result.status == "unknown_outcome"
    (write,) = result.effects.write
    assert write.path == "new.txt" and write.before.kind == "missing"
    assert write.after.sha256 == sha256_bytes(b"data\n")
    assert result.effects.approval is not None
    ((recorded_call, recorded_result),) = recorder.calls
    assert recorded_call.call_id == "c-write" and recorded_result is result
    assert (committed_repo.root / "new.txt").read_text() == "data\n"


@pytest.mark.parametrize("then", ["malformed", "throw"])
def test_the_stored_call_is_unknown_with_its_write(committed_repo: Repo, then: str) -> None:
    record = Recorded(committed_repo.root)
    write = model_call(
        "workspace_write", "c-write", path="new.txt", content="data\n", expect="must_not_exist"
    )
    model = scripted(turn(write), answer("wrote it"))
    with executor(
        committed_repo.root,
        overrides={"workspace.write": PortWriteThen(then)},
        network="denied",
        validation_command=CHECK,
    ) as ex:
        s = session(model, ex, recorder=record.recorder)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "failed" and outcome.error_class is ErrorClass.UNKNOWN_OUTCOME
    assert model.turns_left == 1, "the write was never retried or answered"
    record.store.close()

    store = readonly_store(committed_repo)
    try:
        (stored,) = store.tool_calls(record.run_id)
        assert stored.tool_call_id == "c-write"
        assert stored.canonical_tool == "workspace.write"
        assert stored.status == "unknown"
        (written,) = stored.effects["write"]
        assert written["path"] == "new.txt" and written["before"]["kind"] == "missing"
        assert written["after"]["sha256"] == sha256_bytes(b"data\n")
    finally:
        store.close()
    assert committed_repo.read("new.txt") == "data\n"
