"""The tool layer over MCP (stdio): ``tidegate mcp serve``.

The server lists the executor's active tools under their model-facing names, with their
JSON schemas, and runs every call through the same ToolExecutor the agent loop uses: the
same approval policy, the same independently captured effects. A call's structured
result (output, error, host-authored effects) is returned as ``structured_content`` and as
JSON text; ``is_error`` is set whenever ``ok`` is false.

Nobody can answer an approval question over stdio, so a call the policy asks about comes
back as a pending approval (``approval_request`` names it). An unknown outcome is returned
as an error result and ends the session's tool use: every later call is refused.

Calls run one at a time in a worker thread, so the event loop keeps serving the protocol.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPTool

from tidegate.tools.calls import ToolCall, ToolOutcomeUnknown, ToolResult
from tidegate.tools.executor import ToolExecutor

SERVER_NAME = "tidegate-tools"


class ToolServer(MCPServer[Any]):
    def __init__(self, executor: ToolExecutor) -> None:
        super().__init__(
            name=SERVER_NAME,
            instructions="Workspace tools with host-attested effects. Read a file before "
            "writing it and pass its sha256 as 'expect'.",
            log_level="WARNING",
        )
        self.executor = executor
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(
                name=d.name,
                description=d.description,
                input_schema=d.input_schema,
                _meta={"tidegate/canonical_id": d.canonical_id, "tidegate/label": d.label},
            )
            for d in self.executor.definitions()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        call = ToolCall(call_id=f"mcp-{next(self._ids)}", name=name, arguments=arguments)
        async with self._lock:
            result = await anyio.to_thread.run_sync(self._execute, call)
        data = result.to_json()
        return CallToolResult(
            content=[TextContent(text=json.dumps(data, sort_keys=True))],
            structured_content=data,
            is_error=not result.ok,
        )

    def _execute(self, call: ToolCall) -> ToolResult:
        try:
            return self.executor.execute(call)
        except ToolOutcomeUnknown as unknown:
            return unknown.result


def serve(executor: ToolExecutor) -> None:
    """Serve ``executor``'s tools on stdin/stdout until the client disconnects."""
    with executor:
        ToolServer(executor).run("stdio")
