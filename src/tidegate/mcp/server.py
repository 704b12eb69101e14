"""The tool layer over MCP (stdio): ``tidegate mcp serve``.

The server lists the executor's active tools under their model-facing names, with their
JSON schemas, and runs every call through the same ToolExecutor the agent loop uses: the
same approval policy, the same independently captured effects. A call's structured
result (output, error, host-authored effects) is returned as ``structured_content`` and as
JSON text; ``is_error`` is set whenever ``ok`` is false.

Nobody can answer an approval question over stdio, so a call the policy asks about comes
back as a pending approval (``approval_request`` names it). An unknown outcome is returned
as an error result and ends the session's tool use: every later call is refused.

One session is one recorded run (kind ``mcp``, ``tidegate.tools.recording.ToolRun``):
every call is in the store when its answer is sent, and the run ends when the session
does -- the client closing stdin, or SIGTERM / SIGINT, after which a call still running
finishes and is recorded first. A call whose record cannot be stored is answered with
its result plus ``persistence_error``, and every later call is refused undispatched.

Calls, and everything that touches the run store, run one at a time on one dedicated
thread (a SQLite connection belongs to the thread that opened it), so the event loop
keeps serving the protocol.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import select
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import FrameType
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool

from tidegate import __version__
from tidegate.errors import PersistenceError
from tidegate.mcp.annotations import hints, traits
from tidegate.mcp.change import DESCRIPTION as CHANGE_DESCRIPTION
from tidegate.mcp.change import NAME as CHANGE_NAME
from tidegate.mcp.change import SCHEMA as CHANGE_SCHEMA
from tidegate.mcp.change import TRAITS as CHANGE_TRAITS
from tidegate.mcp.change import ChangeTool
from tidegate.tools.calls import ToolCall, ToolError, ToolOutcomeUnknown, ToolResult
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import PolicyContext
from tidegate.tools.recording import ToolRun

SERVER_NAME = "tidegate-tools"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

T = TypeVar("T")


class CallThread:
    """One worker thread: every call and every store operation of a session runs on it,
    in submission order."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidegate-mcp")

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        return self._pool.submit(fn, *args).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class ToolServer(MCPServer[Any]):
    def __init__(
        self,
        executor: ToolExecutor,
        run: ToolRun | None = None,
        thread: CallThread | None = None,
        change: ChangeTool | None = None,
    ) -> None:
        super().__init__(
            name=SERVER_NAME,
            version=__version__,
            instructions="Workspace tools with host-attested effects. Read a file before "
            "writing it and pass its sha256 as 'expect'.",
            log_level="WARNING",
        )
        self.executor = executor
        self.run_record = run
        self.thread = thread or CallThread()
        self.persistence_error: PersistenceError | None = None
        """The first record that could not be stored; later calls are refused."""
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)
        self.change = change
        """``change_propose`` (tidegate.mcp.change), when the workspace is a repository."""

    async def list_tools(self) -> list[MCPTool]:
        registry = self.executor.registry
        # the containment probe may start a process: not on the event loop
        policy = await anyio.to_thread.run_sync(self.thread.run, _policy, self.executor)
        tools = []
        for d in self.executor.definitions():
            spec = registry.spec(d.canonical_id)
            assert spec is not None  # a definition is an active spec's
            tools.append(
                MCPTool(
                    name=d.name,
                    description=d.description,
                    input_schema=d.input_schema,
                    annotations=hints(traits(spec), policy),
                    _meta={"tidegate/canonical_id": d.canonical_id, "tidegate/label": d.label},
                )
            )
        if self.change is not None:
            tools.append(_change_definition(hints(CHANGE_TRAITS, policy)))
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        if self.change is not None and name == CHANGE_NAME:
            async with self._lock:
                data = await anyio.to_thread.run_sync(self.thread.run, self.change.call, arguments)
            return CallToolResult(
                content=[TextContent(text=json.dumps(data, sort_keys=True))],
                structured_content=data,
                is_error=not data["ok"],
            )
        call = ToolCall(call_id=f"mcp-{next(self._ids)}", name=name, arguments=arguments)
        async with self._lock:
            result, unrecorded = await anyio.to_thread.run_sync(
                self.thread.run, self._execute, call
            )
        data = result.to_json()
        if unrecorded is not None:
            data["persistence_error"] = unrecorded
        return CallToolResult(
            content=[TextContent(text=json.dumps(data, sort_keys=True))],
            structured_content=data,
            is_error=not result.ok or unrecorded is not None,
        )

    def _execute(self, call: ToolCall) -> tuple[ToolResult, str | None]:
        """The call's result, and why it is not on record (None when it is)."""
        if self.persistence_error is not None:
            return self._refused(call), f"not run: {self.persistence_error}"
        try:
            return self.executor.execute(call), None
        except ToolOutcomeUnknown as unknown:
            return unknown.result, None
        except PersistenceError as exc:
            self.persistence_error = exc
            last = self.run_record.calls.last_result if self.run_record else None
            if last is not None and last.call_id == call.call_id:
                return last, f"the call ran but its record could not be stored: {exc}"
            return self._refused(call), f"not run: {exc}"

    def _refused(self, call: ToolCall) -> ToolResult:
        spec = self.executor.registry.spec(call.name)
        return ToolResult(
            call_id=call.call_id,
            name=call.name,
            tool=spec.tool_id if spec else None,
            ok=False,
            status="error",
            error=ToolError(
                code="persistence_error",
                message="the run store failed; this session accepts no more calls",
                retryable=False,
            ),
        )

    def finish(self, ended_by: str) -> None:
        """End the recorded run (on the call thread). Raises the session's first
        PersistenceError, after trying to store a failed report for it."""
        if self.run_record is None:
            return
        failure = self.persistence_error
        try:
            self.run_record.finish(
                ended_by=ended_by, persistence_error=None if failure is None else str(failure)
            )
        except PersistenceError as exc:
            raise failure or exc from None
        if failure is not None:
            raise failure


