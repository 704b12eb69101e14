"""Scripted implementations of the executor's ports: approver, user and recorder.

Shipped so tests (and anyone trying the tool layer without a person at the keyboard) can
drive approvals and questions deterministically. Each says what it is in ``label``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import msgspec

from tidegate.tools.calls import ApprovalRequest, ToolCall, ToolResult
from tidegate.tools.context import ApprovalAnswer

ApprovalScript = Callable[[ApprovalRequest], ApprovalAnswer | None]


class ScriptedApprover(msgspec.Struct):
    """Answers approval requests from a script: a function of the request, or a fixed
    verdict per tool (``"grant"``, ``"deny"``, ``"timeout"``). Unlisted tools time out."""

    verdicts: Mapping[str, str] = msgspec.field(default_factory=dict)
    script: ApprovalScript | None = None
    label: str = "scripted approver"
    asked: list[ApprovalRequest] = msgspec.field(default_factory=list)

    def request(self, request: ApprovalRequest, timeout_s: float) -> ApprovalAnswer | None:
        self.asked.append(request)
        if self.script is not None:
            return self.script(request)
        verdict = self.verdicts.get(request.tool, "timeout")
        if verdict == "timeout":
            return None
        return ApprovalAnswer(request.request_id, verdict == "grant", by=self.label)


class ScriptedUser(msgspec.Struct):
    """Answers questions in order from ``answers`` (None: no answer). ``on_ask`` runs
    first, e.g. to simulate the user cancelling the run while being asked."""

    answers: list[str | None] = msgspec.field(default_factory=list)
    on_ask: Callable[[str], None] | None = None
    label: str = "scripted user"
    asked: list[tuple[str, str, tuple[str, ...]]] = msgspec.field(default_factory=list)

    def ask(self, question_id: str, question: str, choices: Sequence[str]) -> str | None:
        self.asked.append((question_id, question, tuple(choices)))
        if self.on_ask is not None:
            self.on_ask(question_id)
        return self.answers.pop(0) if self.answers else None


class ListRecorder(msgspec.Struct):
    """Keeps every recorded call in memory; ``fail_after`` makes the n+1-th record raise,
    like a store that stopped acknowledging writes."""

    calls: list[tuple[ToolCall, ToolResult]] = msgspec.field(default_factory=list)
    fail_after: int | None = None
    label: str = "in-memory recorder"
    _lock: threading.Lock = msgspec.field(default_factory=threading.Lock)

    def record_call(self, call: ToolCall, result: ToolResult) -> None:
        with self._lock:
            if self.fail_after is not None and len(self.calls) >= self.fail_after:
                raise OSError("the recorder stopped acknowledging writes")
            self.calls.append((call, result))
