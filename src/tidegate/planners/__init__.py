"""Planners: who proposes the change. ``make_planner`` turns a ``--planner`` value into one."""

from __future__ import annotations

from pathlib import Path

from tidegate.errors import UsageError
from tidegate.planners.base import (
    ContentCheck,
    FileEdit,
    Finding,
    Plan,
    Planner,
    PlanRequest,
    Proposal,
    TreeView,
)
from tidegate.planners.scripted import ScriptedPlanner
from tidegate.planners.structured import StructuredPlanner


def make_planner(
    spec: str, objective: str, base_dir: Path, needs_edits: bool, source: str = "objective"
) -> Planner:
    """``structured`` (default, no model) or ``scripted:PATH`` (a replayed contract double)."""
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
        path = Path(spec.removeprefix("scripted:")).expanduser()
        return ScriptedPlanner.load(path if path.is_absolute() else base_dir / path)
    raise UsageError(f"unknown planner {spec!r}: use 'structured' or 'scripted:PATH'")


__all__ = [
    "ContentCheck",
    "FileEdit",
    "Finding",
    "Plan",
    "PlanRequest",
    "Planner",
    "Proposal",
    "ScriptedPlanner",
    "StructuredPlanner",
    "TreeView",
    "make_planner",
]
