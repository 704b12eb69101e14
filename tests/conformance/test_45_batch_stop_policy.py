"""Conformance 45: inside a round, structured failures (a stale edit, bad arguments, a
denial) do not stop later independent calls; a pending approval, a pause, a cancellation
and an unknown outcome do: the calls after it are not dispatched and are reported as
skipped (and recorded), with the round saying what stopped it."""

from __future__ import annotations

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import WritesThenThrows, call, executor
from tidegate.tools.calls import ToolOutcomeUnknown
from tidegate.tools.context import ToolLimits
from tidegate.tools.policy import ApprovalProfile
from tidegate.tools.scripted import ListRecorder, ScriptedApprover, ScriptedUser
from tidegate.workspace.states import sha256_bytes


def _create(path: str) -> dict[str, str]:
    return {"path": path, "content": f"{path}\n", "expect": "must_not_exist"}


def test_structured_failures_continue(committed_repo: Repo) -> None:
    approver = ScriptedApprover({"workspace.edit": "grant", "command.run": "deny"})
    with executor(committed_repo.root, approval=ApprovalProfile.STRICT, approver=approver) as ex:
        batch = ex.execute_batch(
            [
                call("workspace_edit", path="calc.py", old="a", new="b", expect=sha256_bytes(b"x")),
                call("workspace_read", path=""),
                call("command_run", command="touch ran"),
                call("workspace_read", path="calc.py"),
            ]
        )
    assert batch.stopped is None
    assert [r.status for r in batch.results] == ["error", "error", "denied", "ok"]
    assert not (committed_repo.root / "ran").exists()


def test_pending_approval_stops_the_round(committed_repo: Repo) -> None:
    recorder = ListRecorder()
    with executor(committed_repo.root, approval=ApprovalProfile.STRICT, recorder=recorder) as ex:
        batch = ex.execute_batch(
            [
                call("workspace_read", "r", path="calc.py"),
                call("workspace_write", "w1", **_create("one.txt")),
                call("workspace_read", "r2", path="calc.py"),
                call("workspace_write", "w2", **_create("two.txt")),
            ]
        )
    assert batch.stopped == "pending_approval" and batch.stopped_at == "w1"
    assert [r.status for r in batch.results] == ["ok", "pending_approval", "skipped", "skipped"]
    assert [c.call_id for c, _ in recorder.calls] == ["r", "w1", "r2", "w2"]
    assert not (committed_repo.root / "one.txt").exists()
    assert not (committed_repo.root / "two.txt").exists()


def test_pause_stops_the_round(committed_repo: Repo) -> None:
    stale = sha256_bytes(b"stale")
    edits = [
        call("workspace_edit", path="calc.py", old="a", new=f"z{i}", expect=stale) for i in range(3)
    ]
    with executor(committed_repo.root, limits=ToolLimits(stale_edit_limit=2)) as ex:
        batch = ex.execute_batch([*edits, call("workspace_write", **_create("after.txt"))])
    assert [r.status for r in batch.results] == ["error", "error", "paused", "skipped"]
    assert batch.stopped == "paused"
    assert not (committed_repo.root / "after.txt").exists()


def test_cancellation_stops_the_round(committed_repo: Repo) -> None:
    holder: dict[str, object] = {}

    def cancel(_question_id: str) -> None:
        holder["ex"].context.cancel.set()  # type: ignore[attr-defined]

    user = ScriptedUser(answers=["stop"], on_ask=cancel)
    with executor(committed_repo.root, user=user) as ex:
        holder["ex"] = ex
        batch = ex.execute_batch(
            [
                call("user_ask", "q", question="go on?"),
                call("workspace_write", "w", **_create("late.txt")),
            ]
        )
    assert batch.stopped == "cancelled" and batch.stopped_at == "q"
    assert [r.status for r in batch.results] == ["ok", "skipped"]
    assert not (committed_repo.root / "late.txt").exists()


def test_cancelled_before_dispatch(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        ex.context.cancel.set()
        batch = ex.execute_batch(
            [call("workspace_write", **_create("a.txt")), call("workspace_read", path="calc.py")]
        )
    assert [r.status for r in batch.results] == ["cancelled", "skipped"]
    assert not (committed_repo.root / "a.txt").exists()


@requires_containment
def test_unknown_outcome_stops_the_round_and_is_raised(committed_repo: Repo) -> None:
    adapter = WritesThenThrows({"half.txt": "half\n"})
    with (
        executor(committed_repo.root, overrides={"command.run": adapter}) as ex,
        pytest.raises(ToolOutcomeUnknown) as caught,
    ):
        ex.execute_batch(
            [
                call("workspace_write", "w", **_create("first.txt")),
                call("command_run", "boom", command="build"),
                call("workspace_write", "never", **_create("never.txt")),
            ]
        )
    batch = caught.value.batch
    assert batch is not None
    assert batch.stopped == "unknown_outcome" and batch.stopped_at == "boom"
    assert [r.status for r in batch.results] == ["ok", "unknown_outcome", "skipped"]
    assert [w.path for w in batch.results[1].effects.write] == ["half.txt"]
    assert (committed_repo.root / "first.txt").exists()
    assert not (committed_repo.root / "never.txt").exists()
