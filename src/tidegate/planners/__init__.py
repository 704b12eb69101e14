"""Planners: who proposes the change. ``make_planner`` turns a ``--planner`` value (or a
``--model`` spec) into one; ``planner_for`` does it for a whole ``RunRequest``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.errors import UsageError
from tidegate.planners.structured import StructuredPlanner
from tidegate.records.proposal import (
    ContentCheck,
    FileEdit,
    Finding,
    Plan,
    Planner,
    PlanRequest,
    Proposal,
    TreeView,
)

if TYPE_CHECKING:
    from tidegate.agent.sub_settings import DispatchSettings
    from tidegate.config.records import TidegateConfig
    from tidegate.records.request import RunRequest


def make_planner(
    spec: str,
    objective: str,
    base_dir: Path,
    needs_edits: bool,
    source: str = "objective",
    *,
    model: str | None = None,
    max_steps: int | None = None,
    max_cost_usd: float | None = None,
    verify: str | None = None,
    recorder: Any = None,
    env: Mapping[str, str] | None = None,
    model_settings: Mapping[str, object] | None = None,
) -> Planner:
    """``structured`` (default, no model) or ``scripted:PATH`` (a replayed contract double);
    with ``model`` (``openai:M``, ``anthropic:M``, ``scripted:PATH``) a model-driven
    planner under the given budget, whose loop events go to ``recorder``."""
    if model is not None:
        if spec != "structured":
            raise UsageError("give either --planner or --model, not both")
        return _model_planner(model, max_steps, max_cost_usd, verify, recorder, env, model_settings)
    if spec == "structured":
        planner = StructuredPlanner.from_text(objective, base_dir, source)
        if needs_edits and not planner.objective.has_edits:
            raise UsageError(
                "the structured planner needs edit blocks in the objective "
                "(edit-file:/create-file:/delete-file:/rename-file:/chmod-file:/patch-file:); "
                "see the README"
            )
        return planner
    if spec.startswith("scripted:"):
        from tidegate.planners.scripted import ScriptedPlanner  # a replayed double only

        path = Path(spec.removeprefix("scripted:")).expanduser()
        return ScriptedPlanner.load(path if path.is_absolute() else base_dir / path)
    raise UsageError(f"unknown planner {spec!r}: use 'structured' or 'scripted:PATH'")


def planner_for(
    request: RunRequest,
    *,
    recorder: Any = None,
    env: Mapping[str, str] | None = None,
    config: TidegateConfig | None = None,
) -> Planner:
    """The planner ``request`` asks for (its ``model`` and budget included). ``config`` is
    the configuration the run already read (else it is read from the repository)."""
    from tidegate.config import load_config
    from tidegate.records.modes import Mode
    from tidegate.workspace.repo import discover

    if request.agent is not None:
        if request.model or request.planner != "structured":
            raise UsageError("give one of --agent, --model and --planner")
        return agent_planner(request, recorder)
    if request.sub_agents and not request.model:
        raise UsageError("--sub-agent needs --model: only a model can hand a sub-task over")
    if request.model and config is None:
        config = load_config(discover(request.repo).root)
    settings = config.model if (config is not None and request.model) else None
    planner = make_planner(
        request.planner,
        request.objective,
        request.objective_base,
        needs_edits=request.mode is not Mode.REVIEW,
        source=request.objective_source,
        model=request.model,
        max_steps=request.max_steps,
        max_cost_usd=request.max_cost_usd,
        verify=request.verify,
        recorder=recorder,
        env=env,
        model_settings=settings,
    )
    if config is not None and hasattr(planner, "readable_secrets"):
        planner.readable_secrets = config.tools.readable_secrets
    if request.sub_agents and hasattr(planner, "dispatch"):
        planner.dispatch = dispatch_settings(request)
    return planner


def dispatch_settings(request: RunRequest) -> DispatchSettings:
    """``agent_dispatch`` for ``request.sub_agents``: ``tidegate`` and installed agent
    contracts, each CLI contained unless the user chose ``--containment none``."""
    from tidegate.agent.sub_settings import TIDEGATE
    from tidegate.agent.sub_settings import DispatchSettings as Settings
    from tidegate.agents.contracts import load_contract
    from tidegate.agents.launch import AgentEndpoint
    from tidegate.planners.agent import CliSubAgent

    clis = []
    for name in dict.fromkeys(request.sub_agents):
        if name == TIDEGATE:
            continue
        contract = load_contract(name)
        if contract.find_program() is None:
            raise UsageError(
                f"sub-agent {contract.name!r}: `{contract.program}` is not installed; install "
                f"it with: {contract.install}"
            )
        containment = request.containment or "required"
        clis.append(
            CliSubAgent(contract, AgentEndpoint.of(contract, None), containment=containment)
        )
    return Settings(clis=tuple(clis))


def agent_planner(request: RunRequest, recorder: Any = None) -> Planner:
    """The ``--agent`` planner, its contract loaded and validated, its program found."""
    from tidegate.agents.contracts import load_contract
    from tidegate.agents.launch import AgentEndpoint
    from tidegate.planners.agent import AgentPlanner

    assert request.agent is not None
    contract = load_contract(request.agent)
    if contract.find_program() is None:
        raise UsageError(
            f"agent {contract.name!r}: `{contract.program}` is not installed; install it with: "
            f"{contract.install}"
        )
    return AgentPlanner(
        contract,
        AgentEndpoint.of(contract, request.agent_model),
        # An agent runs arbitrary commands: contained unless the user explicitly says none.
        containment=request.containment or "required",
        recorder=recorder,
    )


def _model_planner(
    spec: str,
    max_steps: int | None,
    max_cost_usd: float | None,
    verify: str | None,
    recorder: Any,
    env: Mapping[str, str] | None,
    settings: Mapping[str, object] | None = None,
) -> Planner:
    from tidegate.agent.guards import Budget
    from tidegate.models import resolve_model, resolve_pricing
    from tidegate.planners.model import ModelPlanner

    model = resolve_model(spec, settings, env)
    pricing = resolve_pricing(model.identity, settings)
    if max_cost_usd is not None and pricing.price is None:
        model.close()
        raise UsageError(f"--max-cost needs a price for {model.identity.label}: {pricing.source}")
    return ModelPlanner(
        model,
        pricing=pricing,
        budget=Budget(max_steps=max_steps, hard_dollar_cap=max_cost_usd),
        recorder=recorder,
        validation_command=verify,
    )


__all__ = [
    "ContentCheck",
    "FileEdit",
    "Finding",
    "Plan",
    "PlanRequest",
    "Planner",
    "Proposal",
    "StructuredPlanner",
    "TreeView",
    "make_planner",
    "planner_for",
]
