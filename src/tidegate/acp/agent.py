"""The ACP agent: sessions on repositories, a prompt is a held run, the answer lands it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

from tidegate.records.report import FlowReport, PhaseEvent

APPLY, DISCARD = "apply", "discard"


@dataclass(frozen=True)
class Settings:
    """What ``tidegate acp`` was started with: every session's runs use it."""

    model: str
    verify: str | None = None
    state_root: str | None = None
    max_attempts: int = 3
    max_steps: int | None = None


@dataclass
class _Session:
    repo: Path
    busy: bool = False
    cancelled: bool = False
    """``session/cancel`` came during the prompt: the run finishes (it cannot be stopped
    midway yet) but its change stays held, unasked, and the turn ends ``cancelled``."""


@dataclass
class _Stream:
    """Sends a run's progress from its worker thread as session updates, in order."""

    conn: Any
    session_id: str
    loop: asyncio.AbstractEventLoop
    pending: list[concurrent.futures.Future[Any]] = field(default_factory=list)
    tools: int = 0

    def send(self, update: Any) -> None:
        coro = self.conn.session_update(session_id=self.session_id, update=update)
        self.pending.append(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def phase_started(self, attempt: int, phase: Any) -> None:
        name = getattr(phase, "value", phase)
        self.send(acp.update_agent_message_text(f"[attempt {attempt}] {name} ...\n"))

    def phase_finished(self, event: PhaseEvent) -> None:
        detail = f": {event.detail}" if event.detail else ""
        self.send(
            acp.update_agent_message_text(
                f"[attempt {event.attempt}] {event.phase} {event.status}{detail}\n"
            )
        )

    def activity(self, text: str) -> None:
        """A model's tool call (the planner's progress line): one completed tool call."""
        self.tools += 1
        call_id = f"tool-{self.tools}"
        self.send(acp.start_tool_call(call_id, text, kind="other", status="in_progress"))
        self.send(acp.update_tool_call(call_id, status="completed"))

    async def drain(self) -> None:
        pending, self.pending = self.pending, []
        for future in pending:
            await asyncio.wrap_future(future)


class TidegateAgent:
    """The agent side; one per connection."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sessions: dict[str, _Session] = {}
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        from tidegate import __version__

        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="tidegate", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        repo = session_repository(cwd)
        session_id = uuid.uuid4().hex
        self.sessions[session_id] = _Session(repo)
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self.sessions.get(session_id)
        if session is None:
            raise acp.RequestError.invalid_params({"sessionId": "no such session"})
        if session.busy:
            raise acp.RequestError.invalid_request({"sessionId": "a prompt is already running"})
        objective = "\n".join(
            str(block.text) for block in prompt if getattr(block, "type", None) == "text"
        ).strip()
        if not objective:
            raise acp.RequestError.invalid_params({"prompt": "give the objective as text"})
        session.busy, session.cancelled = True, False
        stream = _Stream(self.conn, session_id, asyncio.get_running_loop())
        try:
            report = await asyncio.to_thread(self._run, session.repo, objective, stream)
            await stream.drain()
            if session.cancelled:
                final = _cancelled(report)
            else:
                final = await self._conclude(session, session_id, report)
            await stream.drain()
        finally:
            session.busy = False
        await self.conn.session_update(
            session_id=session_id, update=acp.update_agent_message_text(final)
        )
        return PromptResponse(stop_reason="cancelled" if session.cancelled else "end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.busy:
            session.cancelled = True

    def _run(self, repo: Path, objective: str, stream: _Stream) -> FlowReport | str:
        """The guarded run (in a worker thread): its report, or a refusal's one line."""
        from tidegate.errors import TidegateError
        from tidegate.flow.transaction import execute
        from tidegate.planners import planner_for
        from tidegate.records.modes import Mode
        from tidegate.records.request import RunRequest
        from tidegate.store import StoreRecorder, open_run_store

        s = self.settings
        try:
            request = RunRequest(
                repo=repo,
                mode=Mode.PATCH,
                objective=objective,
                verify=s.verify,
                model=s.model,
                max_attempts=s.max_attempts,
                max_steps=s.max_steps,
                hold=True,
                # the editor is not the user: contained, or approved, or refused
                origin="mcp-client",
            )
            store = open_run_store(repo, s.state_root)
        except TidegateError as exc:
            return str(exc)
        try:
            recorder = StoreRecorder(store)
            planner = planner_for(request, recorder=recorder)
            if hasattr(planner, "progress"):
                planner.progress = stream.activity
            try:
                return execute(request, observer=stream, planner=planner, recorder=recorder)
            finally:
                getattr(planner, "close", lambda: None)()
        except TidegateError as exc:
            return str(exc)
        finally:
            store.close()

    async def _conclude(self, session: _Session, session_id: str, report: FlowReport | str) -> str:
        if isinstance(report, str):
            return f"tidegate refused the run: {report}"
        if report.status != "held":
            where = f" in {report.failure_phase}" if report.failure_phase else ""
            return (
                f"run {report.run_id} {report.status}{where}: {report.message or 'no change held'}"
            )
        files = await asyncio.to_thread(file_diffs, session.repo, report)
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(
                tool_call_id=f"held-{report.run_id}",
                title=f"Apply the verified change of run {report.run_id}?",
                kind="edit",
                status="pending",
                content=[acp.tool_content(acp.text_block(report.diff)), *files],
                raw_input={
                    "run_id": report.run_id,
                    "files": [f.path for f in report.changed_files],
                },
            ),
            options=[
                PermissionOption(option_id=APPLY, name="Apply", kind="allow_once"),
                PermissionOption(option_id=DISCARD, name="Discard", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        choice = getattr(outcome, "option_id", None) if outcome.outcome == "selected" else None
        return await asyncio.to_thread(self._land, session.repo, report.run_id, choice)

    def _land(self, repo: Path, run_id: str, choice: str | None) -> str:
        from tidegate.errors import TidegateError
        from tidegate.flow.landing import apply_run, discard_run
        from tidegate.store import open_run_store

        if choice not in (APPLY, DISCARD):
            return (
                f"run {run_id} is held, not applied (no answer): "
                f"`tidegate apply {run_id}` or `tidegate discard {run_id}`"
            )
        try:
            store = open_run_store(repo, self.settings.state_root)
        except TidegateError as exc:
            return f"run {run_id} is held; {exc}"
        try:
            if choice == APPLY:
                landing = apply_run(repo, store, run_id, [], [])
            else:
                landing = discard_run(repo, store, run_id)
        except TidegateError as exc:
            return f"run {run_id}: {exc}"
        finally:
            store.close()
        return landing.message


def _cancelled(report: FlowReport | str) -> str:
    if isinstance(report, str) or report.status != "held":
        return "cancelled"
    return (
        f"cancelled; run {report.run_id} is held, not applied: "
        f"`tidegate apply {report.run_id}` or `tidegate discard {report.run_id}`"
    )


_MAX_SHOWN = 1024 * 1024


def file_diffs(repo: Path, report: FlowReport) -> list[Any]:
    """The held change as ACP diff content, one per text file (T0's text and the verified
    result's, from the repository's objects): what an editor shows as its own diff view.
    Binary, large or unreadable files are left to the unified diff."""
    from tidegate.errors import TidegateError
    from tidegate.workspace.keep import kept_object
    from tidegate.workspace.repo import discover

    def text(spec: str) -> str | None:
        res = git.run("cat-file", "blob", spec, check=False)
        if res.returncode != 0 or len(res.stdout) > _MAX_SHOWN or b"\x00" in res.stdout:
            return None
        try:
            return res.stdout.decode("utf-8")
        except UnicodeDecodeError:
            return None

    out: list[Any] = []
    try:
        found = discover(repo)
        git = found.git
        t0 = kept_object(found, report.run_id, "t0") or report.t0_commit
        result = kept_object(found, report.run_id, "result")
        for changed in report.changed_files[:100]:
            old = text(f"{t0}:{changed.path}") if t0 else None
            new = text(f"{result}:{changed.path}") if result else None
            if old is None and new is None:
                continue
            out.append(acp.tool_diff_content(str(repo / changed.path), new or "", old))
    except TidegateError:
        return []
    return out


def session_repository(cwd: str) -> Path:
    """The repository of a session's ``cwd``: an absolute path naming a git work tree
    itself, not through a symbolic link; anything else is refused as invalid params."""
    from tidegate.errors import TidegateError
    from tidegate.workspace.repo import discover

    def refuse(why: str) -> acp.RequestError:
        return acp.RequestError.invalid_params({"cwd": why})

    if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\x00" in cwd:
        raise refuse("cwd must be an absolute path")
    given = Path(os.path.normpath(cwd))
    if Path(os.path.realpath(given)) != given:
        raise refuse(f"{cwd}: goes through a symbolic link; open the repository by its real path")
    try:
        repo = discover(given)
    except TidegateError as exc:
        raise refuse(str(exc)) from None
    if Path(os.path.realpath(repo.root)) != given:
        raise refuse(f"{cwd}: not the top of a git work tree (that is {repo.root})")
    return given


async def serve(settings: Settings) -> None:
    """Speak ACP on this process's stdin and stdout until the client closes them.

    The protocol keeps the real stdout to itself: file descriptor 1 becomes a copy of
    stderr first, so nothing else written there (a library's print, a child process that
    inherits it) can corrupt the stream of messages."""
    import sys

    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = protocol_out  # type: ignore[assignment,unused-ignore]  # while the streams are made
    try:
        reader, writer = await acp.stdio_streams(limit=_LINE_LIMIT)
    finally:
        sys.stdout = sys.stderr
    await acp.run_agent(TidegateAgent(settings), writer, reader)  # type: ignore[arg-type]


_LINE_LIMIT = 50 * 1024 * 1024
"""The longest message read from the client (one JSON-RPC line)."""
