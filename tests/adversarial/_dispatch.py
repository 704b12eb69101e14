"""Shared by the agent_dispatch tests: a writable host over a real repository, a parent
session offering the dispatch tool, the parent's trace, and what must not change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conformance._agent import CHECK, Recorded, call, configuration, task, turn
from tests.conftest import Repo
from tidegate.agent import AgentSession, Budget, GuardLimits, LoopOutcome, SessionOptions, run_loop
from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.agent.sub_settings import DispatchSettings
from tidegate.models.scripted import ScriptedModel
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile, TaskMode
from tidegate.workspace.port import WorkspacePort

EDITING = (
    "workspace.read",
    "workspace.list",
    "workspace.glob",
    "workspace.grep",
    "workspace.write",
    "workspace.edit",
    "git.exec",
    "project.detect",
    "task.checkpoint",
)
"""A writable sub-agent profile without command tools: on a machine without bubblewrap the
balanced profile asks before any command tool, and these tests are not about approval."""


def editing(**settings: Any) -> DispatchSettings:
    return DispatchSettings(profile=EDITING, **settings)


def dirty(repo: Repo) -> Repo:
    repo.write("README.md", "# calc\nstaged line\n")
    repo.git("add", "README.md")
    repo.write("README.md", "# calc\nstaged line\nunstaged line\n")
    repo.write("notes.txt", "untracked notes\n")
    return repo


def git_dir_state(repo: Repo) -> dict[str, tuple[int, int]]:
    """Every entry under ``.git`` with its size and mtime (worktrees, logs, config, refs),
    objects with their size only: capturing a change through ``alternates`` makes git
    freshen (touch) the user's objects it would have written again; their bytes stay."""
    git_dir = repo.root / ".git"
    state = {}
    for path in git_dir.rglob("*"):
        rel = str(path.relative_to(git_dir))
        info = path.lstat()
        state[rel] = (info.st_size, 0 if rel.startswith("objects") else info.st_mtime_ns)
    return state


def snapshot(repo: Repo) -> tuple[Any, ...]:
    """The main work tree (with mtimes), its index bytes, its whole git dir, refs, stash."""
    return (
        repo.tree_state(with_mtimes=True),
        git_dir_state(repo),
        repo.index_bytes(),
        repo.git("for-each-ref"),
        repo.git("stash", "list"),
        repo.git("rev-parse", "HEAD"),
    )


def host(root: Path, tmp: Path, *, network: str = "denied") -> ToolExecutor:
    """A writable host (patch task mode, writes allowed): whatever keeps a sub-agent
    read-only in a read-only phase is the dispatch, not this executor."""
    context = ToolContext(
        workspace=WorkspacePort(root),
        mode=TaskMode.PATCH,
        approval_profile=ApprovalProfile.BALANCED,
        network=network,  # type: ignore[arg-type]
        validation_command=CHECK,
        task_state_path=tmp / "parent-plan.json",
    )
    return ToolExecutor(context)


def parent(
    model: ScriptedModel,
    ex: ToolExecutor,
    tool: SubAgentDispatch,
    *,
    phase: str,
    recorder: Any = None,
    budget: Budget | None = None,
) -> AgentSession:
    return AgentSession.start(
        model=model,
        executor=ex,
        config=configuration(ex),
        task=task(ex.context.root),
        options=SessionOptions(
            phase=phase,
            guard_limits=GuardLimits(budget=budget or Budget()),
            checkpoints=False,
        ),
        recorder=recorder,
        session_tools=tool.tools(),
    )


def events(recorded: Recorded, kind: str | None = None) -> list[tuple[str, dict[str, Any], str]]:
    rows = recorded.store.events(recorded.run_id)
    found = [(e.kind, json.loads(e.payload), e.phase or "") for e in rows]
    return [f for f in found if kind is None or f[0] == kind]


def dispatch_turn(call_id: str = "d1", **arguments: Any) -> dict[str, Any]:
    arguments.setdefault("task", "Fix add() in calc.py so that add(2, 3) == 5.")
    return turn(call("agent_dispatch", call_id, **arguments))


def recorded_run(
    root: Path,
    tmp: Path,
    model: ScriptedModel,
    tool: SubAgentDispatch,
    *,
    phase: str,
    network: str = "denied",
) -> tuple[Recorded, AgentSession, LoopOutcome]:
    """The parent's whole loop on a writable host, its events in a real run store."""
    recorded = Recorded(root)
    with host(root, tmp, network=network) as ex:
        session = parent(model, ex, tool, phase=phase, recorder=recorded.recorder)
        outcome = run_loop(session)
        recorded.finish(session, outcome)
    return recorded, session, outcome
