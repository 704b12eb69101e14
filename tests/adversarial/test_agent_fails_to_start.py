"""An agent that fails (to start, or to reach its model) ends the run with its own error
as CAPABILITY_MISMATCH, not "changed nothing" and a LOGIC retry that cannot help; the
error line is not hidden behind a banner line it printed after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, requires_containment
from tidegate.agents.contracts import load_contract, parse_contract
from tidegate.agents.launch import AgentEndpoint
from tidegate.flow.transaction import execute
from tidegate.planners.agent import AgentPlanner
from tidegate.records.request import RunRequest

FAILING = (
    "echo 'Error: Cannot find module @openai/codex-linux-x64' >&2; "
    "echo 'codex-cli 0.0.0 (banner)' >&2; exit 1"
)


@requires_containment
def test_an_agent_that_fails_to_start_is_a_capability_mismatch_with_its_error(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "brokenagent"
    program.write_text(f"#!/bin/sh\n{FAILING}\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    raw = json.loads(load_contract("codex").model_dump_json(by_alias=True))
    monkeypatch.setenv("TIDEGATE_AGENT_PATH", str(bin_dir))
    raw.update(name="brokenagent", program="brokenagent", files=[], env={})
    raw["batch"]["argv"] = ["{program}", "{task}"]
    contract = parse_contract(raw)
    monkeypatch.setenv(contract.model.key_env, "sk-test")
    before = committed_repo.tree_state()
    request = RunRequest(
        repo=committed_repo.root,
        objective="Make add() add.",
        verify="true",
        agent="brokenagent",
        max_attempts=3,
    )
    planner = AgentPlanner(contract, AgentEndpoint.of(contract, "m"), containment="required")
    report = execute(request, planner=planner)
    assert report.status == "failed"
    assert report.error_class == "CAPABILITY_MISMATCH", report.message
    assert "Cannot find module" in report.message
    assert report.attempts == 1  # not retried
    assert committed_repo.tree_state() == before
