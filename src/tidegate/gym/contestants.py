"""Contestants: who proposes the change in a scenario run, on the same guard.

``local-harness`` (the structured planner: the scenario's own edit blocks),
``scripted:NAME`` (a shipped or given scripted planner: a labelled contract double),
``openai:MODEL`` / ``anthropic:MODEL`` (a model through the agent loop), and
``agent:NAME`` (an agent CLI by its contract).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tidegate.errors import UsageError
from tidegate.exec.guard import Origin
from tidegate.flow.request import absolute_script
from tidegate.gym.scenarios import script_text


class Contestant(msgspec.Struct, frozen=True):
    spec: str
    planner: str = "structured"
    model: str | None = None
    agent: str | None = None
    agent_model: str | None = None

    @property
    def code_origin(self) -> Origin:
        """Who writes the code this contestant's runs execute: a real model or an agent
        CLI; a scripted model or planner replays a file the user chose."""
        if self.agent:
            return Origin.AGENT
        if self.model and not self.model.startswith("scripted:"):
            return Origin.MODEL
        return Origin.USER

    @property
    def base_type(self) -> str:
        if self.model:
            return self.model.split(":", 1)[0]
        if self.agent:
            return f"agent:{self.agent}"
        return "local-harness"


def absolute_contestant(spec: str | None) -> str | None:
    """``spec`` with a ``scripted:PATH`` made absolute against the current directory (a
    ``scripted:NAME`` of a shipped script, without a ``/``, as given). Called where the
    spec is parsed: the run itself happens in a scratch repository, perhaps in a worker."""
    kind, _, rest = (spec or "").partition(":")
    if kind != "scripted" or "/" not in rest:
        return spec
    return absolute_script(spec)


def contestant(spec: str, scratch: Path) -> Contestant:
    """Parse ``spec``; a shipped script is written into ``scratch`` for the planner."""
    if spec == "local-harness":
        return Contestant(spec)
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise UsageError(
            f"contestant {spec!r}: use local-harness, scripted:NAME|PATH, openai:MODEL, "
            "anthropic:MODEL or agent:NAME[:MODEL]"
        )
    if kind == "scripted":
        if "/" in rest:
            return Contestant(spec, planner=str(absolute_script(spec)))
        (scratch / rest).write_text(script_text(rest), encoding="utf-8")
        return Contestant(spec, planner=f"scripted:{scratch / rest}")
    if kind in ("openai", "anthropic"):
        return Contestant(spec, model=spec)
    if kind == "agent":
        name, _, model = rest.partition(":")
        return Contestant(spec, agent=name, agent_model=model or None)
    raise UsageError(f"contestant {spec!r}: unknown kind {kind!r}")
