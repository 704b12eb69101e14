"""The adapter port: how one canonical tool is carried out, and what it may hand back.

An adapter returns the model-visible ``output`` plus ``claims``: the evidence it can vouch
for as host code (what it inspected, a validation's status, a complete diff's digest).
It never reports workspace writes: the executor observes those itself, before and after
the call, and refuses a claim of ``write``, ``derived``, ``approval`` or ``state_version``
as forged. A deliberate, expected failure is raised as ``ToolFailure``; anything else an
adapter raises after dispatch makes the call's outcome unknown.

``label`` is None only for the host's real adapters. Doubles and test adapters carry a
label that the registry shows in ``tools list`` and in the model's tool description.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from pydantic import BaseModel

from tidegate.tools.effects import Effects

if TYPE_CHECKING:
    from tidegate.exec.guard import Clearance
    from tidegate.exec.runner import SpawnHook
    from tidegate.exec.sessions import SessionSupervisor
    from tidegate.tools.catalog import ToolRegistry
    from tidegate.tools.context import ToolContext


class ToolFailure(Exception):
    """An expected failure the model can act on: no side effect happened."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = True,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.details = dict(details or {})


class AdapterResult(msgspec.Struct, frozen=True):
    tool: str
    """The canonical ID the adapter answered for; must equal the dispatched tool."""
    output: Mapping[str, Any] | BaseModel
    claims: Effects = msgspec.field(default_factory=Effects)
    state_changed: bool = False
    """The call advanced host state that is not a workspace write (activation, artifact,
    checkpoint, session progress)."""


class Dispatch(msgspec.Struct):
    """What an adapter gets besides its arguments."""

    call_id: str
    context: ToolContext
    registry: ToolRegistry
    sessions: SessionSupervisor
    scratch_dir: Path
    """A directory outside the workspace for spilled command output."""
    spawn_hook: SpawnHook | None = None
    """How the executor captures a command's effects in the child (``tools/capture.py``);
    a command adapter hands it to the runner."""
    clearance: Clearance | None = None
    """Who chose this call and who approved it (the executor's approval step): what a
    command adapter hands the runner's guard. None only outside the executor."""


class ToolAdapter(Protocol):
    tool_id: str
    label: str | None

    def run(self, args: Any, call: Dispatch) -> AdapterResult: ...
