"""What a caller asks for: a validated, immutable run request."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta, field

from tidegate.records.checked import Checked
from tidegate.records.modes import DEFAULT_VERIFY_TIMEOUT_S, Mode


class RunRequest(Checked):
    repo: Path
    mode: Mode = Mode.PATCH
    objective: str
    objective_base: Path = field(default_factory=Path.cwd)
    """Directory that relative ``patch-file:`` paths in the objective are resolved against."""
    objective_source: str = "objective"
    """How errors in the objective name it (a file name, or 'objective')."""
    verify: str | None = None
    planner: str = "structured"
    max_attempts: Annotated[int, Meta(ge=1, le=20)] = 3
    verify_timeout_s: Annotated[float, Meta(gt=0)] = DEFAULT_VERIFY_TIMEOUT_S
    keep_shadow: bool = False
    hold: bool = False
    """Verify, then stop before APPLY_BACK: the run ends ``held`` with the verified change
    kept (``refs/tidegate/runs/<id>/result``, then ``refs/tidegate/keep``); ``tidegate
    apply`` lands it later."""
    rebase: Annotated[int, Meta(ge=0, le=10)] = 0
    """How many times a change that conflicts at APPLY_BACK (with what landed since T0) is
    re-applied on a fresh T0, verified again and landed (``--rebase``); 0: never."""
    warm_shadow: bool = False
    """Reuse (and keep) the repository's warm shadow instead of a fresh worktree."""
    network: bool = False
    """Let VERIFY's command reach the network (contained commands have none otherwise)."""
    containment: Literal["auto", "required", "none"] | None = None
    """How VERIFY's command is contained; None: the repository's configuration."""
    origin: Literal["user", "mcp-client", "repository", "benchmark"] = "user"
    """Who chose ``verify`` and the proposal when the caller hands them in: the user (the
    command line), an MCP client (``change_propose``), a repository's files (a ledger task),
    a benchmark instance (the gym). Anything but the user's runs uncontained only with
    approval (``tidegate.exec.guard``)."""
    notes: tuple[str, ...] = ()
    """What the caller chose on the run's behalf and must not be silent (a verify command
    taken from the configuration or detected): on the report's notes."""
    uncontained_approval: str | None = None
    """The user's approval to run VERIFY uncontained when bubblewrap is unusable, naming
    how it was given (``--allow-uncontained``); ``containment="none"`` is one too."""
    model: str | None = None
    """``openai:MODEL``, ``anthropic:MODEL`` or ``scripted:PATH``: a model plans and patches
    (``tidegate.planners.model``) instead of ``planner``."""
    max_cost_usd: Annotated[float, Meta(ge=0)] | None = None
    """Hard cap on the model's spending for the run: no request is sent that could cross it."""
    agent: str | None = None
    """An agent contract name (``codex``, ``aider``): that CLI proposes each attempt's change
    on an isolated copy of T0 (``tidegate.planners.agent``) instead of ``planner``."""
    agent_model: str | None = None
    """The model the agent is told to use (default: its contract's)."""
    sub_agents: tuple[str, ...] = ()
    """Offer the model ``agent_dispatch`` to these sub-agents: ``tidegate`` (a session of
    the same loop and model) and agent contract names; each runs isolated on its own copy
    (``tidegate.agent.dispatch``). Needs ``model``."""
    max_steps: Annotated[int, Meta(ge=1)] | None = None
    """Most model requests the run may make (all phases and attempts together)."""
