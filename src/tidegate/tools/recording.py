"""Recording tool calls in the run store: the executor's CallRecorder over a ToolCallLog,
and ``ToolRun``, one recorded run of an operator surface (``tidegate tools call``,
``tidegate mcp serve``).

``StoreCallRecorder`` wraps anything with the run store recorder's two tool-call methods
(``tool_call_requested`` before dispatch, buffered; ``tool_call_finished`` after, flushed
durably) -- ``tidegate.store.recorder.StoreRecorder`` has them. The executor calls
``record_start`` just before an adapter is dispatched, so a crash mid-call leaves a
requested-but-unfinished call that a resumed run treats as an unknown outcome rather than
running the mutation again. Calls that never reached dispatch are recorded as requested
and finished together.

``ToolRun`` gives the calls a run to belong to: it begins the run (kind ``tools`` for one
CLI call, ``mcp`` for a server session), collects what the report needs as calls finish,
and ends the run with a ``FlowReport`` so ``tidegate runs`` and ``tidegate read`` show it
like any other. It talks to the store only through ``RunLog`` (``StoreRecorder``), from
whatever single thread the caller uses: a SQLite connection belongs to the thread that
opened it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import msgspec

from tidegate.errors import ErrorClass
from tidegate.records.report import ChangedFile, FlowReport
from tidegate.tools.arguments import argument_problem
from tidegate.tools.calls import ToolCall, ToolResult
from tidegate.tools.effects import sha256_json

STORE_STATUS = {"ok": "succeeded", "denied": "denied", "unknown_outcome": "unknown"}
"""Result status -> store status; every other status is ``failed``."""

RunKind = Literal["tools", "mcp"]


class ToolCallLog(Protocol):
    def tool_call_requested(
        self, tool_call_id: str, canonical_tool: str, input_sha256: str
    ) -> None: ...

    def tool_call_finished(
        self,
        tool_call_id: str,
        status: str,
        effects: Mapping[str, object] | None,
        *,
        result_sha256: str | None = None,
    ) -> None: ...


class RunLog(ToolCallLog, Protocol):
    """What a ``ToolRun`` writes through; ``tidegate.store.StoreRecorder`` is one."""

    def begin(
        self, run_id: str, repo: str, mode: str, request: Mapping[str, object], *, resumed: bool
    ) -> None: ...

    def event(
        self,
        kind: str,
        *,
        payload: Mapping[str, object] | None = None,
        meta: Mapping[str, object] | None = None,
    ) -> None: ...

    def flush(self) -> None: ...

    def finish(self, report: FlowReport) -> FlowReport: ...


def input_digest(arguments: Any) -> str:
    """The digest a call's input is recorded under. Arguments the executor refuses as not
    strict JSON (NaN, unpaired surrogates, absurd nesting) still get one: of their text as
    given, or of a lossless ASCII rendering, so the refused call is on record too."""
    if argument_problem(arguments) is None:
        return sha256_json(arguments)
    if isinstance(arguments, str):
        data = arguments.encode("utf-8", "surrogatepass")
    else:
        try:
            data = json.dumps(arguments, sort_keys=True, default=repr).encode("ascii")
        except (RecursionError, ValueError, TypeError):
            data = ascii(type(arguments)).encode("ascii")
    return "sha256:" + hashlib.sha256(data).hexdigest()


class FinishedCall(msgspec.Struct, frozen=True):
    """What a run's report keeps of one recorded call."""

    call_id: str
    tool: str
    status: str
    """The result status (``ok``, ``error``, ``denied`` ...)."""
    writes: tuple[Mapping[str, Any], ...]
    """The host-attested ``write`` effects, as recorded."""


class StoreCallRecorder:
    """A CallRecorder (with the optional ``record_start``) over a ToolCallLog.

    ``finished`` lists every call handed to ``record_call`` (in order, including one whose
    recording failed), ``started`` the calls dispatched but not finished yet, and
    ``last_result`` the last result it was given, so a caller whose recording failed can
    still show what the tool did."""

    def __init__(self, log: ToolCallLog) -> None:
        self.log = log
        self.started: set[str] = set()
        self.finished: list[FinishedCall] = []
        self.last_result: ToolResult | None = None

    def record_start(self, call: ToolCall, tool: str, input_sha256: str) -> None:
        self.log.tool_call_requested(call.call_id, tool, input_sha256)
        self.started.add(call.call_id)

    def record_call(self, call: ToolCall, result: ToolResult) -> None:
        self.last_result = result
        data = result.to_json()
        self.finished.append(
            FinishedCall(
                call_id=call.call_id,
                tool=result.tool or call.name,
                status=result.status,
                writes=tuple(data["effects"].get("write", ())),
            )
        )
        if call.call_id not in self.started:
            self.log.tool_call_requested(
                call.call_id, result.tool or call.name, input_digest(call.arguments)
            )
        self.started.discard(call.call_id)
        self.log.tool_call_finished(
            call.call_id,
            STORE_STATUS.get(result.status, "failed"),
            data["effects"],
            result_sha256=sha256_json(data),
        )


CALL_ERROR_CLASS: Mapping[str, ErrorClass] = {
    "denied": ErrorClass.APPROVAL_DENIED,
    "cancelled": ErrorClass.CANCELLED,
    "unknown_outcome": ErrorClass.UNKNOWN_OUTCOME,
}
"""A single CLI call's failed status -> the run's error class (others have none)."""


