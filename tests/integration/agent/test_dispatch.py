"""agent_dispatch inside real sessions and a real guarded run: approval profiles, the hard
cost cap shared with the parent, and the model planner handing a sub-task to a sub-agent
in PLAN, with the audit events in the run's trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.adversarial._dispatch import dispatch_turn, editing, host, parent
from tests.conformance._agent import PRICE, answer, call, configuration, scripted, task, turn
from tests.conftest import Repo
from tidegate.agent import AgentSession, Budget, GuardLimits, LoopSettings, SessionOptions, run_loop
from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.agent.sub_audit import FORCED_ISOLATED, TOOL_GUARD_FILTERED
from tidegate.agent.sub_settings import DispatchSettings
from tidegate.flow.transaction import execute
from tidegate.planners.model import ModelPlanner
from tidegate.records.modes import Mode
from tidegate.records.request import RunRequest
from tidegate.store import StoreRecorder, open_run_store
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.workspace.port import WorkspacePort

CHECK = "python3 -B -c 'from calc import add; assert add(2, 3) == 5'"


def strict_host(root: Path, grants: frozenset[str] = frozenset()) -> ToolExecutor:
    context = ToolContext(
        workspace=WorkspacePort(root),
        mode=TaskMode.PATCH,
        approval_profile=ApprovalProfile.STRICT,
        network="denied",
        containment="none",
        grants=grants,
    )
    return ToolExecutor(context)


def test_dispatch_asks_where_the_sub_agents_tools_would(committed_repo: Repo) -> None:
    sub_model = scripted(turn(call("workspace_read", "r1", path="calc.py")), answer("read it"))
    tool = SubAgentDispatch(DispatchSettings(model=sub_model))
    with strict_host(committed_repo.root) as ex:
        s = parent(scripted(dispatch_turn(), answer("never")), ex, tool, phase="AGENT")
        outcome = run_loop(s)
    assert outcome.status == "paused" and outcome.guard == "approval", outcome
    assert sub_model.turns_left == 2, "nothing ran before the approval"
    record = s.transcript.tools[0]
    assert record.status == "pending_approval"
    request_id = outcome.reason.split("request ")[1].rstrip(")")

    sub_model = scripted(turn(call("workspace_read", "r1", path="calc.py")), answer("read it"))
    tool = SubAgentDispatch(DispatchSettings(model=sub_model))
    with strict_host(committed_repo.root, frozenset({request_id})) as ex:
        s = parent(scripted(dispatch_turn(), answer("done")), ex, tool, phase="AGENT")
        assert run_loop(s).status == "completed"
    assert sub_model.turns_left == 0, "the grant for this very dispatch lets it run"


def test_an_unknown_agent_and_bad_arguments_are_refused(
    committed_repo: Repo, tmp_path: Path
) -> None:
    tool = SubAgentDispatch(editing(model=scripted(answer("never"))))
    model = scripted(
        turn(call("agent_dispatch", "d1", task="x", agent="nobody")),
        turn(call("agent_dispatch", "d2", task="")),
        answer("ok", expect_tool_results=[{"id": "d2", "contains": "invalid_arguments"}]),
    )
    with host(committed_repo.root, tmp_path) as ex:
        s = parent(model, ex, tool, phase="AGENT")
        assert run_loop(s).status == "completed"
    codes = [t.summary for t in s.transcript.tools]
    assert "unknown_agent" in codes[0] and "invalid_arguments" in codes[1]


def test_the_hard_cost_cap_is_shared_and_stops_the_parent(
    committed_repo: Repo, tmp_path: Path
) -> None:
    small = {"input_tokens": 10, "output_tokens": 1}
    sub_model = scripted(
        turn(
            call("workspace_read", "r1", path="calc.py"),
            usage={"input_tokens": 5000, "output_tokens": 0},
        ),
        answer("never sent: it would cross the cap"),
    )
    tool = SubAgentDispatch(editing(model=sub_model, pricing=PRICE))
    model = scripted({**dispatch_turn(), "usage": small}, answer("never"))
    with host(committed_repo.root, tmp_path) as ex:
        s = AgentSession.start(
            model=model,
            executor=ex,
            config=configuration(ex),
            task=task(ex.context.root),
            options=SessionOptions(
                phase="AGENT",
                guard_limits=GuardLimits(budget=Budget(hard_dollar_cap=6.0)),
                settings=LoopSettings(max_output_tokens=1000),
                checkpoints=False,
            ),
            pricing=PRICE,
            session_tools=tool.tools(),
        )
        outcome = run_loop(s)
    assert outcome.status == "stopped" and outcome.guard == "hard-dollar-cap", outcome
    assert sub_model.turns_left == 1 and model.turns_left == 1
    assert 5.0 < s.guards.state.usage.dollars <= 6.0


def test_the_model_planner_dispatches_in_plan_without_touching_the_tree(
    committed_repo: Repo,
) -> None:
    committed_repo.write("notes.txt", "untracked notes\n")
    sub_model = scripted(
        turn(call("workspace_read", "r1", path="calc.py")),
        turn(
            call("workspace_write", "w1", path="calc.py", content="boom\n", expect="must_not_exist")
        ),
        answer("add() subtracts; it should add."),
    )
    block = (
        "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    )
    model = scripted(
        dispatch_turn(task="Find the bug in add() in calc.py."),
        answer(
            "Make add() add.", expect_tool_results=[{"id": "d1", "contains": "add() subtracts"}]
        ),
        answer(block),
    )
    store = open_run_store(committed_repo.root, None)
    recorder = StoreRecorder(store)
    planner = ModelPlanner(model, recorder=recorder, dispatch=DispatchSettings(model=sub_model))
    before = (committed_repo.tree_state(), committed_repo.index_bytes())
    request = RunRequest(
        repo=committed_repo.root,
        mode=Mode.PATCH,
        objective="Fix add() in calc.py so that add(2, 3) == 5.",
        objective_base=committed_repo.root,
        verify=CHECK,
        max_attempts=1,
    )
    report = execute(request, planner=planner, recorder=recorder)
    assert report.status == "succeeded", report.message
    assert "return a + b" in committed_repo.read("calc.py")
    after = (committed_repo.tree_state(), committed_repo.index_bytes())
    changed = {k for k in before[0] if before[0][k] != after[0].get(k)}
    assert changed == {"calc.py"}, "only APPLY_BACK wrote, and only the verified change"
    assert "boom" not in committed_repo.read("calc.py")
    assert before[1] == after[1], "the index is untouched"
    trace = [(e.kind, json.loads(e.payload), e.phase) for e in store.events(report.run_id)]
    kinds = [k for k, _, _ in trace]
    assert FORCED_ISOLATED in kinds and TOOL_GUARD_FILTERED in kinds
    filtered: dict[str, Any] = next(p for k, p, _ in trace if k == TOOL_GUARD_FILTERED)
    assert "workspace.write" in filtered["removed"] and "workspace.read" in filtered["kept"]
    phases = {ph for k, _, ph in trace if k == "agent.started"}
    assert phases >= {"PLAN", "SUB_AGENT", "PATCH"}
    assert planner.usage.steps == 6, "three parent steps and three sub-agent steps, one budget"


def test_cancelling_the_parent_cancels_its_sub_agent(committed_repo: Repo, tmp_path: Path) -> None:
    import threading

    sub_model = scripted({"text": ["thinking ", "more"], "stall_s": 30}, answer("never"))
    tool = SubAgentDispatch(editing(model=sub_model))
    with host(committed_repo.root, tmp_path) as ex:
        s = parent(scripted(dispatch_turn(), answer("never")), ex, tool, phase="AGENT")
        timer = threading.Timer(0.3, ex.context.cancel.set)  # the parent's cancel event
        timer.start()
        outcome = run_loop(s)
        timer.cancel()
    assert tool.last["outcome"].status == "cancelled"  # type: ignore[index]
    assert outcome.status == "cancelled", outcome
    assert s.transcript.tools[0].status == "cancelled"


class FailingSubRecord:
    """A LoopRecorder (our own port) whose store fails once the sub-agent records a turn."""

    def __init__(self) -> None:
        self.kinds: list[tuple[str, str | None]] = []

    def event(self, kind: str, *, phase: str | None = None, **_: Any) -> None:
        from tidegate.errors import PersistenceError

        self.kinds.append((kind, phase))
        if kind == "agent.turn" and phase == "SUB_AGENT":
            raise PersistenceError("disk full (test)")

    def checkpoint(self, reason: str, state: Any) -> None: ...

    def tool_call_requested(self, *args: Any, **kwargs: Any) -> None: ...

    def tool_call_finished(self, *args: Any, **kwargs: Any) -> None: ...


def test_a_sub_agent_whose_record_fails_fails_the_parent(
    committed_repo: Repo, tmp_path: Path
) -> None:
    sub_model = scripted(turn(call("workspace_read", "r1", path="calc.py")), answer("x"))
    tool = SubAgentDispatch(editing(model=sub_model))
    recorder = FailingSubRecord()
    with host(committed_repo.root, tmp_path) as ex:
        s = parent(
            scripted(dispatch_turn(), answer("never")), ex, tool, phase="AGENT", recorder=recorder
        )
        outcome = run_loop(s)
    assert outcome.status == "failed" and outcome.error_class is not None
    assert outcome.error_class.value == "PERSISTENCE_ERROR", outcome
    assert ("agent.turn", "SUB_AGENT") in recorder.kinds
