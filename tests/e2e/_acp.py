"""What the ACP tests share: the scripted model, the verify check and an ACP client (the
SDK's client side) that records every update it is sent."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from tests.conftest import Repo

CHECK = f"{sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5'"
SCRIPT = {
    "model": "acp-model",
    "turns": [
        {
            "text": "Looking for add().",
            "tool_calls": [
                {"id": "g1", "name": "workspace_grep", "arguments": {"pattern": "def add"}}
            ],
        },
        {"text": "Plan: add() subtracts; make it add (calc.py)."},
        {
            "text": "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n"
            ">>>>>>> REPLACE\n",
        },
    ],
}


class Client:
    """An ACP client that records every update and answers a permission request with
    ``answer`` (an option id, or None: cancelled)."""

    def __init__(self, answer: str | None, repo: Repo | None = None) -> None:
        self.answer = answer
        self.repo = repo
        self.before_answer: str | None = None
        """calc.py as it was when the permission request came: nothing landed yet."""
        self.updates: list[Any] = []
        self.wire: list[str] = []
        self.exit_code: int | None = None
        self.process: Any = None
        """How ``tidegate acp`` ended, once ``tidegate_acp`` is left."""
        """Every JSON-RPC message, one line each: ``outgoing`` from the client."""
        self.permissions: list[Any] = []

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((options, tool_call))
        if self.repo is not None:
            self.before_answer = self.repo.read("calc.py")
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def on_connect(self, conn: Any) -> None:
        pass

    def text(self) -> str:
        return "".join(
            u.content.text for u in self.updates if u.session_update == "agent_message_chunk"
        )


@asynccontextmanager
async def tidegate_acp(
    client: Client, script: Path, *args: str, verify: str = CHECK
) -> AsyncIterator[Any]:
    """A real ``tidegate acp`` subprocess (the scripted model, one attempt), initialized;
    yields the client side's connection. Every message on the wire goes to ``client.wire``."""

    def observe(event: Any) -> None:
        line = json.dumps(event.message, ensure_ascii=False)
        client.wire.append(f"{event.direction.value}: {line}")

    async with acp.spawn_agent_process(
        client,
        sys.executable, "-m", "tidegate", "acp",
        "--model", f"scripted:{script}", "--verify", verify, "--max-attempts", "1", *args,
        env=dict(os.environ),
        observers=[observe],
    ) as (conn, process):  # fmt: skip
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.agent_info is not None and init.agent_info.name == "tidegate"
        client.process = process
        yield conn


async def until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait until ``condition()`` holds (checked every 10 ms)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        assert loop.time() < end, "timed out waiting"
        await asyncio.sleep(0.01)