def new_tool_run_id(kind: RunKind) -> str:
    return time.strftime(f"{kind}-%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class ToolRun:
    """One recorded run of an operator surface over the tool executor.

    ``kind="tools"``: one ``tidegate tools call``; the run succeeds when the call is
    ``ok``. ``kind="mcp"``: one server session; the run succeeds unless a call's outcome
    became unknown or a record could not be stored -- calls that failed in the ordinary
    way (a stale precondition, a denial) are the client's business and stay visible per
    call. Give ``calls`` to the executor as its recorder."""

    def __init__(
        self,
        log: RunLog,
        *,
        kind: RunKind,
        repo: str,
        workspace: str,
        mode: str,
        read_only: bool,
        settings: Mapping[str, object],
        surface: str,
        run_id: str | None = None,
    ) -> None:
        self.log = log
        self.kind = kind
        self.repo = repo
        self.workspace = workspace
        self.mode = mode
        self.read_only = read_only
        self.settings = dict(settings)
        self.surface = surface
        self.run_id = run_id or new_tool_run_id(kind)
        self.calls = StoreCallRecorder(log)
        self.report: FlowReport | None = None
        self._started = time.monotonic()

    def begin(self) -> None:
        """Record the run as running in this process, with its settings, durably."""
        request = {"surface": self.surface, "workspace": self.workspace, **self.settings}
        self.log.begin(self.run_id, self.repo, self.mode, request, resumed=False)
        self.log.event(
            "run.started",
            payload={"kind": self.kind, "mode": self.mode, **self.settings},
            meta={"workspace": self.workspace},
        )
        self.log.flush()
        self._started = time.monotonic()

    def finish(
        self, *, ended_by: str | None = None, persistence_error: str | None = None
    ) -> FlowReport:
        """End the run with its report (stored and acknowledged, or PersistenceError).

        ``ended_by`` says what stopped a session (``eof``, ``SIGTERM``, ...) or the call
        (``SIGINT``); ``persistence_error`` that a record already failed, which the run
        then reports instead of any success."""
        if self.kind == "mcp" and ended_by is not None:
            self.log.event("session.ended", payload={"ended_by": ended_by})
        report = self.build_report(ended_by=ended_by, persistence_error=persistence_error)
        self.report = self.log.finish(report)
        return self.report

    def build_report(
        self, *, ended_by: str | None = None, persistence_error: str | None = None
    ) -> FlowReport:
        finished = self.calls.finished
        status: Literal["succeeded", "failed"] = "succeeded"
        error: ErrorClass | None = None
        message = self._message(finished, ended_by)
        unknown = [c for c in finished if c.status == "unknown_outcome"]
        if self.calls.started:
            status, error = "failed", ErrorClass.UNKNOWN_OUTCOME
            message = (
                f"call {', '.join(sorted(self.calls.started))} was dispatched but never "
                f"finished ({ended_by or 'stopped'}): its effects are unknown"
            )
        elif unknown:
            status, error = "failed", ErrorClass.UNKNOWN_OUTCOME
            message = f"the outcome of {unknown[0].tool} call {unknown[0].call_id} is unknown"
        elif self.kind == "tools":
            last = finished[-1] if finished else None
            if last is None:
                status, error = "failed", ErrorClass.CANCELLED
            elif last.status != "ok":
                status, error = "failed", CALL_ERROR_CLASS.get(last.status)
        if persistence_error is not None:
            status, error = "failed", ErrorClass.PERSISTENCE_ERROR
            message = persistence_error
        return FlowReport(
            status=status,
            mode=self.mode,
            run_id=self.run_id,
            repo=self.repo,
            attempts=1,
            max_attempts=1,
            failure_phase=None,
            error_class=None if error is None else error.value,
            message=message,
            fs_mode="read-only" if self.read_only else "read-write",
            planner=self.surface,
            changed_files=net_changes(finished),
            notes=self._notes(finished, ended_by),
            duration_s=round(time.monotonic() - self._started, 3),
        )

    def _message(self, finished: Sequence[FinishedCall], ended_by: str | None) -> str:
        if self.kind == "mcp":
            how = "the client closed stdin" if ended_by == "eof" else f"{ended_by or 'ended'}"
            return f"session ended ({how}) after {len(finished)} call(s)"
        if not finished:
            return f"the call did not run ({ended_by or 'stopped'})"
        last = finished[-1]
        return f"{last.tool}: {last.status}"

    def _notes(self, finished: Sequence[FinishedCall], ended_by: str | None) -> list[str]:
        counts: dict[str, int] = {}
        for call in finished:
            counts[call.status] = counts.get(call.status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"
        notes = [f"{len(finished)} tool call(s): {summary}"]
        if self.workspace != self.repo:
            notes.append(f"workspace {self.workspace}")
        if ended_by is not None and ended_by != "eof":
            notes.append(f"ended by {ended_by}")
        return notes


def net_changes(finished: Sequence[FinishedCall]) -> list[ChangedFile]:
    """The run's net change per regular file, from the calls' host-attested writes: the
    state before the first write and after the last. Paths back where they started, and
    directories, symlinks and special entries (no content hash), are left out; each call
    still lists them in its own effects."""
    first: dict[str, Mapping[str, Any]] = {}
    last: dict[str, Mapping[str, Any]] = {}
    for call in finished:
        for write in call.writes:
            path = str(write["path"])
            first.setdefault(path, write["before"])
            last[path] = write["after"]
    out = []
    for path in sorted(first):
        before, after = first[path], last[path]
        if before == after or not {before["kind"], after["kind"]} <= {"missing", "file"}:
            continue
        if before["kind"] == "missing":
            action: Literal["create", "modify", "delete"] = "create"
        elif after["kind"] == "missing":
            action = "delete"
        else:
            action = "modify"
        out.append(
            ChangedFile(
                path=path,
                action=action,
                before_sha256=before["sha256"],
                after_sha256=after["sha256"],
            )
        )
    return out
