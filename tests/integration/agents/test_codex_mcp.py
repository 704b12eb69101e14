"""The real Codex CLI making its edits through tidegate over MCP.

``tidegate mcp serve`` is registered in Codex's own ``config.toml`` (``[mcp_servers.tidegate]``
as ``codex_mcp_table`` writes it), Codex runs ``codex exec`` in its read-only sandbox, and a
scripted Responses-API model on loopback calls ``change_propose``: first a change that fails
its verification, then, after reading the feedback, the right one. Codex forwards each call
to tidegate over MCP; tidegate runs its guarded transaction on the user's dirty repository;
the report goes back to the model as the call's output."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Repo
from tests.integration.agents.conftest import require_agent, require_containment
from tests.integration.agents.servers import ScriptedServer, responses_mcp_call, responses_turn
from tidegate.agents.contracts import expand, load_contract
from tidegate.agents.mcp_registration import codex_mcp_table

NAMESPACE = "mcp__tidegate"
CHECK = f"{sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5'"
FIX = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
WRONG = FIX.replace("a + b", "a * b")


def offered_tools(body: dict[str, Any]) -> dict[str, list[str]]:
    """The tools of one request: namespaces with their functions, plain tools as []."""
    return {
        t.get("name", t.get("type", "?")): [f["name"] for f in t.get("tools", [])]
        for t in body.get("tools", [])
    }


def call_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The reports in a request's function_call_output items, decoded from Codex's text
    (``Wall time: ...\\nOutput:\\n{json}``, a string or a list of text parts)."""
    reports = []
    for item in body.get("input", []):
        if item.get("type") != "function_call_output":
            continue
        output = item["output"]
        text = output if isinstance(output, str) else "".join(p.get("text", "") for p in output)
        start = text.find("{")
        reports.append(json.JSONDecoder().raw_decode(text[start:])[0] if start >= 0 else {})
    return reports


def model(index: int, body: dict[str, Any]) -> bytes:
    """The scripted model: propose WRONG, then FIX once the feedback came back, then stop."""
    if "change_propose" not in offered_tools(body).get(NAMESPACE, []):
        return responses_turn(text="No tidegate change tool was offered.")
    done = call_outputs(body)
    if not done:
        return responses_mcp_call(
            NAMESPACE, "change_propose", {"search_replace": WRONG, "verify": CHECK}
        )
    if len(done) == 1:
        return responses_mcp_call(
            NAMESPACE,
            "change_propose",
            {"search_replace": FIX, "verify": CHECK, "summary": "fix add"},
            n=1,
        )
    return responses_turn(text="Done.")


def codex_home(tmp_path: Path, repo: Repo, server: ScriptedServer, **table: Any) -> Path:
    """A CODEX_HOME: the shipped codex contract's provider config, pointed at the scripted
    server, plus tidegate's MCP registration."""
    contract = load_contract("codex")
    home = tmp_path / "codex-home"
    home.mkdir()
    values = {
        "model": "test-model",
        "base_url": server.base_url,
        "key_env": contract.model.key_env,
        "workdir": str(repo.root),
    }
    (config,) = (f for f in contract.files if f.path.endswith("config.toml"))
    text = expand(config.content, values) + "\n" + codex_mcp_table(repo.root, **table)
    (home / "config.toml").write_text(text)
    return home


def codex_exec(program: str, repo: Repo, home: Path, task: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CODEX_HOME": str(home),
        "HOME": str(home.parent),
        "OPENAI_API_KEY": "sk-test-agent-key",
    }
    argv = [
        program,
        "exec",
        "--json",
        "-s",
        "read-only",
        "--skip-git-repo-check",
        "-m",
        "test-model",
        task,
    ]
    return subprocess.run(
        argv,
        cwd=repo.root,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def mcp_events(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [
        e["item"]
        for e in events
        if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "mcp_tool_call"
    ]


def test_codex_calls_change_propose_and_the_change_lands_as_unstaged_edits(
    dirty: Repo, tmp_path: Path
) -> None:
    program = require_agent("codex")
    require_containment()  # change_propose runs the client's verify contained, or not at all
    index, staged = dirty.index_bytes(), dirty.git("diff", "--cached")
    readme, notes = dirty.read("README.md"), dirty.read("notes.txt")
    with ScriptedServer(model) as server:
        home = codex_home(tmp_path, dirty, server, state_root=tmp_path / "state")
        res = codex_exec(program, dirty, home, "Make add() add, through tidegate.")
        requests = server.requests
    assert res.returncode == 0, res.stderr[-2000:]
    assert "change_propose" in offered_tools(requests[0]).get(NAMESPACE, []), offered_tools(
        requests[0]
    )
    assert offered_tools(requests[0])[NAMESPACE] == ["change_propose"]  # enabled_tools holds
    # Codex forwarded both calls to tidegate, and each report reached the model.
    assert [(e["server"], e["tool"], e["status"]) for e in mcp_events(res.stdout)] == [
        ("tidegate", "change_propose", "failed"),  # Codex's word for is_error: verify failed
        ("tidegate", "change_propose", "completed"),
    ]
    failed, succeeded = call_outputs(requests[2])
    assert call_outputs(requests[1]) == [failed]
    assert failed["status"] == "failed" and failed["ok"] is False and failed["feedback"], failed
    assert succeeded["status"] == "succeeded" and succeeded["verify"]["exit_code"] == 0, succeeded
    (applied,) = succeeded["applied_files"]
    assert applied["path"] == "calc.py"
    assert (
        applied["after_sha256"] == hashlib.sha256((dirty.root / "calc.py").read_bytes()).hexdigest()
    )
    # The change landed as an unstaged edit; the user's staged change, index, unstaged and
    # untracked work are as they were.
    assert "return a + b" in dirty.read("calc.py")
    assert dirty.index_bytes() == index
    assert dirty.git("diff", "--cached") == staged
    assert dirty.read("README.md") == readme and dirty.read("notes.txt") == notes
    assert dirty.git("diff", "--name-only").split() == ["README.md", "calc.py"]


def test_a_tidegate_server_that_cannot_start_fails_the_codex_run(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """``required = true``: Codex refuses to run without tidegate rather than letting the
    model work without its guarded edit tool."""
    program = require_agent("codex")
    tree = committed_repo.tree_state(with_mtimes=True)
    with ScriptedServer(model) as server:
        home = codex_home(tmp_path, committed_repo, server, approval="no-such-profile")
        res = codex_exec(program, committed_repo, home, "Make add() add.")
        requests = server.requests
    assert res.returncode != 0
    assert "required MCP servers failed to initialize: tidegate" in res.stderr
    assert requests == []  # the model was never asked
    assert committed_repo.tree_state(with_mtimes=True) == tree
