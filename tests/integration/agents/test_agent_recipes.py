"""The shipped per-agent recipes (a version probe and a prompt-reachability probe for each
agent contract) against the real programs, through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e._operator import op
from tests.integration.agents.conftest import require_agent
from tidegate.agents.contracts import contract_names
from tidegate.operator.recipes import recipe_names


def test_every_agent_contract_ships_both_probes() -> None:
    for agent in contract_names():
        assert {f"{agent}-version-check", f"{agent}-prompt-check"} <= set(recipe_names())


@pytest.mark.parametrize("agent", contract_names())
@pytest.mark.parametrize("probe", ["version-check", "prompt-check"])
def test_agent_probes_pass_against_the_real_program(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, agent: str, probe: str
) -> None:
    require_agent(agent)
    root = tmp_path / "state"
    res = op(
        capsys,
        "engineer",
        "terminal-recipe",
        "single-process",
        f"{agent}-{probe}",
        str(root),
        "--cwd",
        str(tmp_path),
        "--json",
    )
    assert res.code == 0, res.out
    view = res.json()
    assert view["outcome"] == "success", view["failure"]
    assert all(s["status"] in ("sent", "satisfied", "met", "set") for s in view["steps"])
