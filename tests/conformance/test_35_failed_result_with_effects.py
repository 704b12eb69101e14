"""Conformance 35: a failed result may carry only a denial. An adapter that commits an
edit and then reports a structured failure produces ok=false together with a host-observed
write: that contradiction is an unknown outcome, recorded with the write, and the run
cannot go on to a successful end (every later call is refused)."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import PortEditThenFails, PortWriteThen, call, executor, sha
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.scripted import ListRecorder


def test_failure_with_a_write_cannot_be_ignored(committed_repo: Repo) -> None:
    recorder = ListRecorder()
    with executor(
        committed_repo.root, overrides={"workspace.edit": PortEditThenFails()}, recorder=recorder
    ) as ex:
        expect = sha(ex, "calc.py")
        with pytest.raises(ToolOutcomeUnknown) as caught:
            ex.execute(
                call("workspace_edit", path="calc.py", old="a - b", new="a + b", expect=expect)
            )
        result = caught.value.result
        assert "edit_failed" in caught.value.reason
        assert not result.ok and result.status == "unknown_outcome"
        assert [w.path for w in result.effects.write] == ["calc.py"]
        assert result.effects.write[0].before.sha256 == expect
        assert recorder.calls[-1][1] is result
        after = ex.execute(call("workspace_read", path="calc.py"))
        assert after.status == "error" and after.error is not None
        assert after.error.code == "run_ended"


def test_honest_failure_carries_no_effect(committed_repo: Repo) -> None:
    with executor(committed_repo.root, overrides={"workspace.write": PortWriteThen("fail")}) as ex:
        # the port refuses the stale create, so nothing is written and the failure stands
        result = ex.execute(
            call("workspace_write", path="calc.py", content="x", expect="must_not_exist")
        )
        assert result.status == "error" and result.effects.present() == []
        assert result.error is not None and result.error.code == "stale_precondition"
        assert ex.ended is None
