"""The planner port: what PLAN, PATCH and REVIEW ask of whoever proposes changes.

A planner only reads (through a ``TreeView`` of the T0 state) and returns data. It never
writes: APPLY turns its ``Proposal`` into effects in the shadow, and the host, not the
planner, attests what changed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal, Protocol

import msgspec


class TreeView(Protocol):
    """Read-only access to the repository as it was at T0."""

    def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when there is no regular file at ``path``."""
        ...

    def is_executable(self, path: str) -> bool: ...

    def explain_missing(self, path: str) -> str:
        """Why ``read_bytes(path)`` is None, in a few words ("no such file at T0", "inside
        the submodule lib", ...): what a planner's error tells its author."""
        ...


class Finding(msgspec.Struct, frozen=True):
    message: str
    path: str | None = None
    line: int | None = None
    severity: Literal["error", "warning", "info"] = "error"
    source: str = "planner"


class PlanRequest(msgspec.Struct, frozen=True):
    objective: str
    mode: str
    attempt: int
    feedback: str | None = None
    findings: tuple[Finding, ...] = ()
    focus_files: tuple[str, ...] = ()
    """Files the previous attempt's failure points at, most relevant first."""


class Plan(msgspec.Struct, frozen=True):
    summary: str
    targets: tuple[str, ...] = ()


class FileEdit(msgspec.Struct, frozen=True):
    """Full new content for a path (``content`` None deletes it)."""

    path: str
    content: bytes | None
    executable: bool = False


class ContentCheck(msgspec.Struct, frozen=True):
    """An assertion VERIFY makes on the shadow after APPLY."""

    path: str
    contains: str


class Proposal(msgspec.Struct, frozen=True):
    """A proposed change: a unified diff, SEARCH/REPLACE edit blocks, whole-file edits, or
    a mix (VALIDATE normalises them into one change set)."""

    diff: str | None = None
    search_replace: str | None = None
    edits: tuple[FileEdit, ...] = ()
    checks: tuple[ContentCheck, ...] = msgspec.field(default=())

    def fingerprint(self) -> str:
        """Identity of the change itself, used to refuse a retry that repeats a failure."""
        canon = {
            "diff": self.diff,
            "search_replace": self.search_replace,
            "edits": [
                [
                    e.path,
                    None if e.content is None else hashlib.sha256(e.content).hexdigest(),
                    e.executable,
                ]
                for e in self.edits
            ],
        }
        return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()

    @property
    def is_empty(self) -> bool:
        return (
            not (self.diff and self.diff.strip())
            and not (self.search_replace and self.search_replace.strip())
            and not self.edits
        )


class Planner(Protocol):
    name: str

    def plan(self, request: PlanRequest, tree: TreeView) -> Plan: ...

    def patch(self, request: PlanRequest, plan: Plan, tree: TreeView) -> Proposal: ...

    def review(self, request: PlanRequest, tree: TreeView) -> list[Finding]: ...
