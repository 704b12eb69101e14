"""What a session is given: its phase and the tool set the phase exposes, its options
and loop settings, the runtime context its tool calls run under, and where its record
goes."""

from __future__ import annotations

import secrets
import time

import msgspec

from tidegate.agent.guards import Budget, GuardLimits
from tidegate.errors import UsageError
from tidegate.models.messages import Attachment
from tidegate.store.ports import Recorder

READ_ONLY_TOOLS = frozenset(
    {
        "workspace.read",
        "workspace.list",
        "workspace.glob",
        "workspace.grep",
        "git.exec",
        "project.detect",
        "task.checkpoint",
    }
)
"""What a read-only phase may call. task.checkpoint writes plan notes only (a file the
host owns, never a workspace path the model names)."""

READ_ONLY_PHASES = frozenset({"EXPLORE", "PLAN", "PATCH", "REVIEW", "ANALYZE_ISSUES"})
AGENT_PHASE = "AGENT"
SUB_AGENT_PHASE = "SUB_AGENT"

FINALIZE_NOTE = (
    "The host now has the evidence it needs ({reason}). No tools are available for this "
    "turn: give your final answer."
)


def phase_tools(phase: str) -> frozenset[str] | None:
    """The canonical tools ``phase`` may expose; None: whatever the executor offers."""
    if phase in READ_ONLY_PHASES:
        return READ_ONLY_TOOLS
    if phase in (AGENT_PHASE, SUB_AGENT_PHASE):
        return None
    raise ValueError(f"no tool set for phase {phase!r}")


LoopRecorder = Recorder
"""Where a session's trace, checkpoints and tool calls go: the store's port
(``tidegate.store.ports.Recorder``; ``tidegate.store.StoreRecorder`` is one)."""


class ResumeRefused(UsageError):
    """The checkpoint cannot be continued here (other format, workspace or contract)."""


class LoopSettings(msgspec.Struct, frozen=True):
    """How the loop talks to the model and keeps the context in bounds."""

    max_output_tokens: int | None = None
    """Per response; default: the model's limit, at most 16 384."""
    tool_result_chars: int = 12_000
    """Most characters of one tool result the model is shown."""
    accumulated_output_chars: int = 120_000
    """Tool output shown since the last compaction before the loop checkpoints and
    compacts ahead of the next request."""
    context_headroom: float = 0.85
    """Compact when a request would use more than this share of the input budget."""
    keep_recent_rounds: int = 2
    max_overflow_compactions: int = 2
    """Provider overflows in a row that compaction may answer before the session fails."""
    max_format_repairs: int = 2
    max_finalization_rejections: int = 1
    max_malformed_outputs: int = 2
    max_transient_retries: int = 1
    temperature: float | None = None


class SessionOptions(msgspec.Struct, frozen=True):
    phase: str = AGENT_PHASE
    run_id: str = ""
    """Empty: a fresh id."""
    attempt: int | None = None
    record_scope: str = ""
    """Prefix of the ids tool calls are stored under, when several loops share one run."""
    expect_changes: bool | None = None
    """Whether completion needs a recorded write; default: not for read-only phases."""
    brief: str | None = None
    """Instructions for this phase, sent as a second user message after the task."""
    attachments: tuple[Attachment, ...] = ()
    guard_limits: GuardLimits = msgspec.field(default_factory=GuardLimits)
    settings: LoopSettings = msgspec.field(default_factory=LoopSettings)
    checkpoints: bool = True
    """False when an enclosing engine run owns the checkpoints (planner loops)."""
    dry_run: bool = False
    """Read-only whatever the phase: forced on a sub-agent dispatched from a read-only
    phase (its tools are filtered as well; this sets the prompt and the evidence rule)."""

    @property
    def read_only(self) -> bool:
        return self.phase in READ_ONLY_PHASES or self.dry_run


class SessionRuntime(msgspec.Struct, frozen=True):
    """The runtime context every tool call of a session runs under."""

    run_id: str
    task_id: str
    phase: str
    attempt: int | None
    mode: str
    read_only: bool
    workspace: str
    prompt_hash: str
    registry_hash: str

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "task_id": self.task_id,
            "phase": self.phase,
            "attempt": self.attempt,
            "mode": self.mode,
            "read_only": self.read_only,
            "workspace": self.workspace,
            "prompt_hash": self.prompt_hash,
            "registry_hash": self.registry_hash,
        }


def session_run_id(options: SessionOptions, recorder: object) -> str:
    """The run a session records under: its options', else the run its recorder has
    begun (``StoreRecorder.run_id``), else a fresh id."""
    if options.run_id:
        return options.run_id
    try:
        value = getattr(recorder, "run_id", None)
    except RuntimeError:  # a recorder that has not begun a run
        value = None
    if isinstance(value, str) and value:
        return value
    return time.strftime("agent-%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def budget_facts(budget: Budget) -> dict[str, object]:
    """The budget for a trace payload (canonical JSON has no floats: cents and seconds)."""
    out: dict[str, object] = {}
    if budget.max_steps is not None:
        out["max_steps"] = budget.max_steps
    if budget.max_tokens is not None:
        out["max_tokens"] = budget.max_tokens
    if budget.max_wall_seconds is not None:
        out["max_wall_seconds"] = round(budget.max_wall_seconds)
    if budget.max_dollars is not None:
        out["max_dollars"] = str(budget.max_dollars)
    if budget.hard_dollar_cap is not None:
        out["hard_dollar_cap"] = str(budget.hard_dollar_cap)
    return out
