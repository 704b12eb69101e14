"""``session/cancel`` while a guarded run is still working stops it promptly, as Ctrl-C
does: the VERIFY command's whole process group is killed, a model request in flight is
abandoned, the run pauses at its last checkpoint (``tidegate resume`` continues it), the
turn ends ``cancelled`` and the user's tree -- staged, unstaged and untracked work, and
``.git/index`` -- is byte for byte what it was. The client is the SDK's own client side,
the agent a real ``tidegate acp`` subprocess.

Without the mechanism (``acp.foreground``: the run on the main thread, the cancel a
SIGINT to it) the run goes on to its end: the sleeping VERIFY holds the turn for a
minute and the stalled model for two, and both tests fail on their deadline."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.conftest import Repo, requires_containment
from tests.e2e._acp import CHECK, SCRIPT, Client, tidegate_acp, until

pytestmark = requires_containment
PROMPTLY_S = 15.0
"""Cancel to the end of the turn, on a loaded two-core machine."""
MARK = "37.25"
"""The VERIFY command's sleep, found by its arguments in /proc."""


def _dirty(repo: Repo) -> dict[str, object]:
    """Staged, unstaged and untracked work; the tree's state (with the index's bytes)."""
    repo.write("staged.py", "STAGED = 1\n")
    repo.git("add", "staged.py")
    repo.write("README.md", "# calc\n\nan unstaged line\n")
    repo.write("notes.txt", "untracked notes\n")
    return repo.tree_state(with_mtimes=True)


def _running(mark: str) -> list[str]:
    """The command lines of live processes that mention ``mark``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if mark in text and "pytest" not in text:
            found.append(text)
    return found


def _cancel_when(
    repo: Repo, script: Path, ready: str, verify: str = CHECK
) -> tuple[Any, Client, float]:
    """Prompt; once a message starts with ``ready`` (and the test's extra wait), cancel.
    Returns the response, the client and the seconds from the cancel to the response."""
    client = Client("apply", repo)

    async def session() -> tuple[Any, float]:
        async with tidegate_acp(client, script, verify=verify) as conn:
            new = await conn.new_session(cwd=str(repo.root), mcp_servers=[])
            prompt = asyncio.create_task(
                conn.prompt(session_id=new.session_id, prompt=[acp.text_block("Fix add().")])
            )
            await until(lambda: ready in client.text())
            if verify != CHECK:
                await until(lambda: bool(_running(MARK)))  # the command really runs
            else:
                await asyncio.sleep(0.3)  # the model request is in flight
            cancelled = time.monotonic()
            await conn.cancel(session_id=new.session_id)
            response = await asyncio.wait_for(prompt, 180)
            return response, time.monotonic() - cancelled

    response, took = asyncio.run(session())
    return response, client, took


def test_cancel_during_verify_kills_the_command_and_pauses(
    committed_repo: Repo, tmp_path: Path
) -> None:
    before = _dirty(committed_repo)
    script = tmp_path / "model.json"
    script.write_text(json.dumps(SCRIPT))
    response, client, took = _cancel_when(
        committed_repo, script, "[attempt 1] VERIFY ...", verify=f"sleep {MARK}; {CHECK}"
    )
    assert response.stop_reason == "cancelled"
    assert took < PROMPTLY_S, took
    assert _running(MARK) == []  # the command's whole group is gone
    assert client.permissions == []
    last = client.text().splitlines()[-1]
    assert last.startswith("cancelled; run ") and "paused after APPLY" in last, last
    assert "tidegate resume" in last
    assert committed_repo.tree_state(with_mtimes=True) == before


def test_cancel_during_a_model_request_abandons_it_and_pauses(
    committed_repo: Repo, tmp_path: Path
) -> None:
    before = _dirty(committed_repo)
    stalled = {**SCRIPT, "turns": [{"text": "Thinking about add()...", "stall_s": 120}]}
    script = tmp_path / "model.json"
    script.write_text(json.dumps(stalled))
    response, client, took = _cancel_when(committed_repo, script, "[attempt 1] PLAN ...")
    assert response.stop_reason == "cancelled"
    assert took < PROMPTLY_S, took
    assert client.permissions == []
    last = client.text().splitlines()[-1]
    assert last.startswith("cancelled; run ") and "paused after EXPLORE" in last, last
    assert committed_repo.tree_state(with_mtimes=True) == before


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
def test_a_client_that_goes_away_mid_run_leaves_it_paused(
    committed_repo: Repo, tmp_path: Path, how: str
) -> None:
    """The editor closes the connection, or stops its agent with SIGTERM, while the model
    is asked: the prompt's run pauses (nobody waits for it; it is resumable) and ``tidegate
    acp`` exits by itself, with 0."""
    from tidegate.store.locate import repository, repository_store
    from tidegate.store.views import listing

    before = _dirty(committed_repo)
    stalled = {**SCRIPT, "turns": [{"text": "Thinking about add()...", "stall_s": 120}]}
    script = tmp_path / "model.json"
    script.write_text(json.dumps(stalled))
    client = Client("apply", committed_repo)

    async def session() -> tuple[float, int]:
        async with tidegate_acp(client, script) as conn:
            new = await conn.new_session(cwd=str(committed_repo.root), mcp_servers=[])
            prompt = [acp.text_block("Fix add().")]
            pending = asyncio.create_task(conn.prompt(session_id=new.session_id, prompt=prompt))
            await until(lambda: "[attempt 1] PLAN ..." in client.text())
            await asyncio.sleep(0.3)
            left = time.monotonic()
            if how == "SIGTERM":
                client.process.send_signal(signal.SIGTERM)
            else:
                client.process.stdin.close()  # the editor goes; no signal is sent
            code = await asyncio.wait_for(client.process.wait(), 60)
            took = time.monotonic() - left
        pending.cancel()
        return took, code

    took, code = asyncio.run(session())
    assert took < PROMPTLY_S and code == 0, (took, code)
    root, common = repository(str(committed_repo.root))
    store = repository_store(None, root, common)
    assert store is not None
    try:
        [run] = listing(store, 10)
    finally:
        store.db.close()
    assert run["status"] == "paused", run
    assert committed_repo.tree_state(with_mtimes=True) == before
