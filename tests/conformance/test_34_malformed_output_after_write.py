"""Conformance 34: when an adapter commits a real write through the workspace port and
then returns output that fails the tool's schema, or throws after the commit, the call
ends as a durable unknown side-effect outcome that still names the write the host
observed; it is recorded before the run ends and is never retried."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import PortWriteThen, call, executor
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
                call("workspace_write", path="new.txt", content="data\n", expect="must_not_exist")
            )
        assert ex.ended is not None
    assert reason in caught.value.reason
    result = caught.value.result
    assert result.status == "unknown_outcome"
    (write,) = result.effects.write
    assert write.path == "new.txt" and write.before.kind == "missing"
    assert write.after.sha256 == sha256_bytes(b"data\n")
    assert result.effects.approval is not None
    assert recorder.calls[-1][1] is result
    assert (committed_repo.root / "new.txt").read_text() == "data\n"
