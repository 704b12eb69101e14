"""``tidegate acp`` streams a run as it happens, checked against the SDK's client side end
to end (a real ``tidegate acp`` subprocess, the scripted model, a real repository): each
phase as a message line and as the attempt's plan; each tool call the model makes as
``tool_call`` (pending) and ``tool_call_update`` (in progress, then completed or failed
with what the host attested); the proposal, once VALIDATE built it, as an edit whose
content is ACP diffs; all in the order they happened, before the permission request.

With ``TIDEGATE_ACP_TRANSCRIPT=PATH`` the session's wire is written to PATH (that is how
docs/acp-session.md is made)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.conftest import CALC, Repo, requires_containment
from tests.e2e._acp import SCRIPT, Client, tidegate_acp

pytestmark = requires_containment
TWO_CALLS = {
    **SCRIPT,
    "turns": [
        {
            "text": "Looking for add().",
            "tool_calls": [
                {"id": "g1", "name": "workspace_grep", "arguments": {"pattern": "def add"}},
                {"id": "r1", "name": "workspace_read", "arguments": {"path": "missing.py"}},
            ],
        },
        *SCRIPT["turns"][1:],  # type: ignore[index]
    ],
}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(TWO_CALLS))
    return path


def _at(updates: list[Any], text: str) -> int:
    """The index of the message chunk that starts with ``text``."""
    for i, u in enumerate(updates):
        if u.session_update == "agent_message_chunk" and u.content.text.startswith(text):
            return i
    raise AssertionError(f"no message {text!r}")


def _tool_updates(updates: list[Any], call_id: str) -> list[tuple[int, str, str | None]]:
    return [
        (i, u.session_update, u.status)
        for i, u in enumerate(updates)
        if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id
    ]


def test_phases_tool_calls_and_the_proposal_stream_in_order(
    committed_repo: Repo, script: Path
) -> None:
    client = Client("apply", committed_repo)

    async def session() -> Any:
        async with tidegate_acp(client, script) as conn:
            new = await conn.new_session(cwd=str(committed_repo.root), mcp_servers=[])
            prompt = [acp.text_block("Fix add() so that add(2, 3) == 5.")]
            return await asyncio.wait_for(
                conn.prompt(session_id=new.session_id, prompt=prompt), 120
            )

    response = asyncio.run(session())
    assert response.stop_reason == "end_turn"
    updates = client.updates
    plan_started, plan_done = (
        _at(updates, "[attempt 1] PLAN ..."),
        _at(updates, "[attempt 1] PLAN ok"),
    )

    grep = _tool_updates(updates, "tool-1")
    assert [(kind, status) for _, kind, status in grep] == [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
    ]
    read = _tool_updates(updates, "tool-2")
    assert [(kind, status) for _, kind, status in read] == [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "failed"),
    ]
    assert all(plan_started < i < plan_done for i, _, _ in grep + read)
    assert grep[-1][0] < read[1][0]  # dispatched one after the other, as the model asked
    started = updates[grep[0][0]]
    assert started.kind == "search" and "def add" in started.title
    done = updates[grep[-1][0]]
    assert "calc.py" in done.content[0].content.text
    assert [loc.path for loc in done.locations] == [str(committed_repo.root / "calc.py")]
    assert "failed" in updates[read[-1][0]].content[0].content.text

    [(index, kind, status)] = _tool_updates(updates, "proposal-1")
    assert (kind, status) == ("tool_call", "completed")
    assert _at(updates, "[attempt 1] VALIDATE ok") < index < _at(updates, "[attempt 1] VERIFY ...")
    proposal = updates[index]
    [diff] = proposal.content
    assert proposal.kind == "edit" and diff.type == "diff"
    assert diff.path == str(committed_repo.root / "calc.py")
    assert (diff.old_text, diff.new_text) == (CALC, CALC.replace("a - b", "a + b"))

    plans = [u for u in updates if u.session_update == "plan"]
    first = [(e.content, e.status) for e in plans[0].entries]
    assert first[0] == ("attempt 1: PREFLIGHT", "in_progress")
    assert {s for _, s in first[1:]} == {"pending"}
    last = plans[-1].entries
    assert last[-1].content == "attempt 1: APPLY_BACK"
    assert {e.status for e in last} == {"completed"}
    assert plans[-1] is not None and updates.index(plans[-1]) < len(updates) - 1
    assert client.before_answer == CALC
    if target := os.environ.get("TIDEGATE_ACP_TRANSCRIPT"):
        Path(target).write_text("\n".join(client.wire) + "\n")