def _policy(executor: ToolExecutor) -> PolicyContext:
    return executor.policy_context


def _change_definition(annotations: ToolAnnotations) -> MCPTool:
    return MCPTool(
        name=CHANGE_NAME,
        description=CHANGE_DESCRIPTION,
        input_schema=CHANGE_SCHEMA,
        annotations=annotations,
        _meta={"tidegate/canonical_id": "change.propose", "tidegate/label": "guarded change"},
    )


def serve(
    executor: ToolExecutor,
    open_run: Callable[[], ToolRun | None] | None = None,
    change: ChangeTool | None = None,
) -> None:
    """Serve ``executor``'s tools on stdin/stdout until the client closes stdin or a
    SIGTERM/SIGINT arrives. ``open_run`` begins the session's recorded run (on the call
    thread, before serving: a store that cannot record refuses the session)."""
    thread = CallThread()
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    try:
        with executor:
            mask_ahead(executor)
            run = thread.run(open_run) if open_run is not None else None
            server = ToolServer(executor, run, thread, change)
            ended_by = _serve_until_stopped(server)
            thread.run(executor.close)  # command sessions die before the run is closed
            thread.run(server.finish, ended_by)
    finally:
        thread.close()
        for s, handler in previous.items():
            signal.signal(s, handler)


def mask_ahead(executor: ToolExecutor) -> threading.Thread | None:
    """Build the contained commands' secret mask index (one walk of the workspace, its
    inotify watches included: about a second on 250,000 files) while the client starts
    and its model thinks, not in the first command, which waits for it only if it is not
    done. Its errors are the first command's to report (it refreshes the same index)."""
    ctx = executor.context
    if ctx.containment == "none":
        return None

    def walk() -> None:
        with contextlib.suppress(Exception):
            ctx.workspace.secrets.find_in(ctx.root.resolve())

    worker = threading.Thread(target=walk, name="tidegate-mask-index", daemon=True)
    worker.start()
    return worker


def _serve_until_stopped(server: ToolServer) -> str:
    """Run the stdio server; say how it stopped: ``eof`` or the signal's name.

    A stop signal ends the session the way the client closing stdin does (``StdinRelay``),
    so the SDK shuts down normally and a call still running finishes and is recorded."""
    stopped: list[str] = []
    relay = StdinRelay()

    def stop(signum: int, frame: FrameType | None) -> None:
        if not stopped:
            stopped.append(signal.Signals(signum).name)
        relay.stop()

    for s in STOP_SIGNALS:
        signal.signal(s, stop)
    try:
        server.run("stdio")
    finally:
        relay.close()
    return stopped[0] if stopped else "eof"


class StdinRelay:
    """Our own pipe on fd 0, fed from the real stdin by a daemon thread.

    The SDK reads stdin in a worker thread with a blocking read, which nothing can wake,
    and the interpreter would wait for that thread at exit. With the relay, ``stop`` (safe
    in a signal handler: it writes one byte) makes the pump close the pipe, and the SDK
    sees end of input; the pump itself is a daemon blocked only in ``select``."""

    def __init__(self) -> None:
        self.real = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        read_end, self._write_end = os.pipe()
        os.dup2(read_end, 0)
        os.close(read_end)
        self._thread = threading.Thread(target=self._pump, name="tidegate-stdin", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self.real, self._wake_r], [], [])
                if self._wake_r in ready:
                    return
                data = os.read(self.real, 65536)
                if not data:
                    return
                view = memoryview(data)
                while view:
                    view = view[os.write(self._write_end, view) :]
        except OSError:
            return
        finally:
            os.close(self._write_end)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def close(self) -> None:
        """Stop the pump and give fd 0 back its real stdin."""
        self.stop()
        self._thread.join(timeout=1.0)
        os.dup2(self.real, 0)
        os.close(self.real)
        if not self._thread.is_alive():  # else it may still select on the wake pipe
            os.close(self._wake_r)
            os.close(self._wake_w)
