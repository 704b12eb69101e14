"""Conformance 29: an adapter that throws after dispatch ends the run with an unknown
side-effect outcome, never a retryable error - even a read-only tool. When the host can
still observe the workspace, the mutations the command made before the throw are explicit
in the recorded result; every later call is refused."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import ThrowingReader, WritesThenThrows, call, executor
from tidegate.errors import ErrorClass, UnknownOutcome
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.scripted import ListRecorder
from tidegate.workspace.states import sha256_bytes


def test_command_adapter_throws_after_writing(committed_repo: Repo) -> None:
    recorder = ListRecorder()
    adapter = WritesThenThrows({"out/report.txt": "partial\n", "calc.py": "broken\n"})
    with executor(committed_repo.root, overrides={"command.run": adapter}, recorder=recorder) as ex:
        with pytest.raises(ToolOutcomeUnknown) as caught:
            ex.execute(call("command_run", command="make report"))
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
        assert recorder.calls == [(recorder.calls[0][0], result)]

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
