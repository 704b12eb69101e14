"""The ACP agent: sessions on repositories, a prompt is a held run, the answer lands it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import uuid
from pathlib import Path
from typing import Any

import acp
import msgspec
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

from tidegate.acp.foreground import Foreground
from tidegate.acp.updates import Stream
from tidegate.records.report import FlowReport

APPLY, DISCARD = "apply", "discard"


class Settings(msgspec.Struct, frozen=True):
    """What ``tidegate acp`` was started with: every session's runs use it."""

    model: str
    verify: str | None = None
    state_root: str | None = None
    max_attempts: int = 3
    max_steps: int | None = None


class _Session(msgspec.Struct):
    repo: Path
    busy: bool = False
    cancelled: bool = False
    """``session/cancel`` came during the prompt: the run stops as on Ctrl-C (paused at
    its last checkpoint), or, once it is held, stays held, unasked; the turn ends
    ``cancelled``."""
    job: concurrent.futures.Future[Any] | None = None
    held: FlowReport | None = None
    """Loaded with the session: its last run, held and unanswered; the next prompt asks."""


class TidegateAgent:
    """The agent side; one per connection."""

    def __init__(self, settings: Settings, foreground: Foreground) -> None:
        self.settings = settings
        self.foreground = foreground
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
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name="tidegate", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        repo = session_repository(cwd)
        session_id = uuid.uuid4().hex
        self.sessions[session_id] = _Session(repo)
        return NewSessionResponse(session_id=session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """Reopen a session: its runs replayed from the repository's store (``history``)."""
        from tidegate.acp.history import load
        from tidegate.errors import TidegateError

        repo = session_repository(cwd)
        if session_id in self.sessions:
            raise acp.RequestError.invalid_request({"sessionId": "the session is open already"})
        try:
            past = await asyncio.to_thread(load, repo, self.settings.state_root, session_id)
        except TidegateError as exc:
            raise acp.RequestError.invalid_params({"sessionId": str(exc)}) from None
        if past is None:
            raise acp.RequestError.invalid_params({"sessionId": "no run of this session here"})
        for update in past.updates:
            await self.conn.session_update(session_id=session_id, update=update)
        self.sessions[session_id] = _Session(repo, held=past.held)
        return LoadSessionResponse()

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
        try:
            if session.held is not None:  # a reopened session's held change: answered first
                held, session.held = session.held, None
                await self._say(session_id, await self._conclude(session, session_id, held) + "\n")
                if session.cancelled:
                    return PromptResponse(stop_reason="cancelled")
            final = await self._turn(session, session_id, objective)
        finally:
            session.busy, session.job = False, None
        await self._say(session_id, final)
        return PromptResponse(stop_reason="cancelled" if session.cancelled else "end_turn")

    async def _turn(self, session: _Session, session_id: str, objective: str) -> str:
        """The prompt's run, streamed; its held change asked for: the turn's last line."""
        stream = Stream(self.conn, session_id, asyncio.get_running_loop(), session.repo)
        session.job = job = self.foreground.submit(lambda: self._run(stream, objective))
        try:
            report = await _outcome(job)
        except asyncio.CancelledError:  # the client is gone: nobody waits for the run
            self.foreground.interrupt(job)
            raise
        await stream.drain()
        if session.cancelled:
            return _cancelled(report)
        final = await self._conclude(session, session_id, report)
        await stream.drain()
        return final

    async def _say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(
            session_id=session_id, update=acp.update_agent_message_text(text)
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.busy:
            session.cancelled = True
            if session.job is not None:
                self.foreground.interrupt(session.job)  # Ctrl-C for the run in progress

    def _run(self, stream: Stream, objective: str) -> FlowReport | str:
        """The guarded run of a session's prompt (on the main thread): its report, or a
        refusal's one line."""
        from tidegate.acp.history import task_id
        from tidegate.acp.updates import StreamingRecorder
        from tidegate.errors import TidegateError
        from tidegate.flow.transaction import execute
        from tidegate.planners import planner_for
        from tidegate.records.modes import Mode
        from tidegate.records.request import RunRequest
        from tidegate.store import open_run_store

        s, repo = self.settings, stream.repo
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
            recorder = StreamingRecorder(store, stream, task_id=task_id(stream.session_id))
            planner = planner_for(request, recorder=recorder)
            if hasattr(planner, "progress"):
                planner.progress = stream.asked_for
            try:
                return execute(request, observer=stream, planner=planner, recorder=recorder)
            finally:
                getattr(planner, "close", lambda: None)()
        except TidegateError as exc:
            return str(exc)
        except KeyboardInterrupt:  # cancelled before the run could pause
            return "the run was stopped before its first checkpoint; nothing was changed"
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
        from tidegate.acp.diffs import text_diffs
        from tidegate.workspace.keep import kept_object
        from tidegate.workspace.repo import discover

        def held_tree() -> str | None:  # the run's own ref, or the keep commit once folded
            return kept_object(discover(session.repo), report.run_id, "result")

        paths = [f.path for f in report.changed_files]
        tree = await asyncio.to_thread(held_tree)
        files = (
            await asyncio.to_thread(text_diffs, session.repo, report.t0_commit, tree, paths)
            if tree is not None
            else []
        )
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
        said = await asyncio.to_thread(self._land, session.repo, report.run_id, choice)
        if choice in (APPLY, DISCARD):  # the edit the editor shows is settled
            await self.conn.session_update(
                session_id=session_id,
                update=acp.update_tool_call(
                    f"held-{report.run_id}",
                    status="completed",
                    content=[acp.tool_content(acp.text_block(said))],
                ),
            )
        return said

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


async def _outcome(job: concurrent.futures.Future[Any]) -> FlowReport | str:
    try:
        report: FlowReport | str = await asyncio.wrap_future(job)
        return report
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if job.cancelled() and (task is None or not task.cancelling()):
            return "the run had not started; nothing was changed"  # session/cancel, queued
        raise


def _cancelled(report: FlowReport | str) -> str:
    if isinstance(report, str):
        return f"cancelled; {report}"
    if report.status == "held":
        return (
            f"cancelled; run {report.run_id} is held, not applied: "
            f"`tidegate apply {report.run_id}` or `tidegate discard {report.run_id}`"
        )
    return f"cancelled; run {report.run_id} {report.status}: {report.message}"


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


def serve(settings: Settings) -> None:
    """Speak ACP on this process's stdin and stdout until the client closes them.

    The protocol runs on a thread of its own and the guarded runs on this one, the main
    thread, so that ``session/cancel`` stops a run as Ctrl-C does (``acp.foreground``).
    The protocol keeps the real stdout to itself: file descriptor 1 becomes a copy of
    stderr first, so nothing else written there (a library's print, a child process that
    inherits it) can corrupt the stream of messages."""
    import threading

    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    foreground = Foreground()
    agent = TidegateAgent(settings, foreground)

    def speak() -> None:
        try:
            asyncio.run(_speak(agent, protocol_out))
        finally:
            foreground.close()

    threading.Thread(target=speak, name="tidegate-acp-protocol", daemon=True).start()
    foreground.work()


async def _speak(agent: TidegateAgent, protocol_out: Any) -> None:
    import sys

    sys.stdout = protocol_out  # while the streams are made
    try:
        reader, writer = await acp.stdio_streams(limit=_LINE_LIMIT)
    finally:
        sys.stdout = sys.stderr
    await acp.run_agent(agent, writer, reader)  # type: ignore[arg-type]


_LINE_LIMIT = 50 * 1024 * 1024
"""The longest message read from the client (one JSON-RPC line)."""
