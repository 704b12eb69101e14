"""What a caller asks for: a validated, immutable run request."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from tidegate.exec.guard import Clearance, Origin, least_trusted
from tidegate.records.checked import Checked, spec
from tidegate.records.modes import DEFAULT_VERIFY_TIMEOUT_S as DEFAULT_VERIFY_TIMEOUT_S
from tidegate.records.modes import Mode


class RunRequest(Checked):
    repo: Path
    mode: Mode = Mode.PATCH
    objective: str
    objective_base: Path = spec(default_factory=Path.cwd)
    """Directory that relative ``patch-file:`` paths in the objective are resolved against."""
    objective_source: str = "objective"
    """How errors in the objective name it (a file name, or 'objective')."""
    verify: str | None = None
    planner: str = "structured"
    max_attempts: int = spec(default=3, ge=1, le=20)
    verify_timeout_s: float = spec(default=DEFAULT_VERIFY_TIMEOUT_S, gt=0)
    keep_shadow: bool = False
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
    uncontained_approval: str | None = None
    """The user's approval to run VERIFY uncontained when bubblewrap is unusable, naming
    how it was given (``--allow-uncontained``); ``containment="none"`` is one too."""
    model: str | None = None
    """``openai:MODEL``, ``anthropic:MODEL`` or ``scripted:PATH``: a model plans and patches
    (``tidegate.planners.model``) instead of ``planner``."""
    max_cost_usd: float | None = spec(default=None, ge=0)
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
    max_steps: int | None = spec(default=None, ge=1)
    """Most model requests the run may make (all phases and attempts together)."""


def verify_clearance(request: RunRequest, configured_mode: str | None = None) -> Clearance:
    """What the guard is told about VERIFY's command: the least trusted of whoever chose
    the command and whoever wrote the code it runs (a model's or an agent's change is
    their code, whoever chose ``pytest``; a ``scripted:`` model replays the user's own
    file). The user's approval to run it uncontained: ``--containment none`` on the
    command line, or ``configured_mode`` ``none`` (the loaded configuration's, which only
    the user's own untracked ``.tidegate/config.toml`` can set: a repository may only
    tighten it, ``tidegate.config``)."""
    code = Origin.USER
    if request.agent is not None:
        code = Origin.AGENT
    elif request.model is not None and not request.model.startswith("scripted:"):
        code = Origin.MODEL
    origin = least_trusted(Origin(request.origin), code)
    approved = request.uncontained_approval
    if request.containment == "none":
        approved = "--containment none"
    elif request.containment is None and configured_mode == "none":
        approved = "containment.mode = none in .tidegate/config.toml"
    return Clearance(origin, approved)


def absolute_script(spec: str | None) -> str | None:
    """``scripted:PATH`` (a planner or model spec) with a relative PATH made absolute
    against the current directory; any other spec as given.

    Called where a spec is parsed, in the invoking directory, so that the path names the
    same file wherever the run later reads it: a gym's scratch repository, an objective
    file's directory, a ``resume`` from elsewhere."""
    if spec is None or not spec.startswith("scripted:"):
        return spec
    raw = spec.removeprefix("scripted:")
    path = Path(raw).expanduser()
    return spec if not raw or path.is_absolute() else f"scripted:{path.absolute()}"
