#!/usr/bin/env python3
"""Benchmark: the agent loop's own cost per step, on a large repository.

    .venv/bin/python bench/agent_overhead.py [--repo DIR] [--files 50000 --ignored 20000]
                                              [--steps 200] [--json]

A step is one model response with one tool call, dispatched and answered. The model is the
shipped scripted double, which answers instantly, so what is measured is tidegate: from
the moment a response has been fully received to the moment the next request is sent --
guards, evidence, the executor (validation, policy, dispatch, host capture), the result
rendering, context accounting and (with the store) the durable trace and checkpoints.

The calls are those a model explores a repository with: reads of distinct files, every
fifth step a directory listing, every tenth a grep confined to one package directory.
Two runs over the same repository: without a store, and with the real run store
(SQLite, WAL, synchronous=FULL: one durable flush per tool call). ``tool`` is the
executor's own time for the call (the adapter's work), ``loop`` the rest.

``--repo DIR`` reuses (or creates) the synthetic repository at DIR; without it one is made
in a temporary directory with ``../shared/bench/make_repo.py`` (from the project root).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tidegate.agent import (
    AgentSession,
    GuardLimits,
    LoopSettings,
    SessionOptions,
    default_prompt_configuration,
    run_loop,
)
from tidegate.models.envelope import ModelRequest
from tidegate.models.events import Finished, ModelEvent
from tidegate.models.ports import ModelIdentity
from tidegate.models.scripted import Script, ScriptedModel
from tidegate.models.tokens import TokenCount
from tidegate.prompt import RunTask
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.port import WorkspacePort

ROOT = Path(__file__).resolve().parents[1]
MAKE_REPO = ROOT.parent / "shared" / "bench" / "make_repo.py"
"""The shared synthetic-repository builder: ``../shared/bench/`` next to the project."""


class TimedModel:
    """The scripted model, with the time each request starts and each response ends."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.starts: list[float] = []
        self.ends: list[float] = []

    @property
    def identity(self) -> ModelIdentity:
        return self.inner.identity

    def count_tokens(self, text: str) -> TokenCount:
        return self.inner.count_tokens(text)

    def close(self) -> None:
        self.inner.close()

    def stream(
        self, request: ModelRequest, cancel: threading.Event | None = None
    ) -> Iterator[ModelEvent]:
        self.starts.append(time.perf_counter())
        for event in self.inner.stream(request, cancel):
            if isinstance(event, Finished):
                self.ends.append(time.perf_counter())
            yield event


def module_paths(repo: Path, count: int) -> list[str]:
    paths = []
    for i in range(count):
        d = f"pkg/d{i // 10000:03d}/m{(i // 100) % 100:03d}"
        paths.append(f"{d}/mod{i:06d}.py")
    return [p for p in paths if (repo / p).is_file()]


def script(repo: Path, steps: int) -> Script:
    files = module_paths(repo, steps * 7)[::7][:steps]
    turns: list[dict[str, Any]] = []
    for n in range(steps):
        path = files[n % len(files)]
        folder = path.rsplit("/", 1)[0]
        if n % 10 == 9:
            call = {"name": "workspace_grep", "arguments": {"pattern": "return x", "path": folder}}
        elif n % 5 == 4:
            call = {"name": "workspace_list", "arguments": {"path": folder}}
        else:
            call = {"name": "workspace_read", "arguments": {"path": path}}
        turns.append({"tool_calls": [{"id": f"s{n}", **call}]})
    turns.append({"text": "done"})
    return Script.model_validate(
        {"model": "bench", "context_window": 200_000, "max_output_tokens": 4096, "turns": turns}
    )


def run_once(repo: Path, steps: int, state_root: Path | None) -> dict[str, Any]:
    model = TimedModel(ScriptedModel(script(repo, steps)))
    context = ToolContext(workspace=WorkspacePort(repo))
    recorder = None
    if state_root is not None:
        from tidegate.store import CheckpointKey, RunStore, StoreRecorder

        state_root.mkdir(parents=True, exist_ok=True, mode=0o700)
        store = RunStore(state_root / "runs.sqlite3", key=CheckpointKey.load_or_create(state_root))
        recorder = StoreRecorder(store, kind="agent")
        recorder.begin("bench-run", str(repo), "patch", {}, resumed=False)
    with ToolExecutor(context) as executor:
        session = AgentSession.start(
            model=model,
            executor=executor,
            config=default_prompt_configuration(write=True, commands=True),
            task=RunTask(task_id="bench", workspace_root=str(repo), goal="Explore the code."),
            options=SessionOptions(
                guard_limits=GuardLimits(turns_without_progress=10**6),
                settings=LoopSettings(),
                checkpoints=state_root is not None,
            ),
            recorder=recorder,
        )
        outcome = run_loop(session)
    assert outcome.status == "completed", outcome
    gaps = [(b - a) * 1000 for a, b in zip(model.ends, model.starts[1:], strict=False)]
    tools = [r.duration_us / 1000 for r in session.transcript.tools]
    loop_only = [g - t for g, t in zip(gaps, tools, strict=False)]
    return {
        "steps": len(gaps),
        "compactions": session.compactions,
        "step_ms": _stats(gaps),
        "tool_ms": _stats(tools),
        "loop_ms": _stats(loop_only),
    }


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered), 3),
        "p95": round(p95, 3),
        "max": round(ordered[-1], 3),
    }


def ensure_repo(path: Path | None, files: int, ignored: int, tmp: Path) -> Path:
    repo = path or tmp / "repo"
    if not (repo / ".git").exists():
        if not MAKE_REPO.is_file():
            sys.exit(f"agent_overhead: {MAKE_REPO}: no such file (give --repo DIR instead)")
        subprocess.run(
            [sys.executable, str(MAKE_REPO), str(repo), "--files", str(files), "--ignored",
             str(ignored)],
            check=True,
        )  # fmt: skip
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--ignored", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-agent-") as tmp:
        repo = ensure_repo(args.repo, args.files, args.ignored, Path(tmp))
        run_once(repo, 20, None)  # warm caches and imports
        results = {
            "memory": run_once(repo, args.steps, None),
            "store": run_once(repo, args.steps, Path(tmp) / "state"),
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"agent loop, {args.steps} steps on {repo} (model answers instantly)")
    for name, r in results.items():
        print(
            f"  {name:<6} step median {r['step_ms']['median']:7.2f} ms  p95 "
            f"{r['step_ms']['p95']:7.2f} ms | loop median {r['loop_ms']['median']:6.2f} ms  "
            f"p95 {r['loop_ms']['p95']:6.2f} ms | tool median {r['tool_ms']['median']:6.2f} ms"
            f" | compactions {r['compactions']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
