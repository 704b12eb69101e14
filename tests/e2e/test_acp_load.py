"""``session/load`` against the SDK's client side: an editor that reopens a session (a new
``tidegate acp`` process) is sent its history from the run store -- the prompt, each phase,
the held change as the pending edit it was -- and can still answer it: the next prompt
asks for the held change first, and "apply" lands it as unstaged edits. A session the
repository's store does not know is refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.conftest import CALC, Repo, requires_containment
from tests.e2e._acp import SCRIPT, Client, tidegate_acp

pytestmark = requires_containment
FIXED = CALC.replace("a - b", "a + b")


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def _held_session(repo: Repo, script: Path) -> tuple[str, str]:
    """A session whose prompt's change is held, unanswered: (session id, run id)."""
    client = Client(None, repo)

    async def first() -> str:
        async with tidegate_acp(client, script) as conn:
            new = await conn.new_session(cwd=str(repo.root), mcp_servers=[])
            prompt = [acp.text_block("Fix add() so that add(2, 3) == 5.")]
            await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=prompt), 120)
            return str(new.session_id)

    session_id = asyncio.run(first())
    [(_, call)] = client.permissions
    return session_id, call.raw_input["run_id"]


def test_a_reopened_session_replays_its_run_and_can_still_apply_it(
    committed_repo: Repo, script: Path
) -> None:
    repo = committed_repo
    index = repo.index_bytes()
    session_id, run_id = _held_session(repo, script)
    assert repo.read("calc.py") == CALC
    client = Client("apply", repo)

    async def reopen() -> tuple[Any, Any, int]:
        async with tidegate_acp(client, script) as conn:
            loaded = await conn.load_session(
                cwd=str(repo.root), session_id=session_id, mcp_servers=[]
            )
            replayed = len(client.updates)
            prompt = [acp.text_block("Now make mul() handle None.")]
            response = await asyncio.wait_for(
                conn.prompt(session_id=session_id, prompt=prompt), 120
            )
            return loaded, response, replayed

    loaded, response, replayed = asyncio.run(reopen())
    assert loaded is not None and response.stop_reason == "end_turn"
    history = client.updates[:replayed]
    assert history[0].session_update == "user_message_chunk"
    assert history[0].content.text == "Fix add() so that add(2, 3) == 5."
    lines = [u.content.text for u in history if u.session_update == "agent_message_chunk"]
    assert "[attempt 1] VERIFY ok" in "".join(lines)
    [held] = [u for u in history if u.session_update == "tool_call"]
    assert (held.tool_call_id, held.status, held.kind) == (f"held-{run_id}", "pending", "edit")
    assert "+    return a + b" in held.content[0].content.text
    # The next prompt asked for the held change first, and "apply" landed it.
    _, first_call = client.permissions[0]
    assert first_call.raw_input["run_id"] == run_id
    assert repo.read("calc.py") == FIXED and repo.index_bytes() == index
    assert f"applied the held change of run {run_id}" in client.text()
    settled = [
        u.status
        for u in client.updates[replayed:]
        if u.session_update == "tool_call_update" and u.tool_call_id == f"held-{run_id}"
    ]
    assert settled == ["completed"]  # the replayed pending edit is settled


def test_a_session_the_store_does_not_know_is_refused(committed_repo: Repo, script: Path) -> None:
    client = Client("apply", committed_repo)

    async def reopen() -> Any:
        async with tidegate_acp(client, script) as conn:
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            assert init.agent_capabilities.load_session is True
            with pytest.raises(acp.RequestError) as refused:
                await conn.load_session(
                    cwd=str(committed_repo.root), session_id="f" * 32, mcp_servers=[]
                )
            return refused.value

    error = asyncio.run(reopen())
    assert error.code == -32602 and client.updates == []
