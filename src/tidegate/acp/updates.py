"""A run's progress as ACP session updates, sent in order from the thread that runs it.

* each phase: an ``agent_message_chunk`` line and the attempt's ``plan`` (its phases,
  pending, in progress or completed);
* each tool call the model makes: ``tool_call`` ``pending`` when the model has asked for
  it, ``tool_call_update`` ``in_progress`` when it is dispatched, then ``completed`` or
  ``failed`` with what the host attested it did (files read, matches searched, a
  command's exit) as its content;
* the proposal, once VALIDATE has built its candidate tree: a completed ``edit`` tool call
  with one ACP diff per text file (T0's text and the candidate's).

The tool calls come from the run's own record (``StreamingRecorder`` is the run's
``StoreRecorder``, told of each call as it is recorded), so what the editor sees is what
the store keeps."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import acp
import msgspec
from acp.schema import PlanEntryStatus, ToolCallLocation, ToolKind

from tidegate.records.modes import MODE_PHASES, Mode, When
from tidegate.records.report import PhaseEvent
from tidegate.store import RunStore, StoreRecorder
from tidegate.text.sanitize import sanitize

_KINDS: dict[str, ToolKind] = {
    "workspace.read": "read",
    "workspace.list": "search",
    "workspace.glob": "search",
    "workspace.grep": "search",
    "workspace.write": "edit",
    "workspace.edit": "edit",
    "workspace.delete": "delete",
    "command.run": "execute",
    "command.session": "execute",
    "project.validate": "execute",
    "git.exec": "execute",
}
_SHOWN_PATHS = 20


class Stream(msgspec.Struct):
    """Sends a run's progress from the thread that runs it as session updates, in order
    (each is queued on the protocol's loop before the next)."""

    conn: Any
    session_id: str
    loop: asyncio.AbstractEventLoop
    repo: Path
    pending: list[concurrent.futures.Future[Any]] = msgspec.field(default_factory=list)
    calls: int = 0
    asked: list[tuple[str, str]] = msgspec.field(default_factory=list)
    """Tool calls the model asked for, not dispatched yet: (tool, ACP id)."""
    dispatched: dict[str, tuple[str, str]] = msgspec.field(default_factory=dict)
    """The run's tool call id -> (tool, ACP id)."""
    plan: list[tuple[str, PlanEntryStatus, str]] = msgspec.field(default_factory=list)
    """The attempt's phases: (phase, status, what the editor reads)."""
    t0_commit: str | None = None

    def send(self, update: Any) -> None:
        """Queue ``update``; once the client is gone (the loop closed) nothing is sent."""
        if self.loop.is_closed():
            return
        coro = self.conn.session_update(session_id=self.session_id, update=update)
        try:
            self.pending.append(asyncio.run_coroutine_threadsafe(coro, self.loop))
        except RuntimeError:  # closed between the check and the call
            coro.close()

    async def drain(self) -> None:
        pending, self.pending = self.pending, []
        for future in pending:
            await asyncio.wrap_future(future)

    # -- phases (the flow's PhaseObserver) ----------------------------------------------

    def phase_started(self, attempt: int, phase: Any) -> None:
        name = str(getattr(phase, "value", phase))
        if not self.plan or name == MODE_PHASES[Mode.PATCH][0][0].value:
            self.plan = [
                (p.value, "pending", f"attempt {attempt}: {p.value}")
                for p, when in MODE_PHASES[Mode.PATCH]
                if when != When.ON_FAILURE
            ]
        self._plan_mark(name, "in_progress", f"attempt {attempt}: {name}")
        self.send(acp.update_agent_message_text(f"[attempt {attempt}] {name} ...\n"))

    def phase_finished(self, event: PhaseEvent) -> None:
        self._unanswered(f"not dispatched in {event.phase}")
        detail = f": {event.detail}" if event.detail else ""
        self.send(
            acp.update_agent_message_text(
                f"[attempt {event.attempt}] {event.phase} {event.status}{detail}\n"
            )
        )
        label = f"attempt {event.attempt}: {event.phase}"
        self._plan_mark(
            event.phase, "completed", label + ("" if event.status == "ok" else f" ({event.status})")
        )

    def _plan_mark(self, phase: str, status: PlanEntryStatus, label: str) -> None:
        """Send the attempt's plan with ``phase`` now ``status``."""
        index = next((i for i, e in enumerate(self.plan) if e[0] == phase), None)
        if index is None:
            self.plan.append((phase, status, label))
        else:
            self.plan[index] = (phase, status, label)
        self.send(acp.update_plan(acp.plan_entry(text, status=st) for _, st, text in self.plan))

    # -- tool calls -------------------------------------------------------------------

    def asked_for(self, text: str) -> None:
        """The model asked for a tool call (``ModelPlanner.progress``: "PHASE TOOL ARGS")."""
        parts = text.split(" ", 2)
        tool = parts[1] if len(parts) > 1 else text
        self.calls += 1
        call_id = f"tool-{self.calls}"
        self.asked.append((tool, call_id))
        self.send(
            acp.start_tool_call(
                call_id,
                sanitize(text),
                kind=_KINDS.get(tool, "other"),
                status="pending",
            )
        )

    def dispatched_call(self, record_id: str, tool: str) -> None:
        index = next((i for i, asked in enumerate(self.asked) if asked[0] == tool), None)
        if index is not None:
            for _, skipped in self.asked[:index]:
                self._failed(skipped, "not dispatched")
            call_id = self.asked[index][1]
            del self.asked[: index + 1]
        else:  # not announced by the model's stream (a resumed call): announce it now
            self.calls += 1
            call_id = f"tool-{self.calls}"
            self.send(acp.start_tool_call(call_id, tool, kind=_KINDS.get(tool, "other")))
        self.dispatched[record_id] = (tool, call_id)
        self.send(acp.update_tool_call(call_id, status="in_progress"))

    def finished_call(
        self, record_id: str, status: str, effects: Mapping[str, object] | None
    ) -> None:
        tool, call_id = self.dispatched.pop(record_id, ("", ""))
        if not call_id:
            return
        lines, paths = attested(effects or {})
        ok = status == "succeeded"
        summary = "\n".join([f"{tool} {status}", *lines])
        self.send(
            acp.update_tool_call(
                call_id,
                status="completed" if ok else "failed",
                content=[acp.tool_content(acp.text_block(sanitize(summary)))],
                locations=[ToolCallLocation(path=str(self.repo / p)) for p in paths],
                raw_output={"status": status, "effects": effects},
            )
        )

    def _unanswered(self, why: str) -> None:
        for _, call_id in self.asked:
            self._failed(call_id, why)
        self.asked.clear()

    def _failed(self, call_id: str, why: str) -> None:
        content = [acp.tool_content(acp.text_block(why))]
        self.send(acp.update_tool_call(call_id, status="failed", content=content))

    # -- the proposal -----------------------------------------------------------------

    def proposal(self, attempt: int, candidate_tree: str, changed: list[Any]) -> None:
        """VALIDATE built the candidate: the proposal as an edit, diffed against T0."""
        from tidegate.acp.diffs import text_diffs

        paths = [str(c[0]) for c in changed if isinstance(c, list | tuple) and c]
        self.calls += 1
        call_id = f"proposal-{attempt}"
        diffs = text_diffs(self.repo, self.t0_commit, candidate_tree, paths)
        self.send(
            acp.start_tool_call(
                call_id,
                f"attempt {attempt}: the proposed change ({len(paths)} path(s))",
                kind="edit",
                status="completed",
                content=diffs,
                locations=[ToolCallLocation(path=str(self.repo / p)) for p in paths[:100]],
                raw_input={"attempt": attempt, "candidate_tree": candidate_tree, "paths": paths},
            )
        )


def attested(effects: Mapping[str, object]) -> tuple[list[str], list[str]]:
    """What the host attested a call did, as lines, and the paths it touched."""
    lines: list[str] = []
    paths: list[str] = []
    for item in _items(effects.get("inspect")):
        found = [str(p) for p in _items(item.get("paths"))]
        paths += found
        shown = ", ".join(found[:_SHOWN_PATHS]) + (" ..." if len(found) > _SHOWN_PATHS else "")
        lines.append(
            f"{item.get('kind')} {item.get('scope')}: {len(found)} path(s) {shown}".rstrip()
        )
    for item in _items(effects.get("write")):
        paths.append(str(item.get("path")))
        lines.append(f"wrote {item.get('path')}")
    validate = effects.get("validate")
    if isinstance(validate, Mapping):
        lines.append(
            f"`{validate.get('command')}` {validate.get('status')} (exit {validate.get('exit_code')})"
        )
    approval = effects.get("approval")
    if isinstance(approval, Mapping) and approval.get("status") == "denied":
        lines.append("denied: " + "; ".join(str(r) for r in _items(approval.get("reasons"))))
    return lines, list(dict.fromkeys(paths))[:_SHOWN_PATHS]


def _items(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


class StreamingRecorder(StoreRecorder):
    """The run's ``StoreRecorder``, which also tells ``stream`` of each tool call and of
    the proposal's candidate tree as they are recorded."""

    def __init__(self, store: RunStore, stream: Stream, *, task_id: str | None = None) -> None:
        super().__init__(store, task_id=task_id)
        self.stream = stream

    def event(
        self,
        kind: str,
        *,
        attempt: int | None = None,
        phase: str | None = None,
        payload: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> None:
        super().event(kind, attempt=attempt, phase=phase, payload=payload, meta=meta)
        if kind == "run.started" and meta is not None:
            self.stream.t0_commit = str(meta.get("t0_commit") or "") or None
        facts = payload or {}
        if kind == "phase.finished" and phase == "VALIDATE" and facts.get("candidate_tree"):
            changed = _items(facts.get("changed"))
            _told(self.stream.proposal, attempt or 0, str(facts["candidate_tree"]), changed)

    def tool_call_requested(
        self,
        tool_call_id: str,
        canonical_tool: str,
        input_sha256: str,
        *,
        attempt: int | None = None,
    ) -> None:
        super().tool_call_requested(tool_call_id, canonical_tool, input_sha256, attempt=attempt)
        _told(self.stream.dispatched_call, tool_call_id, canonical_tool)

    def tool_call_finished(
        self,
        tool_call_id: str,
        status: str,
        effects: Mapping[str, object] | None,
        *,
        result_sha256: str | None = None,
        attempt: int | None = None,
    ) -> None:
        super().tool_call_finished(
            tool_call_id, status, effects, result_sha256=result_sha256, attempt=attempt
        )
        _told(self.stream.finished_call, tool_call_id, status, effects)


def _told(tell: Callable[..., None], *args: Any) -> None:
    """Tell the editor; what the editor is shown never breaks the run or its record (the
    record was written first): a failure to tell is one line on stderr."""
    try:
        tell(*args)
    except Exception as exc:
        sys.stderr.write(sanitize(f"tidegate acp: an update was not sent: {exc}") + "\n")
