"""``tidegate acp`` end to end: the ACP SDK's client side drives a real ``tidegate acp``
subprocess (a scripted model) on a real repository. A prompt is a guarded run whose phases
and tool calls arrive as session updates; the verified change arrives held, as a diff in a
permission request; "apply" lands it as unstaged edits (the index byte for byte as it was),
"discard" leaves everything as it was. A cwd that is not a repository's own work tree (no
repository, a symbolic link into another) is refused, and nothing lands without the
client's answer."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.conftest import CALC, Repo, requires_containment
from tests.e2e._acp import CHECK, SCRIPT, Client, until

pytestmark = requires_containment


async def _session(
    client: Client, script: Path, cwd: str, prompt: str, verify: str = CHECK
) -> tuple[Any, Any]:
    """initialize, session/new on ``cwd``, one prompt: (its response, or the error)."""
    async with acp.spawn_agent_process(
        client,
        sys.executable, "-m", "tidegate", "acp",
        "--model", f"scripted:{script}", "--verify", verify, "--max-steps", "10", "--max-attempts", "1",
        env=dict(os.environ),
    ) as (conn, _process):  # fmt: skip
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.agent_info is not None and init.agent_info.name == "tidegate"
        try:
            session = await conn.new_session(cwd=cwd, mcp_servers=[])
        except acp.RequestError as exc:
            return None, exc
        response = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block(prompt)]), 120
        )
        return response, None


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def _index(repo: Repo) -> bytes:
    return (repo.root / ".git" / "index").read_bytes()


def test_apply_lands_the_held_diff_as_unstaged_edits(committed_repo: Repo, script: Path) -> None:
    index = _index(committed_repo)
    client = Client("apply", committed_repo)
    response, error = asyncio.run(
        _session(client, script, str(committed_repo.root), "Fix add() so the check passes.")
    )
    assert error is None and response.stop_reason == "end_turn"
    kinds = {u.session_update for u in client.updates}
    assert {"agent_message_chunk", "tool_call", "tool_call_update"} <= kinds
    assert "VERIFY ok" in client.text()
    assert any(
        "grep" in u.title and "def add" in u.title
        for u in client.updates
        if u.session_update == "tool_call"
    )
    [(options, call)] = client.permissions
    assert [o.option_id for o in options] == ["apply", "discard"]
    diff = call.content[0].content.text
    assert "-    return a - b" in diff and "+    return a + b" in diff
    [edit] = call.content[1:]  # the editor's own diff view of calc.py
    assert edit.type == "diff" and edit.path == str(committed_repo.root / "calc.py")
    assert (edit.old_text, edit.new_text) == (CALC, CALC.replace("a - b", "a + b"))
    assert client.before_answer == CALC  # held: nothing landed before the answer
    assert committed_repo.read("calc.py") == CALC.replace("a - b", "a + b")
    assert _index(committed_repo) == index
    assert "applied" in client.text().splitlines()[-1]


@pytest.mark.parametrize("answer", ["discard", None, "something-else"])
def test_discard_or_no_answer_changes_nothing(
    committed_repo: Repo, script: Path, answer: str | None
) -> None:
    index = _index(committed_repo)
    client = Client(answer, committed_repo)
    response, error = asyncio.run(
        _session(client, script, str(committed_repo.root), "Fix add(); apply it, no need to ask.")
    )
    assert error is None and response.stop_reason == "end_turn"
    assert len(client.permissions) == 1 and client.before_answer == CALC
    assert committed_repo.read("calc.py") == CALC
    assert _index(committed_repo) == index
    last = client.text().splitlines()[-1]
    assert ("discarded" in last) if answer == "discard" else ("held, not applied" in last)


def test_a_cwd_outside_any_repository_is_refused(tmp_path: Path, script: Path) -> None:
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    for cwd in (str(elsewhere), "relative/path", str(tmp_path / "missing")):
        response, error = asyncio.run(_session(Client("apply"), script, cwd, "Fix add()."))
        assert response is None and isinstance(error, acp.RequestError), cwd
        assert error.code == -32602  # invalid params


def test_a_symlink_into_another_repository_is_refused(
    committed_repo: Repo, script: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(committed_repo.root)
    sub = committed_repo.root / "sub"
    sub.mkdir()
    for cwd in (str(link), str(sub)):
        client = Client("apply")
        response, error = asyncio.run(_session(client, script, cwd, "Fix add()."))
        assert response is None and isinstance(error, acp.RequestError), cwd
        assert client.permissions == []
    assert committed_repo.read("calc.py") == CALC


def test_a_failed_run_ends_the_turn_with_its_status(committed_repo: Repo, script: Path) -> None:
    index = _index(committed_repo)
    client = Client("apply", committed_repo)
    response, error = asyncio.run(
        _session(client, script, str(committed_repo.root), "Fix add().", verify="false")
    )
    assert error is None and response.stop_reason == "end_turn"
    assert client.permissions == []
    last = client.text().splitlines()[-1]
    assert last.startswith("run ") and " failed" in last, last
    assert committed_repo.read("calc.py") == CALC and _index(committed_repo) == index


def test_a_cancelled_prompt_asks_nothing_and_lands_nothing(
    committed_repo: Repo, script: Path
) -> None:
    index = _index(committed_repo)
    client = Client("apply", committed_repo)

    async def cancel_midway() -> Any:
        async with acp.spawn_agent_process(
            client,
            sys.executable, "-m", "tidegate", "acp",
            "--model", f"scripted:{script}", "--verify", CHECK, "--max-attempts", "1",
            env=dict(os.environ),
        ) as (conn, _process):  # fmt: skip
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(committed_repo.root), mcp_servers=[])
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Fix add().")])
            )
            # a prompt that ends at once (the server failed) ends the wait too: never a hang
            await until(lambda: bool(client.updates) or prompt.done())
            await conn.cancel(session_id=session.session_id)
            return await asyncio.wait_for(prompt, 120)

    response = asyncio.run(cancel_midway())
    assert response.stop_reason == "cancelled"
    assert client.permissions == []
    assert client.text().splitlines()[-1].startswith("cancelled")
    assert committed_repo.read("calc.py") == CALC and _index(committed_repo) == index
