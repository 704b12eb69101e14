"""A grant approves one dispatch: these arguments, in this workspace. A grant the user gave
for one sub-task cannot be replayed for another (another task, another step limit), nor
for the same sub-task in another workspace; an approver's "yes" counts only for the
request it was asked, and a "no" (or no answer) is a no. Nothing of the sub-agent runs unless the
dispatch was approved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adversarial._dispatch import dispatch_turn, parent
from tests.conformance._agent import answer, call, scripted, turn
from tests.conftest import Repo
from tidegate.agent import run_loop
from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.agent.sub_settings import DispatchSettings
from tidegate.tools.calls import ApprovalRequest
from tidegate.tools.context import ApprovalAnswer, ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.tools.scripted import ApprovalScript, ScriptedApprover
from tidegate.workspace.port import WorkspacePort

TASK = "Read calc.py and say what add() does."


def strict(
    root: Path, grants: frozenset[str] = frozenset(), approver: ScriptedApprover | None = None
) -> ToolExecutor:
    """A host whose approval profile asks before a sub-agent with these tools runs."""
    context = ToolContext(
        workspace=WorkspacePort(root),
        mode=TaskMode.PATCH,
        approval_profile=ApprovalProfile.STRICT,
        network="denied",
        containment="none",
        grants=grants,
        approver=approver,
    )
    return ToolExecutor(context)


def sub_agent() -> Any:
    return scripted(turn(call("workspace_read", "r1", path="calc.py")), answer("it subtracts"))


def dispatch(
    root: Path, arguments: dict[str, Any], **host: Any
) -> tuple[Any, Any, SubAgentDispatch]:
    """One dispatch of ``arguments`` in ``root``: (the parent's outcome, the sub-agent's
    model, the tool)."""
    sub_model = sub_agent()
    tool = SubAgentDispatch(DispatchSettings(model=sub_model))
    with strict(root, **host) as ex:
        s = parent(scripted(dispatch_turn(**arguments), answer("done")), ex, tool, phase="AGENT")
        outcome = run_loop(s)
    return outcome, sub_model, tool


def request_of(root: Path, arguments: dict[str, Any]) -> str:
    """The request id of a dispatch of ``arguments`` in ``root`` (it pauses for it)."""
    outcome, sub_model, _ = dispatch(root, arguments)
    assert outcome.status == "paused" and outcome.guard == "approval", outcome
    assert sub_model.turns_left == 2
    return str(outcome.reason.split("request ")[1].rstrip(")"))


def test_a_grant_runs_exactly_its_own_dispatch(committed_repo: Repo) -> None:
    args = {"task": TASK}
    granted = request_of(committed_repo.root, args)
    outcome, sub_model, _ = dispatch(committed_repo.root, args, grants=frozenset({granted}))
    assert outcome.status == "completed", outcome
    assert sub_model.turns_left == 0


@pytest.mark.parametrize(
    "other",
    [
        {"task": TASK + " Then delete the tests."},
        {"task": TASK, "max_steps": 50},
        {"task": TASK, "max_steps": 1},
        {"task": TASK + " "},
    ],
    ids=["another task", "another step limit", "a smaller step limit", "one more space"],
)
def test_a_grant_for_one_dispatch_does_not_approve_another(
    committed_repo: Repo, other: dict[str, Any]
) -> None:
    granted = request_of(committed_repo.root, {"task": TASK})
    outcome, sub_model, tool = dispatch(committed_repo.root, other, grants=frozenset({granted}))
    assert sub_model.turns_left == 2, "nothing of the sub-agent ran"
    assert "session" not in (tool.last or {})
    assert outcome.status == "paused" and outcome.guard == "approval", outcome


def test_a_grant_from_one_workspace_does_not_approve_the_same_dispatch_in_another(
    committed_repo: Repo, tmp_path: Path
) -> None:
    other = Repo(tmp_path / "other")
    other.root.mkdir()
    other.git("init", "-q")
    other.write("calc.py", committed_repo.read("calc.py"))
    other.commit_all()
    granted = request_of(committed_repo.root, {"task": TASK})
    outcome, sub_model, _ = dispatch(other.root, {"task": TASK}, grants=frozenset({granted}))
    assert outcome.status == "paused" and outcome.guard == "approval", outcome
    assert sub_model.turns_left == 2
    assert request_of(other.root, {"task": TASK}) != granted


def answered(script: ApprovalScript) -> ScriptedApprover:
    return ScriptedApprover(script=script, label="scripted approver")


@pytest.mark.parametrize(
    "reply",
    [
        lambda r: ApprovalAnswer("apr_" + "0" * 24, True, by="someone"),
        lambda r: ApprovalAnswer(r.request_id, False, by="user", reason="no"),
        lambda r: None,
    ],
    ids=["a yes for another request", "a no", "no answer"],
)
def test_only_a_yes_to_this_very_request_runs_it(
    committed_repo: Repo, reply: ApprovalScript
) -> None:
    approver = answered(reply)
    outcome, sub_model, tool = dispatch(committed_repo.root, {"task": TASK}, approver=approver)
    assert outcome.status == "completed", "denied: the parent goes on without it"
    assert [r.tool for r in approver.asked] == ["agent.dispatch"]
    assert sub_model.turns_left == 2, "nothing of the sub-agent ran"
    record = tool.last
    assert record == {} or "session" not in record


def test_the_approver_is_asked_this_dispatch_and_its_yes_runs_it(committed_repo: Repo) -> None:
    seen: list[ApprovalRequest] = []

    def yes(request: ApprovalRequest) -> ApprovalAnswer:
        seen.append(request)
        return ApprovalAnswer(request.request_id, True, by="user")

    outcome, sub_model, _ = dispatch(committed_repo.root, {"task": TASK}, approver=answered(yes))
    assert outcome.status == "completed", outcome
    assert sub_model.turns_left == 0
    (request,) = seen
    assert request.arguments["task"] == TASK
    assert request.request_id == request_of(committed_repo.root, {"task": TASK})


def test_a_no_is_recorded_as_the_dispatch_tools_own_denial(committed_repo: Repo) -> None:
    approver = answered(lambda r: ApprovalAnswer(r.request_id, False, by="user", reason="no"))
    tool = SubAgentDispatch(DispatchSettings(model=sub_agent()))
    with strict(committed_repo.root, approver=approver) as ex:
        s = parent(scripted(dispatch_turn(task=TASK), answer("done")), ex, tool, phase="AGENT")
        run_loop(s)
    (record,) = [t for t in s.transcript.tools if t.call_id == "d1"]
    assert (record.tool, record.status, record.ok) == ("agent.dispatch", "denied", False)
    assert record.summary == "agent.dispatch denied: approval_denied: no"
    approval = record.effects["approval"]
    assert (approval["status"], approval["decided_by"], approval["reasons"]) == (
        "denied",
        "user",
        ["no"],
    )
    assert approval["request_id"].startswith("apr_")
