#!/usr/bin/env python3
"""Benchmark: what one ``agent_dispatch`` costs tidegate, on a large repository.

    .venv/bin/python bench/sub_agent.py [--repo DIR] [--files 50000 --ignored 20000]
                                        [--runs 5] [--json]

A parent session (the shipped scripted model, which answers instantly) dispatches one
sub-task to a tidegate sub-agent that reads one file and answers, from a read-only phase
(PLAN) and from a writable one (AGENT, where the sub-agent also edits that file). What is
measured is the dispatch call's own time: the checks, the sub-agent's isolated copy of
HEAD, its session, the capture of its change and the removal of the copy.

The floor is what git itself needs for one disposable checkout of the same commit on the
same machine in the same run: ``git worktree add --detach`` + ``git worktree remove
--force`` (what a shadow worktree costs). The ratio is dispatch / floor.

``--repo DIR`` uses the repository at DIR as is, read-only apart from git refreshing the
mtimes of objects the capture meets again (so copy a shared one first: ``cp -a``);
without it one is made in a temporary directory with ``../shared/bench/make_repo.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tidegate.agent import (
    AgentSession,
    DispatchSettings,
    GuardLimits,
    SessionOptions,
    SubAgentDispatch,
    default_prompt_configuration,
    run_loop,
)
from tidegate.models.scripted import Script, ScriptedModel
from tidegate.prompt import RunTask
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.port import WorkspacePort

ROOT = Path(__file__).resolve().parents[1]
MAKE_REPO = ROOT.parent / "shared" / "bench" / "make_repo.py"


def scripted(turns: list[dict[str, Any]]) -> ScriptedModel:
    return ScriptedModel(
        Script.model_validate({"model": "bench", "context_window": 200_000, "turns": turns})
    )


def one_file(repo: Path) -> str:
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "pkg"], capture_output=True, text=True, check=True
    )
    return next(p for p in listed.stdout.splitlines() if p.endswith(".py"))


def dispatch_once(repo: Path, phase: str, path: str) -> float:
    """Seconds the dispatch call took."""
    sub_turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "r1", "name": "workspace_read", "arguments": {"path": path}}]}
    ]
    if phase == "AGENT":
        sha = "sha256:" + hashlib.sha256((repo / path).read_bytes()).hexdigest()
        sub_turns.append(
            {
                "tool_calls": [
                    {
                        "id": "w1",
                        "name": "workspace_write",
                        "arguments": {"path": path, "content": "changed\n", "expect": sha},
                    }
                ]
            }
        )
    sub_turns.append({"text": "done"})
    parent_turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "d1", "name": "agent_dispatch", "arguments": {"task": "look"}}]},
        {"text": "ok"},
    ]
    tool = SubAgentDispatch(DispatchSettings(model=scripted(sub_turns)))
    with ToolExecutor(ToolContext(workspace=WorkspacePort(repo), network="denied")) as ex:
        session = AgentSession.start(
            model=scripted(parent_turns),
            executor=ex,
            config=default_prompt_configuration(write=True, commands=True),
            task=RunTask(task_id="bench", workspace_root=str(repo), goal="Delegate."),
            options=SessionOptions(phase=phase, guard_limits=GuardLimits(), checkpoints=False),
            session_tools=tool.tools(),
        )
        outcome = run_loop(session)
    assert outcome.status == "completed", outcome
    record = next(t for t in session.transcript.tools if t.call_id == "d1")
    assert record.ok, record.summary
    return record.duration_us / 1e6


def floor_once(repo: Path) -> float:
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-floor-") as tmp:
        target = Path(tmp) / "wt"
        started = time.perf_counter()
        git = ["git", "-C", str(repo)]
        subprocess.run([*git, "worktree", "add", "-q", "--detach", str(target), "HEAD"], check=True)
        subprocess.run([*git, "worktree", "remove", "--force", str(target)], check=True)
        return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--ignored", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-subagent-") as tmp:
        repo = opts.repo
        if repo is None:
            repo = Path(tmp) / "repo"
            subprocess.run(
                [sys.executable, str(MAKE_REPO), str(repo), "--files", str(opts.files),
                 "--ignored", str(opts.ignored)],
                check=True, capture_output=True,
            )  # fmt: skip
        path = one_file(repo)
        rows: dict[str, list[float]] = {"floor": [], "PLAN": [], "AGENT": []}
        for _ in range(opts.runs):  # interleaved, so load drifts hit every column alike
            rows["floor"].append(floor_once(repo))
            rows["PLAN"].append(dispatch_once(repo, "PLAN", path))
            rows["AGENT"].append(dispatch_once(repo, "AGENT", path))
    medians = {k: statistics.median(v) for k, v in rows.items()}
    result = {
        "runs": opts.runs,
        "median_s": medians,
        "ratio_plan": medians["PLAN"] / medians["floor"],
        "ratio_agent": medians["AGENT"] / medians["floor"],
    }
    if opts.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"git worktree add + remove (floor): {medians['floor']:.3f} s")
        print(f"dispatch from PLAN (read-only):    {medians['PLAN']:.3f} s "
              f"({result['ratio_plan']:.2f}x)")  # fmt: skip
        print(f"dispatch from AGENT (one write):   {medians['AGENT']:.3f} s "
              f"({result['ratio_agent']:.2f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
