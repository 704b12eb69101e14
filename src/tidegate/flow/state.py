"""The mutable state a run's phases share, and the T0 view planners read through."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from tidegate.config.records import TidegateConfig
from tidegate.errors import PhaseError
from tidegate.exec.runner import CommandResult
from tidegate.exec.streams import OutputObserver
from tidegate.records.proposal import Finding, Plan, Planner, Proposal
from tidegate.records.report import (
    AppliedFile,
    AttemptEvent,
    ChangedFile,
    ContainmentOut,
    EffectivePolicyOut,
    LandingOut,
)
from tidegate.records.request import RunRequest
from tidegate.validate.shapes import why_missing
from tidegate.workspace.changes import PathChange
from tidegate.workspace.fidelity import Fidelity
from tidegate.workspace.fs import LocalFS, WorkspaceFS
from tidegate.workspace.repo import Repository
from tidegate.workspace.shadow import ShadowWorktree
from tidegate.workspace.snapshot import T0Snapshot

if TYPE_CHECKING:
    from tidegate.feedback.diagnostics import Diagnosis


class ShadowTreeView:
    """Planners' read-only view of T0: the shadow's files, read before APPLY touches them."""

    def __init__(self, shadow_root: Path) -> None:
        self.root = shadow_root
        """The shadow worktree itself: a model planner's read-only tools run there."""
        self._fs = LocalFS(shadow_root)

    def read_bytes(self, path: str) -> bytes | None:
        try:
            entry = self._fs.read(path)
        except ValueError:
            return None
        return entry.content if entry.kind == "file" else None

    def is_executable(self, path: str) -> bool:
        try:
            entry = self._fs.read(path)
        except ValueError:
            return False
        return entry.kind == "file" and entry.executable

    def explain_missing(self, path: str) -> str:
        return why_missing(self.root, path)


class AttemptState(msgspec.Struct):
    number: int
    plan: Plan | None = None
    proposal: Proposal | None = None
    candidate_tree: str | None = None
    changes: list[PathChange] = msgspec.field(default_factory=list)
    verify: CommandResult | None = None
    diagnosis: Diagnosis | None = None
    error: PhaseError | None = None
    failed_phase: str | None = None
    feedback_chars: int = 0
    forms: dict[tuple[str, str], bytes] | None = None
    """APPLY_BACK's work-tree forms of ``changes`` (not checkpointed: recomputed if absent)."""


class RunState(msgspec.Struct):
    request: RunRequest
    run_id: str
    repo: Repository
    snapshot: T0Snapshot
    shadow: ShadowWorktree
    workspace: WorkspaceFS
    planner: Planner
    scratch: Path
    config: TidegateConfig
    attempt: AttemptState = msgspec.field(default_factory=lambda: AttemptState(0))
    context_files: dict[str, str] = msgspec.field(default_factory=dict)
    findings: list[Finding] = msgspec.field(default_factory=list)
    feedback: list[str] = msgspec.field(default_factory=list)
    focus_files: tuple[str, ...] = ()
    """Files the last failure points at: the next attempt's context narrows to them."""
    failed_proposals: dict[str, int] = msgspec.field(default_factory=dict)
    notes: list[str] = msgspec.field(default_factory=list)
    attempt_events: list[AttemptEvent] = msgspec.field(default_factory=list)
    diff: str = ""
    changed_files: list[ChangedFile] = msgspec.field(default_factory=list)
    applied_files: list[AppliedFile] = msgspec.field(default_factory=list)
    rejects: list[str] = msgspec.field(default_factory=list)
    rejects_dir: Path | None = None
    landed_seen: int | None = None
    """How many landings the work tree had seen when T0 was taken (``workspace.landed``);
    None: not known (a resumed run)."""
    landing: LandingOut | None = None
    fidelity: Fidelity | None = None
    containment: ContainmentOut | None = None
    """What VERIFY's command last ran under (recorded in the report)."""
    policy: EffectivePolicyOut | None = None
    """The policy read at bootstrap (recorded in the report and the trace)."""
    command_output: OutputObserver | None = None
    """Told the latest line of VERIFY's command as it runs (the CLI's progress line)."""

    @property
    def tree(self) -> ShadowTreeView:
        return ShadowTreeView(self.shadow.path)

    @property
    def last_feedback(self) -> str | None:
        return self.feedback[-1] if self.feedback else None
