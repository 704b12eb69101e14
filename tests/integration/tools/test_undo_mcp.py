"""An MCP client's session is undoable as a whole (issue #25): a write and a shell command
over dirty work, put back by ``undo --session``, newest call first."""

from __future__ import annotations

from typing import Any

from mcp.client.session import ClientSession

from tests.conftest import Repo, requires_containment
from tests.integration.test_mcp_server import _session
from tests.integration.tools.undo_support import dirty, sessions, undo


@requires_containment
def test_an_mcp_session_is_undone_as_a_whole(committed_repo: Repo) -> None:
    repo = committed_repo
    dirty(repo)
    before = repo.tree_state()

    async def script(session: ClientSession) -> list[Any]:
        read = await session.call_tool("workspace_read", {"path": "calc.py"})
        digest = read.structured_content["output"]["sha256"]
        write = await session.call_tool(
            "workspace_write", {"path": "calc.py", "content": "x = 1\n", "expect": digest}
        )
        shell = await session.call_tool(
            "command_run", {"command": "echo y >> calc.py; rm notes.txt; echo z > new.txt"}
        )
        return [write, shell]

    for result in _session(repo, script):
        assert not result.is_error, result
    assert repo.read("calc.py") == "x = 1\ny\n"
    [index] = sessions()
    assert index["session"].startswith("mcp-")
    assert [c["tool"] for c in index["calls"]] == ["workspace.write", "command.run"]
    proc = undo(repo, "--session", index["session"])
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert repo.tree_state() == before
