"""Adapters: how each canonical tool is carried out on this host (one module per family).

``default_adapters`` picks the ones the context supports: artifact tools need an artifact
directory, task.checkpoint a task state path, user.ask a user; research, preview and
perception exist only as the shipped, labelled doubles and only when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolAdapter, ToolFailure

if TYPE_CHECKING:
    from tidegate.tools.context import ToolContext

__all__ = ["AdapterResult", "Dispatch", "ToolAdapter", "ToolFailure", "default_adapters"]


def default_adapters(context: ToolContext, doubles: bool = False) -> dict[str, ToolAdapter]:
    from tidegate.tools.adapters import (
        artifact,
        catalog,
        command,
        git,
        project,
        task,
        user,
        workspace,
    )
    from tidegate.tools.adapters import doubles as dbl

    found: list[ToolAdapter] = [
        *(factory() for factory in workspace.WORKSPACE_ADAPTERS),
        git.GitExec(),
        project.ProjectDetect(),
        catalog.CatalogSearch(),
    ]
    if _interpreter_available():
        found += [command.CommandRun(), command.CommandSession(), project.ProjectValidate()]
    if context.artifact_dir is not None:
        found += [artifact.ArtifactCreate(), artifact.ArtifactList(), artifact.ArtifactRead()]
    if context.task_state_path is not None:
        found.append(task.TaskCheckpoint())
    if context.user is not None:
        found.append(user.UserAsk())
    if doubles:
        found += [dbl.ResearchSearchDouble(), dbl.ResearchFetchDouble(), dbl.PreviewDouble()]
        if context.artifact_dir is not None:
            found.append(dbl.PerceptionDouble())
    return {adapter.tool_id: adapter for adapter in found}


def _interpreter_available() -> bool:
    """Command tools exist only with a published interpreter (never an implicit shell)."""
    from tidegate.errors import CapabilityMismatch
    from tidegate.exec.interpreter import host_interpreter

    try:
        host_interpreter()
    except CapabilityMismatch:
        return False
    return True
