"""``--sub-agent codex``: a model hands a sub-task to a real agent CLI from its planning
session, which is read-only; the CLI runs on its own copy, read-only and contained, and
its answer comes back to the model as the tool result. Before, every such dispatch was
refused (judged as a shell with network in a session that denies both)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CALC, Repo
from tests.integration.agents.conftest import require_agent, require_containment
from tests.integration.agents.servers import ScriptedServer, responses_turn

CHECK = (
    f"{sys.executable} -B -c 'from calc import add, mul; "
    'assert add(2, 3) == 5, "add(2, 3) should be 5"; assert mul(2, 3) == 6\''
)


def _tool(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": arguments}


def test_a_model_hands_a_read_only_sub_task_to_codex(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("codex")
    require_containment()
    committed_repo.write("notes.txt", "my untracked notes\n")
    index_before = committed_repo.index_bytes()
    script = tmp_path / "model.json"
    fix = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    script.write_text(
        json.dumps(
            {
                "model": "e2e-model",
                "turns": [
                    {
                        "tool_calls": [
                            _tool(
                                "d1", "agent_dispatch", agent="codex", task="Find the bug in add()."
                            )
                        ]
                    },
                    {
                        "expect_tool_results": [{"id": "d1", "contains": "subtracts"}],
                        "text": "Plan: make add() add.",
                    },
                    {"text": fix},
                ],
            }
        )
    )
    answer = responses_turn(text="add() subtracts; it should add.")
    with ScriptedServer(lambda i, b: answer) as server:
        env = {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test-sub-agent",
        }
        res = subprocess.run(
            [sys.executable, "-m", "tidegate", "run", "--repo", str(committed_repo.root),
             "--json", "--objective", "Fix add().", "--model", f"scripted:{script}",
             "--sub-agent", "codex", "--verify", CHECK, "--max-attempts", "1"],
            env={**os.environ, **env}, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert server.requests, "codex never reached its model"
    report = json.loads(res.stdout)
    assert report["status"] == "succeeded", (report["message"], res.stderr[-2000:])
    assert committed_repo.read("calc.py") == CALC.replace("a - b", "a + b")
    assert committed_repo.read("notes.txt") == "my untracked notes\n"
    assert committed_repo.index_bytes() == index_before
