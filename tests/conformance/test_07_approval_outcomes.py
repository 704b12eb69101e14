"""Conformance 7: approval outcomes. A policy denial, an approver's denial, a timed-out
approval (the executor stops waiting for an approver that blocks past
ToolLimits.approval_timeout_s) and an uncorrelated answer all end the call before dispatch with only the denial
(and its request ID) as effect; with no approver the call is pending (nothing runs, the
request is returned) and a later grant of that request ID lets the same call through."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from tests.conftest import Repo
from tests.integration.tools.support import call, executor
from tidegate.tools.calls import ApprovalRequest
from tidegate.tools.context import ApprovalAnswer, ToolLimits
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.tools.scripted import ScriptedApprover

STRICT = ApprovalProfile.STRICT


def _create(path: str) -> dict[str, str]:
    return {"path": path, "content": "new\n", "expect": "must_not_exist"}


def test_denied_by_the_approver(committed_repo: Repo) -> None:
    approver = ScriptedApprover({"workspace.write": "deny"})
    with executor(committed_repo.root, approval=STRICT, approver=approver) as ex:
        result = ex.execute(call("workspace_write", **_create("a.txt")))
    assert result.status == "denied" and not result.ok
    assert result.effects.present() == ["approval"]
    assert result.effects.approval is not None
    assert result.effects.approval.status == "denied"
    assert result.effects.approval.request_id == approver.asked[0].request_id
    assert not (committed_repo.root / "a.txt").exists()


def test_denied_by_policy_never_reaches_the_approver(committed_repo: Repo) -> None:
    approver = ScriptedApprover({"workspace.write": "grant"})
    with executor(committed_repo.root, approval=STRICT, approver=approver) as ex:
        result = ex.execute(call("workspace_write", **_create(".git/hooks/post-commit")))
    assert result.status == "denied"
    assert result.effects.approval is not None
    assert result.effects.approval.decided_by == "policy"
    assert approver.asked == []
    assert not (committed_repo.root / ".git/hooks/post-commit").exists()


def test_timed_out_and_uncorrelated_answers_are_denials(committed_repo: Repo) -> None:
    timeout = ScriptedApprover({})  # answers nothing
    with executor(committed_repo.root, approval=STRICT, approver=timeout) as ex:
        result = ex.execute(call("workspace_write", **_create("a.txt")))
    assert result.status == "denied"
    assert result.effects.approval is not None
    assert result.effects.approval.decided_by == "timeout"

    wrong = ScriptedApprover(script=lambda req: ApprovalAnswer("apr_someone_else", True))
    with executor(committed_repo.root, approval=STRICT, approver=wrong) as ex:
        result = ex.execute(call("workspace_write", **_create("a.txt")))
    assert result.status == "denied"
    assert "another request" in result.effects.approval.reasons[0]  # type: ignore[union-attr]
    assert not (committed_repo.root / "a.txt").exists()


@dataclass
class BlockingApprover:
    """Test approver (labelled): ignores its timeout and blocks until released, then
    grants - a person who walked away and came back too late."""

    release: threading.Event = field(default_factory=threading.Event)
    answered: threading.Event = field(default_factory=threading.Event)
    timeouts: list[float] = field(default_factory=list)
    label: str = "blocking test approver"

    def request(self, request: ApprovalRequest, timeout_s: float) -> ApprovalAnswer | None:
        self.timeouts.append(timeout_s)
        self.release.wait(30)
        self.answered.set()
        return ApprovalAnswer(request.request_id, True, by=self.label)


def test_the_executor_enforces_the_approval_timeout(committed_repo: Repo) -> None:
    approver = BlockingApprover()
    limits = ToolLimits(approval_timeout_s=0.3)
    try:
        with executor(committed_repo.root, approval=STRICT, approver=approver, limits=limits) as ex:
            started = time.monotonic()
            result = ex.execute(call("workspace_write", **_create("a.txt")))
            waited = time.monotonic() - started
            assert not approver.answered.is_set()  # the approver was still blocking
            assert 0.25 <= waited < 10  # it did wait, but not for the approver
            assert approver.timeouts == [0.3]
            assert result.status == "denied" and not result.ok
            assert result.effects.present() == ["approval"]
            assert result.effects.approval is not None
            assert result.effects.approval.status == "denied"
            assert result.effects.approval.decided_by == "timeout"
            # the late grant changes nothing: the call ended and nothing was dispatched
            approver.release.set()
            assert approver.answered.wait(10)
            assert not (committed_repo.root / "a.txt").exists()
            read = ex.execute(call("workspace_read", path="calc.py"))
            assert read.ok
    finally:
        approver.release.set()
    assert not (committed_repo.root / "a.txt").exists()


def test_missing_approver_means_pending_then_a_grant_applies(committed_repo: Repo) -> None:
    with executor(committed_repo.root, approval=STRICT) as ex:
        pending = ex.execute(call("workspace_write", **_create("a.txt")))
    assert pending.status == "pending_approval" and not pending.ok
    assert pending.effects.present() == []
    request = pending.approval_request
    assert request is not None and request.tool == "workspace.write"
    assert request.arguments["path"] == "a.txt"
    assert not (committed_repo.root / "a.txt").exists()

    with executor(
        committed_repo.root, approval=STRICT, grants=frozenset({request.request_id})
    ) as ex:
        granted = ex.execute(call("workspace_write", **_create("a.txt")))
        assert granted.ok
        assert granted.effects.approval is not None
        assert granted.effects.approval.status == "granted"
        assert granted.effects.approval.request_id == request.request_id
        # the grant covers exactly that call: other arguments still need approval
        other = ex.execute(call("workspace_write", **_create("b.txt")))
        assert other.status == "pending_approval"
    assert (committed_repo.root / "a.txt").read_text() == "new\n"


def test_granted_by_the_approver_and_not_required_when_allowed(committed_repo: Repo) -> None:
    approver = ScriptedApprover({"workspace.write": "grant"})
    with executor(committed_repo.root, approval=STRICT, approver=approver) as ex:
        written = ex.execute(call("workspace_write", **_create("a.txt")))
        read = ex.execute(call("workspace_read", path="a.txt"))
    assert written.ok and written.effects.approval is not None
    assert written.effects.approval.status == "granted"
    assert read.effects.approval is not None
    assert read.effects.approval.status == "not_required"
    assert len(approver.asked) == 1


def test_read_only_mode_denies_instead_of_asking(committed_repo: Repo) -> None:
    approver = ScriptedApprover({"workspace.write": "grant"})
    with executor(
        committed_repo.root, mode=TaskMode.REVIEW, approver=approver, activate_all=True
    ) as ex:
        result = ex.execute(call("workspace_write", **_create("a.txt")))
    assert result.status == "error" and result.error is not None
    assert result.error.code == "inactive_tool"
    assert approver.asked == []
