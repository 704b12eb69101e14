"""The task ledger as data: the canonical enums and the records parsed from the task files.

The files are the source of truth; these records are what one command reads from them,
changes, and hands to the renderer. A record that came from a file carries its 1-based
``line`` (0 for a record created by this command and not yet written).
"""

from __future__ import annotations

from enum import StrEnum

import msgspec


class Route(StrEnum):
    SMALL = "small"
    MEDIUM = "medium"
    HIGH = "high"
    EPIC = "epic"


class ItemStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    BLOCKED = "blocked"
    DONE = "done"
    DISCARDED = "discarded"


class StageStatus(StrEnum):
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    BLOCKED = "blocked"


class FailureType(StrEnum):
    VERIFICATION_FAILED = "verification_failed"
    REVIEW_BLOCKED = "review_blocked"
    SCOPE_DRIFT = "scope_drift"
    NEEDS_USER_DECISION = "needs_user_decision"
    AGENT_ERROR = "agent_error"


class BlockerKind(StrEnum):
    """Why an item is blocked: a failure type, or its retry budget is used up."""

    VERIFICATION_FAILED = "verification_failed"
    REVIEW_BLOCKED = "review_blocked"
    SCOPE_DRIFT = "scope_drift"
    NEEDS_USER_DECISION = "needs_user_decision"
    AGENT_ERROR = "agent_error"
    BUDGET_EXHAUSTED = "budget_exhausted"


class Gate(StrEnum):
    """Side effects that always wait for a person's decision."""

    RELEASE = "release"
    EXTERNAL_PUSH = "external_push"
    DESTRUCTIVE_CLEANUP = "destructive_cleanup"
    CREDENTIALS = "credentials"
    RULE_PROMOTION = "rule_promotion"
    MILESTONE_MERGE = "milestone_merge"


class EvidenceKind(StrEnum):
    COMMAND = "command"
    ARTIFACT = "artifact"
    CI = "ci"
    REVIEW = "review"
    FILE = "file"
    RUN = "run"


class Verdict(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    CHANGES_REQUESTED = "changes_requested"
    BLOCKED = "blocked"


CHECK_KINDS = frozenset({EvidenceKind.COMMAND, EvidenceKind.RUN})
"""Evidence that something was actually executed (a micro-gate on high and epic)."""


class Blocker(msgspec.Struct):
    kind: BlockerKind
    text: str

    def render(self) -> str:
        return f"{self.kind.value}: {self.text}"


class Item(msgspec.Struct):
    id: str
    title: str
    status: ItemStatus
    assignee: str | None = None
    retries: int = 0
    blocker: Blocker | None = None
    evidence: list[str] = msgspec.field(default_factory=list)
    required: bool = True
    gate: Gate | None = None
    milestone: str | None = None
    line: int = 0

    @property
    def attempt(self) -> int:
        """The attempt in progress (or the last one): every retry starts a new attempt."""
        return self.retries + 1


class Evidence(msgspec.Struct, frozen=True):
    id: str
    item: str
    attempt: int
    kind: EvidenceKind
    passed: bool
    ref: str
    fingerprint: str
    line: int = 0
    detail: tuple[str, ...] = ()
    """Markdown lines for the evidence block (new evidence only; not read back)."""

    @property
    def number(self) -> int:
        return int(self.id.removeprefix("E-"))


class LogEntry(msgspec.Struct, frozen=True):
    """One ``D-N`` decision or ``F-N`` failure line of implementation-notes.md."""

    number: int
    kind: str
    fields: dict[str, str]
    text: str = ""
    """The free-text tail (``reason=`` or ``decision=``), which may contain spaces."""
    line: int = 0

    def get(self, key: str) -> str | None:
        return self.fields.get(key)


class CheckEntry(msgspec.Struct):
    """A ``- [ ] text`` line of a checkpoint checklist."""

    text: str
    closed: bool = False
    line: int = 0


class Checkpoint(msgspec.Struct):
    route: Route
    stage: str
    stage_status: StageStatus
    resume_pointer: str | None
    next_action: str = ""
    latest_evidence: str | None = None
    updated: str = ""
    conditions: list[CheckEntry] = msgspec.field(default_factory=list)
    triggers: list[CheckEntry] = msgspec.field(default_factory=list)
    key_lines: dict[str, int] = msgspec.field(default_factory=dict)
    """1-based line of each key read from the file (for errors found across files)."""


class PlanSection(msgspec.Struct, frozen=True):
    """The part of plan.md (or brief.md) that describes one item."""

    item: str
    line: int
    digest: str
    edit_blocks: tuple[tuple[int, str], ...] = ()
    """``(first line, text)`` of each fenced ``tidegate`` block."""
    verify: str | None = None
    depends_on: tuple[str, ...] = ()


class ReviewReport(msgspec.Struct, frozen=True):
    verdict: Verdict
    refs: tuple[str, ...]
    verdict_line: int


class TaskState(msgspec.Struct):
    """Everything one command needs: parsed from the files, changed in memory, rendered."""

    checkpoint: Checkpoint
    items: list[Item]
    evidence: list[Evidence]
    decisions: list[LogEntry]
    failures: list[LogEntry]
    plan: dict[str, PlanSection]
    plan_file: str
    """The file the plan sections come from: plan.md, or brief.md on the small route."""
    plan_digest: str
    """Digest of the whole plan file (the plan of an item that has no section of its own)."""
    review: ReviewReport | None = None
    milestones: tuple[str, ...] = ()
    has_gate_column: bool = True
    ship_summary: list[str] = msgspec.field(default_factory=list)
    """Lines for the ship summary section (set by ``ship`` only)."""

    @property
    def route(self) -> Route:
        return self.checkpoint.route

    def item(self, item_id: str) -> Item | None:
        return next((i for i in self.items if i.id == item_id), None)

    def evidence_of(self, item_id: str, attempt: int | None = None) -> list[Evidence]:
        return [
            e
            for e in self.evidence
            if e.item == item_id and (attempt is None or e.attempt == attempt)
        ]

    def plan_digest_of(self, item_id: str) -> str:
        section = self.plan.get(item_id)
        return section.digest if section else self.plan_digest
