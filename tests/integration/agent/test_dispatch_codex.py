"""The real Codex CLI as a sub-agent by its shipped contract, against a scripted Responses
server on loopback: its change comes back to the parent as data from its own contained
copy, and from a read-only phase it cannot write at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial._dispatch import dirty, dispatch_turn, events, host, parent, snapshot
from tests.conformance._agent import Recorded, answer, scripted
from tests.conftest import Repo
from tests.integration.agents.conftest import require_agent, require_containment
from tests.integration.agents.servers import ScriptedServer, responses_turn
from tidegate.agent import DispatchSettings, SubAgentDispatch, run_loop
from tidegate.agent.sub_audit import TOOL_GUARD_FILTERED
from tidegate.agents.contracts import load_contract
from tidegate.agents.launch import AgentEndpoint
from tidegate.planners.agent import CliSubAgent

RIGHT = "sed -i 's/a - b/a + b/' calc.py"


def codex_server() -> ScriptedServer:
    def reply(index: int, body: dict[str, Any]) -> bytes:
        if '"function_call_output"' in json.dumps(body):
            return responses_turn(text="Changed add() to add.")
        return responses_turn(commands=[RIGHT])

    return ScriptedServer(reply)


def codex(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> CliSubAgent:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-agent-key")
    contract = load_contract("codex")
    return CliSubAgent(contract, AgentEndpoint.of(contract, "test-model"))


@pytest.mark.parametrize("phase", ["AGENT", "PLAN"])
def test_codex_as_a_sub_agent(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    require_agent("codex")
    require_containment()
    repo = dirty(committed_repo)
    before = snapshot(repo)
    recorded = Recorded(repo.root)
    with codex_server() as server:
        tool = SubAgentDispatch(DispatchSettings(clis=(codex(server, monkeypatch),)))
        model = scripted(dispatch_turn(agent="codex"), answer("ok"))
        with host(repo.root, tmp_path, network="allowed") as ex:
            s = parent(model, ex, tool, phase=phase, recorder=recorded.recorder)
            outcome = run_loop(s)
            recorded.finish(s, outcome)
        assert server.requests, "codex reached its (scripted) model"
        outputs = [
            json.dumps(r) for r in server.requests if "function_call_output" in json.dumps(r)
        ]
    assert outcome.status == "completed", outcome.reason
    ran = tool.last["cli"]  # type: ignore[index]
    assert ran.containment == "bubblewrap"
    if phase == "AGENT":
        assert "+    return a + b" in ran.diff
    else:
        assert ran.diff == "", "from a read-only phase its tree is read-only"
        assert outputs and "Read-only file system" in outputs[0], "its sed ran and was refused"
        removed = events(recorded, TOOL_GUARD_FILTERED)[0][1]["removed"]
        assert removed == ["agent-cli:codex"]
    assert snapshot(repo) == before
    assert "return a - b" in repo.read("calc.py")
