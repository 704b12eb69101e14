"""An agent CLI runs arbitrary commands for a model that the repository may have
prompt-injected: it is contained by default, and where containment cannot be had the run is
refused before the agent starts, unless the user explicitly chose ``--containment none``."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tests.integration.agents.conftest import require_agent
from tests.integration.agents.servers import ScriptedServer, responses_turn


def test_no_containment_means_no_agent(
    committed_repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("codex")
    monkeypatch.setenv("TIDEGATE_BWRAP", "/nonexistent/bwrap")  # containment unavailable
    tree = committed_repo.tree_state(with_mtimes=True)
    with ScriptedServer(lambda i, b: responses_turn(commands=["touch /tmp/never"])) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        report = committed_repo.run("Fix add.", verify="true", agent="codex", agent_model="m")
        assert server.requests == []  # the agent never started
    assert report.status == "failed"
    assert report.error_class == "CAPABILITY_MISMATCH", report.message
    assert "refused to run an agent CLI uncontained" in report.message
    assert committed_repo.tree_state(with_mtimes=True) == tree
