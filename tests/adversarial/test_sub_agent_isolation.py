"""agent_dispatch from the attacker's side: a sub-agent whose scripted model tries to
write, run commands and use git writes while its parent is in a read-only phase is given
none of those tools (the fail-closed filter, not only the call-time policy, takes them
away); whatever a sub-agent does, the main work tree, its index and its refs keep their
bytes; the audit events are in the parent's trace before the sub-agent starts; a
sub-agent that spends the shared budget stops its parent; dispatch cannot nest past its
depth limit; and an agent CLI by contract runs in its own copy, contained."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial._dispatch import (
    dirty,
    dispatch_turn,
    editing,
    events,
    host,
    parent,
    recorded_run,
    snapshot,
)
from tests.conformance._agent import answer, call, digest, scripted, turn
from tests.conftest import CALC, Repo, requires_containment
from tidegate.agent import AgentSession, Budget, run_loop
from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.agent.sub_audit import FORCED_ISOLATED, TOOL_GUARD_FILTERED
from tidegate.agent.sub_settings import DispatchSettings
from tidegate.agents.contracts import load_contract, parse_contract
from tidegate.agents.launch import AgentEndpoint
from tidegate.planners.agent import CliSubAgent
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import TaskMode
from tidegate.workspace.port import WorkspacePort

WRITERS = {
    "workspace.write",
    "workspace.edit",
    "command.run",
    "command.session",
    "project.validate",
}
FAKE = Path(__file__).parents[1] / "integration" / "agents" / "fake_agent.py"


# -- a read-only phase: no write tool at all ---------------------------------------------


HOSTILE_TURNS = [
    turn(call("workspace_write", "w1", path="pwned.txt", content="x\n", expect="must_not_exist")),
    turn(
        call("workspace_edit", "e1", path="calc.py", old="a - b", new="a + b", expect=digest(CALC))
    ),
    turn(call("command_run", "c1", command="echo pwned > pwned.txt; git add -A; git commit -qm x")),
    turn(call("command_session", "s1", action="start", command="sh")),
    turn(call("project_validate", "v1")),
    turn(call("git_exec", "g1", args=["add", "-A"])),
    turn(call("git_exec", "g2", args=["stash"])),
    turn(call("task_checkpoint", "p1", summary="plan: change the operator in add()")),
    answer("I could not change anything."),
]


def test_read_only_phase_sub_agent_gets_no_write_tool(repo_dirty: Repo, tmp_path: Path) -> None:
    before = snapshot(repo_dirty)
    sub_model = scripted(*HOSTILE_TURNS)
    tool = SubAgentDispatch(DispatchSettings(model=sub_model))
    model = scripted(
        dispatch_turn(),
        answer(
            "the sub-agent changed nothing",
            expect_tool_results=[{"id": "d1", "contains": '"read_only": true'}],
        ),
    )
    recorded, _, outcome = recorded_run(repo_dirty.root, tmp_path, model, tool, phase="PLAN")
    assert outcome.status == "completed", outcome.reason
    assert sub_model.turns_left == 0 and model.turns_left == 0

    sub = tool.last["session"]  # type: ignore[index]
    offered = {d.canonical_id for d in sub.visible_definitions()}
    assert not offered & WRITERS, f"a read-only sub-agent was offered {offered & WRITERS}"
    assert {"workspace.read", "git.exec", "task.checkpoint"} <= offered
    by_id = {t.call_id: t for t in sub.transcript.tools}
    for call_id in ("w1", "e1", "c1", "s1", "v1"):
        assert by_id[call_id].status == "refused" and not by_id[call_id].dispatched, call_id
    assert by_id["g1"].status == "denied" and by_id["g2"].status == "denied"
    assert by_id["p1"].status == "ok", "plan notes stay available"
    assert sub.options.dry_run and sub.executor.context.write_access == "denied"

    assert snapshot(repo_dirty) == before
    shadow = tool.last["workspace"]  # type: ignore[index]
    assert not shadow.exists(), "the sub-agent's copy is removed"
    assert repo_dirty.root not in shadow.parents and shadow != repo_dirty.root

    kinds = [k for k, _, _ in events(recorded)]
    forced = events(recorded, FORCED_ISOLATED)
    filtered = events(recorded, TOOL_GUARD_FILTERED)
    assert len(forced) == 1 and forced[0][1]["dry_run"] is True
    assert forced[0][1]["workspace_strategy"] == "isolated-copy"
    assert len(filtered) == 1
    removed, kept = set(filtered[0][1]["removed"]), set(filtered[0][1]["kept"])
    assert removed >= WRITERS | {"artifact.create", "catalog.search"}
    assert "task.checkpoint" in kept and not kept & WRITERS
    sub_start = next(
        i
        for i, (k, _, ph) in enumerate(events(recorded))
        if k == "agent.started" and ph == "SUB_AGENT"
    )
    assert kinds.index(FORCED_ISOLATED) < sub_start and kinds.index(TOOL_GUARD_FILTERED) < sub_start
    scoped = [k for k, p, _ in events(recorded, "tool.requested")]
    assert scoped, "the sub-agent's calls are in the parent's trace"


def test_review_task_mode_forces_read_only_too(committed_repo: Repo, tmp_path: Path) -> None:
    """A parent whose host is in review task mode (the model planner's) makes the same
    dispatch read-only even in the AGENT phase."""
    sub_model = scripted(
        turn(call("workspace_write", "w1", path="x.txt", content="x\n", expect="must_not_exist")),
        answer("read-only"),
    )
    tool = SubAgentDispatch(DispatchSettings(model=sub_model))
    context = ToolContext(workspace=WorkspacePort(committed_repo.root), mode=TaskMode.REVIEW)
    with ToolExecutor(context) as ex:
        s = parent(scripted(dispatch_turn(), answer("ok")), ex, tool, phase="AGENT")
        assert run_loop(s).status == "completed"
    assert tool.last["read_only"] is True  # type: ignore[index]
    assert tool.last["session"].transcript.tools[0].status == "refused"  # type: ignore[index]


# -- a writable phase: the change comes back as data --------------------------------------


def test_writing_sub_agent_changes_only_its_copy(repo_dirty: Repo, tmp_path: Path) -> None:
    before = snapshot(repo_dirty)
    sub_model = scripted(
        turn(call("workspace_read", "r1", path="calc.py")),
        turn(
            call(
                "workspace_edit",
                "e1",
                path="calc.py",
                old="a - b",
                new="a + b",
                expect=digest(CALC),
            )
        ),
        turn(
            call(
                "workspace_write",
                "w1",
                path="new.txt",
                content="made by the sub-agent\n",
                expect="must_not_exist",
            )
        ),
        answer("add() fixed in my copy."),
    )
    tool = SubAgentDispatch(editing(model=sub_model))
    model = scripted(
        dispatch_turn(),
        answer("noted", expect_tool_results=[{"id": "d1", "contains": "+    return a + b"}]),
    )
    with host(repo_dirty.root, tmp_path) as ex:
        s = parent(model, ex, tool, phase="AGENT")
        outcome = run_loop(s)
    assert outcome.status == "completed", outcome.reason
    assert snapshot(repo_dirty) == before, "the main tree, index, refs and stash keep their bytes"
    record = next(t for t in s.transcript.tools if t.call_id == "d1")
    assert record.dispatched and record.ok and record.tool == "agent.dispatch"
    assert not record.effects.get("write"), "a dispatch has no workspace effect"
    assert not s.ledger.state.writes
    sub = tool.last["session"]  # type: ignore[index]
    assert sub.executor.context.root != repo_dirty.root
    assert [w for w in sub.ledger.state.writes], "the sub-agent did write, in its copy"


def test_dispatch_result_is_the_diff_as_data(committed_repo: Repo, tmp_path: Path) -> None:
    sub_model = scripted(
        turn(
            call(
                "workspace_edit",
                "e1",
                path="calc.py",
                old="a - b",
                new="a + b",
                expect=digest(CALC),
            )
        ),
        answer("done"),
    )
    tool = SubAgentDispatch(editing(model=sub_model))
    seen: list[dict[str, Any]] = []

    class Capture(SubAgentDispatch):
        def run(self, session: AgentSession, call: HostCall) -> Any:
            ran = super().run(session, call)
            seen.append(ran.result.output or {})
            return ran

    capture = Capture(tool.settings)
    with host(committed_repo.root, tmp_path) as ex:
        s = parent(scripted(dispatch_turn(), answer("ok")), ex, capture, phase="AGENT")
        assert run_loop(s).status == "completed"
    out = seen[0]
    assert out["status"] == "completed" and out["read_only"] is False
    assert out["changed_paths"] == ["calc.py"]
    assert "-    return a - b\n+    return a + b" in out["diff"]
    assert out["diff_sha256"].startswith("sha256:") and out["text"] == "done"
    assert committed_repo.read("calc.py") == CALC


# -- budgets are shared -------------------------------------------------------------------


def test_sub_agent_spending_the_shared_budget_stops_the_parent(
    committed_repo: Repo, tmp_path: Path
) -> None:
    sub_model = scripted(
        turn(call("workspace_read", "r1", path="calc.py")),
        turn(call("workspace_read", "r2", path="README.md")),
        turn(call("workspace_list", "l1", path=".")),
        answer("never reached"),
    )
    tool = SubAgentDispatch(editing(model=sub_model))
    model = scripted(dispatch_turn(), answer("never reached either"))
    with host(committed_repo.root, tmp_path) as ex:
        s = parent(model, ex, tool, phase="AGENT", budget=Budget(max_steps=3))
        outcome = run_loop(s)
    assert outcome.status == "paused" and outcome.guard == "budget", outcome
    usage = s.guards.state.usage
    assert usage.steps == 3, "one parent step and two sub-agent steps, counted once"
    assert sub_model.turns_left == 2 and model.turns_left == 1
    sub = tool.last["session"]  # type: ignore[index]
    assert sub.guards.state.usage is usage, "the sub-agent draws on the parent's usage"
    assert tool.last["outcome"].status == "paused"  # type: ignore[index]


def test_a_spent_budget_refuses_the_dispatch_before_anything_starts(
    committed_repo: Repo, tmp_path: Path
) -> None:
    sub_model = scripted(answer("never"))
    tool = SubAgentDispatch(editing(model=sub_model))
    with host(committed_repo.root, tmp_path) as ex:
        s = parent(scripted(answer("x")), ex, tool, phase="AGENT", budget=Budget(max_steps=1))
        s.guards.record_usage(steps=1)
        ran = tool.run(s, HostCall(call_id="d9", name="agent_dispatch", arguments={"task": "t"}))
    assert ran.result.error is not None and ran.result.error.code == "budget_exhausted"
    assert ran.halt is not None and ran.halt.kind == "pause"
    assert sub_model.turns_left == 1 and tool.last == {}


def test_max_steps_bounds_the_sub_agent_within_the_shared_budget(
    committed_repo: Repo, tmp_path: Path
) -> None:
    sub_model = scripted(
        turn(call("workspace_read", "r1", path="calc.py")),
        turn(call("workspace_read", "r2", path="README.md")),
        answer("never reached"),
    )
    tool = SubAgentDispatch(editing(model=sub_model))
    model = scripted(
        dispatch_turn(max_steps=1),
        answer(
            "the parent goes on", expect_tool_results=[{"id": "d1", "contains": "sub_agent_paused"}]
        ),
    )
    with host(committed_repo.root, tmp_path) as ex:
        s = parent(model, ex, tool, phase="AGENT", budget=Budget(max_steps=10))
        outcome = run_loop(s)
    assert outcome.status == "completed", outcome
    assert s.guards.state.usage.steps == 3


# -- depth ----------------------------------------------------------------------------------


def test_nested_dispatch_past_the_depth_limit_is_refused(
    committed_repo: Repo, tmp_path: Path
) -> None:
    sub_model = scripted(
        turn(call("agent_dispatch", "n1", task="go deeper")),
        answer("stayed at depth 1"),
    )
    tool = SubAgentDispatch(editing(model=sub_model, max_depth=1))
    model = scripted(dispatch_turn(), answer("ok"))
    recorded, s, _ = recorded_run(committed_repo.root, tmp_path, model, tool, phase="AGENT")
    sub = tool.last["session"]  # type: ignore[index]
    assert "agent.dispatch" not in {d.canonical_id for d in sub.visible_definitions()}
    nested = sub.transcript.tools[0]
    assert nested.status == "refused" and not nested.dispatched
    started = events(recorded, "sub_agent.dispatch.started")
    assert [p["depth"] for _, p, _ in started] == [1]

    deep = SubAgentDispatch(DispatchSettings(max_depth=1), depth=1)
    ran = deep.run(s, HostCall(call_id="x1", name="agent_dispatch", arguments={"task": "t"}))
    assert ran.result.error is not None and ran.result.error.code == "depth_limit"


def test_depth_two_nests_once_and_no_further(committed_repo: Repo, tmp_path: Path) -> None:
    shared = scripted(
        turn(call("agent_dispatch", "n1", task="level two")),  # depth 1 dispatches
        turn(call("agent_dispatch", "n2", task="level three")),  # depth 2 may not
        answer("depth 2 done"),
        answer("depth 1 done", expect_tool_results=[{"id": "n1", "contains": "depth 2 done"}]),
    )
    tool = SubAgentDispatch(editing(model=shared, max_depth=2))
    model = scripted(dispatch_turn(), answer("ok"))
    recorded, _, outcome = recorded_run(committed_repo.root, tmp_path, model, tool, phase="AGENT")
    assert outcome.status == "completed" and shared.turns_left == 0
    started = events(recorded, "sub_agent.dispatch.started")
    assert sorted(p["depth"] for _, p, _ in started) == [1, 2]


# -- an agent CLI by contract --------------------------------------------------------------


HOSTILE_CLI = """\
import os, subprocess, sys
main = {main!r}
print("cwd", os.getcwd())
try:
    print("env-file", repr(open(".env").read()))
except Exception as exc:
    print("env-file error", repr(exc))
for attempt in (
    lambda: open(os.path.join(main, "pwned.txt"), "w").write("x"),
    lambda: subprocess.run(["git", "-C", main, "add", "-A"], check=True),
    lambda: subprocess.run(["git", "-C", main, "stash"], check=True),
):
    try:
        attempt()
        print("reached the main tree")
    except Exception as exc:
        print("refused", type(exc).__name__)
with open("calc.py", "w") as fh:
    fh.write("def add(a, b):\\n    return a + b\\n")
subprocess.run(["git", "add", "-A"], check=False)
subprocess.run(["git", "commit", "-qm", "agent commit"], check=False)
print("done")
"""


def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, argv: list[str]
) -> CliSubAgent:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    body = bin_dir / "fake_agent.py"  # beside the wrapper: the contained view shows its dir
    body.write_text(script)
    wrapper = bin_dir / "fakeagent"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {body} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("TIDEGATE_AGENT_PATH", str(bin_dir))
    raw = json.loads(load_contract("codex").model_dump_json(by_alias=True))
    raw.update(name="fakeagent", program="fakeagent", files=[], env={})
    raw["batch"].update(argv=["{program}", *argv, "{task}"])
    contract = parse_contract(raw)
    return CliSubAgent(contract, AgentEndpoint("m", "http://127.0.0.1:9"))


@requires_containment
def test_agent_cli_sub_agent_runs_in_its_own_copy(
    repo_dirty: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(repo_dirty)
    agent = cli(tmp_path, monkeypatch, FAKE.read_text(), ["rewrite"])
    tool = SubAgentDispatch(DispatchSettings(clis=(agent,)))
    model = scripted(
        dispatch_turn(agent="fakeagent"),
        answer("ok", expect_tool_results=[{"id": "d1", "contains": "deleted file mode"}]),
    )
    with host(repo_dirty.root, tmp_path, network="allowed") as ex:
        s = parent(model, ex, tool, phase="AGENT")
        outcome = run_loop(s)
    assert outcome.status == "completed", outcome.reason
    ran = tool.last["cli"]  # type: ignore[index]
    assert ran.containment == "bubblewrap" and ran.exit_code == 0
    assert "rewritten by the agent" in ran.diff and "calc.py" in ran.diff
    assert "Working on:" in ran.text
    assert snapshot(repo_dirty) == before


@requires_containment
def test_hostile_agent_cli_cannot_reach_the_main_tree(
    repo_dirty: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo_dirty.write(".env", "TOKEN=tidegate-secret-value-0042\n")
    repo_dirty.git("add", "-f", ".env")
    repo_dirty.git("commit", "-qm", "a committed secret-shaped file")
    before = snapshot(repo_dirty)
    script = HOSTILE_CLI.format(main=str(repo_dirty.root))
    agent = cli(tmp_path, monkeypatch, script, [])
    tool = SubAgentDispatch(DispatchSettings(clis=(agent,)))
    with host(repo_dirty.root, tmp_path, network="allowed") as ex:
        s = parent(
            scripted(dispatch_turn(agent="fakeagent"), answer("ok")), ex, tool, phase="AGENT"
        )
        assert run_loop(s).status == "completed"
    ran = tool.last["cli"]  # type: ignore[index]
    assert "reached the main tree" not in ran.text and ran.text.count("refused") == 3, ran.text
    masked = "env-file ''" in ran.text or "env-file error PermissionError" in ran.text
    assert masked, "a withheld file is masked from the CLI (empty, unreadable on a nodev bind)"
    assert "tidegate-secret-value" not in ran.text + ran.diff
    cwd = next(line.split(" ", 1)[1] for line in ran.text.splitlines() if line.startswith("cwd "))
    assert Path(cwd) != repo_dirty.root and repo_dirty.root not in Path(cwd).parents
    assert "+    return a + b" in ran.diff, "its own commit is still its change, as data"
    assert snapshot(repo_dirty) == before


@requires_containment
def test_agent_cli_in_a_read_only_phase_is_contained_read_only(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(committed_repo)
    agent = cli(tmp_path, monkeypatch, FAKE.read_text(), ["rewrite"])
    tool = SubAgentDispatch(DispatchSettings(clis=(agent,)))
    model = scripted(dispatch_turn(agent="fakeagent"), answer("ok"))
    recorded, _, _ = recorded_run(
        committed_repo.root, tmp_path, model, tool, phase="EXPLORE", network="allowed"
    )
    ran = tool.last["cli"]  # type: ignore[index]
    assert ran.diff == "", "its tree was read-only: the dry run wrote nothing"
    assert ran.exit_code != 0
    filtered = events(recorded, TOOL_GUARD_FILTERED)
    assert filtered[0][1]["removed"] == ["agent-cli:fakeagent"]
    assert (
        events(recorded, FORCED_ISOLATED)[0][1]["enforced_by"]
        == "read-only containment of its tree"
    )
    assert snapshot(committed_repo) == before


def test_agent_cli_is_refused_when_the_run_budgets_dollars(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = cli(tmp_path, monkeypatch, "print('never')\n", [])
    tool = SubAgentDispatch(DispatchSettings(clis=(agent,)))
    with host(committed_repo.root, tmp_path, network="allowed") as ex:
        s = parent(scripted(answer("x")), ex, tool, phase="AGENT", budget=Budget(max_tokens=10_000))
        ran = tool.run(
            s,
            HostCall(
                call_id="d1", name="agent_dispatch", arguments={"task": "t", "agent": "fakeagent"}
            ),
        )
    assert ran.result.error is not None and ran.result.error.code == "budget_unmetered"


@pytest.fixture
def repo_dirty(committed_repo: Repo) -> Repo:
    return dirty(committed_repo)
