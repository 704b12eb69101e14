"""``tidegate mcp serve`` for real: a subprocess spoken to over stdio by the MCP SDK's own
client. Tools are listed under their model-facing names with their schemas; calls go
through the same executor, policy and effect capture as everywhere else."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

import tidegate
from tests.conftest import Repo

REVISIONS = (LATEST_PROTOCOL_VERSION, HANDSHAKE_PROTOCOL_VERSIONS[-1])
"""The current revision the SDK speaks and the one before it (``mcp`` 2.3: 2026-07-28,
negotiated by ``server/discover``, and 2025-11-25, the last ``initialize`` handshake)."""


def _server(repo: Repo, *extra: str) -> StdioServerParameters:
    keep = ("TIDEGATE_STATE_ROOT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "PYTHONPATH")
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tidegate", "mcp", "serve", "--workspace", str(repo.root), *extra],
        env={k: os.environ[k] for k in keep if k in os.environ},
    )


def _session(repo: Repo, script: Any, *extra: str) -> Any:
    async def main() -> Any:
        async with (
            stdio_client(_server(repo, *extra), errlog=errlog) as streams,
            ClientSession(*streams) as session,
        ):
            await session.initialize()
            return await script(session)

    with tempfile.TemporaryFile("w+") as errlog:
        try:
            return anyio.run(main)
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(errlog.read())  # the server's stderr, for the failure report
            raise


def test_list_read_write_and_stale_write(committed_repo: Repo) -> None:
    async def script(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        read = await session.call_tool("workspace_read", {"path": "calc.py"})
        digest = read.structured_content["output"]["sha256"]
        write = await session.call_tool(
            "workspace_write", {"path": "calc.py", "content": "x = 1\n", "expect": digest}
        )
        stale = await session.call_tool(
            "workspace_write", {"path": "calc.py", "content": "y = 2\n", "expect": digest}
        )
        unknown = await session.call_tool("workspace.read", {"path": "calc.py"})
        return {"listed": listed, "read": read, "write": write, "stale": stale, "by_id": unknown}

    got = _session(committed_repo, script)
    tools = {t.name: t for t in got["listed"].tools}
    assert {"workspace_read", "workspace_write", "command_run", "git_exec"} <= set(tools)
    assert tools["workspace_read"].input_schema["required"] == ["path"]
    assert tools["workspace_read"].meta["tidegate/canonical_id"] == "workspace.read"

    read = got["read"]
    assert not read.is_error and read.structured_content["effects_authority"] == "host"
    assert json.loads(read.content[0].text) == read.structured_content

    write = got["write"].structured_content
    assert not got["write"].is_error
    assert write["effects"]["write"][0]["path"] == "calc.py"
    assert (
        write["effects"]["write"][0]["before"]["sha256"]
        == read.structured_content["output"]["sha256"]
    )
    assert committed_repo.read("calc.py") == "x = 1\n"

    stale = got["stale"]
    assert stale.is_error and stale.structured_content["error"]["code"] == "stale_precondition"
    assert "effects" not in stale.structured_content or stale.structured_content["effects"] == {}
    assert not got["by_id"].is_error  # canonical IDs are accepted too


def test_denied_and_pending_calls(committed_repo: Repo) -> None:
    async def script(session: ClientSession) -> list[Any]:
        denied = await session.call_tool(
            "workspace_write",
            {"path": ".git/config", "content": "", "expect": "must_not_exist"},
        )
        pending = await session.call_tool(
            "workspace_write", {"path": "n.txt", "content": "", "expect": "must_not_exist"}
        )
        return [denied, pending]

    denied, pending = _session(committed_repo, script, "--approval", "strict")
    assert denied.is_error
    assert denied.structured_content["status"] == "denied"
    approval = denied.structured_content["effects"]["approval"]
    assert approval["status"] == "denied" and approval["request_id"].startswith("apr_")
    assert pending.is_error and pending.structured_content["status"] == "pending_approval"
    assert pending.structured_content["approval_request"]["tool"] == "workspace.write"
    assert not (committed_repo.root / "n.txt").exists()


def test_read_only_mode_lists_no_writer(committed_repo: Repo) -> None:
    async def script(session: ClientSession) -> Any:
        listed = await session.list_tools()
        call = await session.call_tool(
            "workspace_write", {"path": "n.txt", "content": "", "expect": "must_not_exist"}
        )
        return listed, call

    listed, call = _session(committed_repo, script, "--mode", "review")
    names = {t.name for t in listed.tools}
    assert "workspace_read" in names and "workspace_write" not in names
    assert "command_run" not in names
    assert call.is_error and call.structured_content["error"]["code"] == "inactive_tool"


READ_TOOLS = ("workspace_read", "workspace_list", "workspace_glob", "workspace_grep", "git_exec")
WRITE_TOOLS = ("workspace_write", "workspace_edit")
COMMAND_TOOLS = ("command_run", "command_session", "project_validate")


async def _connect(session: ClientSession, revision: str) -> None:
    """Negotiate ``revision`` the way the SDK's client does: ``server/discover`` for the
    per-request-envelope era (2026-07-28), the ``initialize`` handshake before it."""
    if revision in MODERN_PROTOCOL_VERSIONS:
        await session.discover()
    else:
        await session.initialize()


def _session_at(repo: Repo, revision: str, script: Any, *extra: str) -> Any:
    async def main() -> Any:
        async with (
            stdio_client(_server(repo, *extra), errlog=errlog) as streams,
            ClientSession(*streams) as session,
        ):
            await _connect(session, revision)
            return await script(session)

    with tempfile.TemporaryFile("w+") as errlog:
        try:
            return anyio.run(main)
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(errlog.read())
            raise


@pytest.mark.parametrize("revision", REVISIONS)
def test_both_revisions_negotiate_with_name_version_and_annotations(
    committed_repo: Repo, revision: str
) -> None:
    async def script(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        read = await session.call_tool("workspace_read", {"path": "calc.py"})
        return {
            "version": session.protocol_version,
            "info": session.server_info,
            "tools": {t.name: t for t in listed.tools},
            "read": read,
        }

    got = _session_at(committed_repo, revision, script, "--with-doubles")
    assert got["version"] == revision
    assert got["info"] is not None
    assert (got["info"].name, got["info"].version) == ("tidegate-tools", tidegate.__version__)
    assert got["info"].version  # not empty
    assert not got["read"].is_error

    tools = got["tools"]
    assert all(t.annotations is not None for t in tools.values()), "every tool is annotated"
    hints = {
        name: (
            t.annotations.read_only_hint,
            t.annotations.destructive_hint,
            t.annotations.idempotent_hint,
            t.annotations.open_world_hint,
        )
        for name, t in tools.items()
        if t.annotations is not None
    }
    assert all(None not in h for h in hints.values()), hints
    for name in READ_TOOLS:
        assert hints[name] == (True, False, True, False), name
    for name in WRITE_TOOLS:  # a preconditioned write to one path: repeating it is refused
        assert hints[name] == (False, True, True, False), name
    for name in COMMAND_TOOLS:
        read_only, destructive, idempotent, _open_world = hints[name]
        assert (read_only, destructive, idempotent) == (False, True, False), name
    assert hints["research_search"][3] is True  # the network tool is open-world
    assert hints["artifact_create"][:2] == (False, False)  # additive, outside the workspace
    assert hints["change_propose"][:3] == (False, True, False)
