"""What a tool call may rely on: the ToolContext, and the small ports the host plugs in.

The context is configuration, fixed for a run (or a CLI/MCP session). Mutable state that
grows with the calls (active tools, state version, guards, command sessions) lives in the
executor.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from tidegate.config.records import DEFAULT_PROTECTED
from tidegate.exec.guard import Origin
from tidegate.tools.calls import ApprovalRequest, ToolCall, ToolResult
from tidegate.tools.policy import ApprovalProfile, NetworkAccess, TaskMode, WriteAccess

if TYPE_CHECKING:
    from tidegate.workspace.ignores import GitView
    from tidegate.workspace.port import WorkspacePort

ContainmentMode = Literal["auto", "required", "none"]


class ApprovalAnswer(msgspec.Struct, frozen=True):
    request_id: str
    granted: bool
    by: str = "user"
    reason: str = ""


class ApprovalPort(Protocol):
    """Asks someone to approve a call. None: no answer within ``timeout_s`` (denied)."""

    def request(self, request: ApprovalRequest, timeout_s: float) -> ApprovalAnswer | None: ...


class UserPort(Protocol):
    """Asks the user a question. None: no answer (the call fails, nothing is assumed)."""

    def ask(self, question_id: str, question: str, choices: Sequence[str]) -> str | None: ...


class CallRecorder(Protocol):
    """Durable record of every finished call (the store's tool_calls table plugs in here).

    Raising from ``record_call`` is a persistence failure: the executor turns it into
    PersistenceError and the run cannot complete.
    """

    def record_call(self, call: ToolCall, result: ToolResult) -> None: ...


class CallStartRecorder(CallRecorder, Protocol):
    """A recorder that also wants to know when dispatch is about to start (optional)."""

    def record_start(self, call: ToolCall, tool: str, input_sha256: str) -> None: ...


class ToolLimits(msgspec.Struct, frozen=True):
    max_batch_calls: int = 16
    """Calls one model round may emit."""
    max_calls: int | None = None
    """Calls the whole session may make (None: no budget)."""
    output_bytes: int = 32_000
    """Command output kept per stream for the model (the full output is spilled)."""
    stale_edit_limit: int = 3
    """Failed edits of one path in one observed state before further edits there pause."""
    approval_timeout_s: float = 300.0
    max_sessions: int = 4


class ToolContext(msgspec.Struct):
    """Everything a call depends on besides its arguments.

    ``workspace`` is the confined port every workspace tool goes through. ``scratch_dir``
    (spilled command output) and ``artifact_dir`` / ``task_state_path`` must be outside the
    workspace; the artifact and task tools are only available when those are set, user.ask
    only with a ``user``. ``validation_command`` (the operator's) wins over configuration
    and project detection for project.validate.
    """

    workspace: WorkspacePort
    mode: TaskMode = TaskMode.PATCH
    approval_profile: ApprovalProfile = ApprovalProfile.BALANCED
    network: NetworkAccess = "policy_gated"
    write_access: WriteAccess = "allowed"
    containment: ContainmentMode = "auto"
    origin: Origin = Origin.MODEL
    """Who chooses this context's calls: a model (the agent loop), an MCP client, or the
    user by hand (``tidegate tools call``). A command that is not the user's runs
    uncontained only after an approval (``tidegate.exec.guard``)."""
    approver: ApprovalPort | None = None
    grants: frozenset[str] = frozenset()
    """Approval request IDs already granted (a grant given while the run was paused)."""
    user: UserPort | None = None
    cancel: threading.Event = msgspec.field(default_factory=threading.Event)
    deadline: float | None = None
    """Absolute ``time.monotonic()`` deadline of the run; commands never outlive it."""
    scratch_dir: Path | None = None
    artifact_dir: Path | None = None
    task_state_path: Path | None = None
    validation_command: str | None = None
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    policy_notes: tuple[str, ...] = ()
    """What of the repository's tidegate configuration was not applied, because it would
    have loosened the user's policy (``tidegate.config.records.LoadedConfig.ignored``)."""
    limits: ToolLimits = msgspec.field(default_factory=ToolLimits)
    git_view: GitView | None = None
    """The git work tree the workspace was in when the context was made (None: none; set
    then, whatever a caller passes), pinned: every git call tidegate makes for these tools
    goes to that git dir, so a ``.git`` a command plants later is never discovered (its
    config, hooks and filters never run)."""

    def __post_init__(self) -> None:
        # accept the plain strings a configuration file or a caller passes
        self.mode = TaskMode(self.mode)
        self.approval_profile = ApprovalProfile(self.approval_profile)
        self.git_view = self.workspace.git_view()  # now, before any command runs

    @property
    def root(self) -> Path:
        return self.workspace.root
