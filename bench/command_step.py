#!/usr/bin/env python3
"""Benchmark: one agent step that runs one command, tidegate beside its peers, one run.

    .venv/bin/python bench/command_step.py [--repo DIR] [--files 50000 --ignored 20000]
                                           [--steps 40] [--rounds 3] [--msa-venv DIR]
                                           [--fallback-steps 3] [--agents 1] [--json]

A step is one model response with one ``cat FILE`` command, executed and answered; the
model is scripted and answers instantly, so what is measured is the agent and its host.
The same workload, on the same synthetic repository, in the same run:

* ``bare sh``: ``subprocess.run(["/bin/sh", "-c", "cat FILE"])`` -- the floor;
* ``bare bwrap``: the same under the bubblewrap command line tidegate builds, set up per
  command as tidegate does (``containment.launch``: its private TMPDIR and HOME); the
  containment's own start cost is this minus ``bare sh``;
* ``mini-swe-agent``: ``DefaultAgent.step()`` with its ``DeterministicModel`` and
  ``LocalEnvironment`` (no effect capture), in its own venv (``--msa-venv``; created with
  ``python -m venv`` and ``pip install mini-swe-agent`` when missing; the column is skipped,
  with the reason, when that fails);
* ``tidegate``: the agent loop with the scripted model calling ``command_run``, from the
  end of one response to the start of the next request (guards, approval, the command,
  host-attested effect capture, result rendering) -- uncontained (``containment=none``,
  approved by grants) and contained (bubblewrap, verified by its probe);
* ``tidegate over MCP``: the same ``command_run`` call sent by the MCP client SDK
  (``mcp`` package) to a ``tidegate mcp serve`` subprocess on stdio, timed from the
  client's ``call_tool`` to its answer (JSON-RPC both ways, the executor, the command, the
  effect capture, the result) -- contained (``--containment auto``) and, when the server
  runs it, uncontained (``--containment none``: under the ``balanced`` profile an
  uncontained command comes back as a pending approval nobody can answer over stdio, and
  the column is skipped with that reason). One server per round; its first call is a
  warm-up;
* ``tidegate fallback``: uncontained with ``TIDEGATE_EFFECT_CAPTURE=inventory`` (the exact
  full inventory), only ``--fallback-steps`` steps since each walks the repository twice.

Columns are measured in ``--rounds`` interleaved rounds (the machine may be shared);
medians and p95 are over all steps of all rounds. Ratios are against mini-swe-agent's
median. The goal of issue #26: over MCP, contained, at most 2 x (mini-swe-agent's step +
the containment's start cost).

``--agents N`` (N > 1): N agents at once on the same repository. Every column runs N
copies concurrently -- N ``bare sh`` and N ``bare bwrap`` loops (threads, each waiting
on its own processes), N mini-swe-agent drivers (processes), N ``tidegate mcp serve``
servers (processes, one client session each, one state root shared by all) -- each
copy reading its own files; the in-process loop columns and the fallback are not run.
Medians and p95 are over every step of every agent, so the goal compares tidegate with
its peers under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_overhead import TimedModel, ensure_repo, module_paths
from msa_peer import msa, msa_python

from tidegate.agent import (
    AgentSession,
    GuardLimits,
    LoopSettings,
    SessionOptions,
    default_prompt_configuration,
    run_loop,
)
from tidegate.exec.containment import launch, policy_for, probe
from tidegate.exec.guard import Clearance
from tidegate.models.scripted import Script, ScriptedModel
from tidegate.prompt import RunTask
from tidegate.tools.context import ToolContext
from tidegate.tools.effects import sha256_json
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.schemas.command import RunInput
from tidegate.workspace.port import WorkspacePort

MCP_COLUMNS = {"tidegate over MCP, contained": "auto", "tidegate over MCP, uncontained": "none"}


def command_files(repo: Path, steps: int) -> list[str]:
    return module_paths(repo, steps * 11)[::11][:steps]


def bare(repo: Path, files: list[str], prefix: list[str], env: dict[str, str]) -> list[float]:
    times = []
    child_env = {**os.environ, **env} if env else None
    for path in files:
        start = time.perf_counter()
        done = subprocess.run(
            [*prefix, "/bin/sh", "-c", f"cat {path}"],
            cwd=repo,
            env=child_env,
            capture_output=True,
            check=False,
            start_new_session=True,
        )
        times.append((time.perf_counter() - start) * 1000)
        assert done.returncode == 0, done.stderr
    return times


def bare_bwrap(repo: Path, files: list[str]) -> list[float]:
    """``bare`` under tidegate's bubblewrap command line (its probe passed)."""
    policy = policy_for("required", network=False, writable=(repo.resolve(),))
    times = []
    for path in files:  # per command, as tidegate does: its private TMPDIR/HOME included
        start = time.perf_counter()
        with launch(policy, repo, clearance=Clearance.user()) as sandbox:
            bare(repo, [path], sandbox.prefix, sandbox.env)
        times.append((time.perf_counter() - start) * 1000)
    return times


def tidegate(repo: Path, files: list[str], containment: str) -> list[float]:
    commands = [f"cat {f}" for f in files]
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"id": f"s{n}", "name": "command_run", "arguments": {"command": c}}]}
        for n, c in enumerate(commands)
    ]
    turns.append({"text": "done"})
    script = Script.model_validate(
        {"model": "bench", "context_window": 1_000_000, "max_output_tokens": 4096, "turns": turns}
    )
    root = str(WorkspacePort(repo).root)
    grants = frozenset(
        "apr_"
        + sha256_json(
            {
                "tool": "command.run",
                "arguments": RunInput(command=c).model_dump(mode="json"),
                "workspace": root,
            }
        )[7:31]
        for c in commands
    )
    context = ToolContext(
        workspace=WorkspacePort(repo),
        containment=containment,  # type: ignore[arg-type]
        grants=grants,
    )
    model = TimedModel(ScriptedModel(script))
    with ToolExecutor(context) as executor:
        session = AgentSession.start(
            model=model,
            executor=executor,
            config=default_prompt_configuration(write=True, commands=True),
            task=RunTask(task_id="bench", workspace_root=str(repo), goal="Read files."),
            options=SessionOptions(
                guard_limits=GuardLimits(turns_without_progress=10**6),
                settings=LoopSettings(),
                checkpoints=False,
            ),
        )
        outcome = run_loop(session)
        failed = [r for r in session.transcript.tools if not r.ok]
        if outcome.status != "completed" or failed:
            raise RuntimeError(f"tidegate loop: {outcome.status}, failed calls: {failed[:1]}")
        if containment != "none" and executor.policy_context.containment_verified is not True:
            raise RuntimeError("contained column without verified containment")
    gaps = [(b - a) * 1000 for a, b in zip(model.ends, model.starts[1:], strict=False)]
    return gaps[1:]  # the first step warms the probe and imports


def tidegate_mcp(
    repo: Path, lists: list[list[str]], containment: str, state: Path
) -> list[float] | str:
    """Per-call times of ``command_run`` through ``tidegate mcp serve`` (one server per
    file list, all at once), or why a server did not run the command (its first answer's
    status and message)."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tidegate", "mcp", "serve", "--workspace", str(repo),
              "--containment", containment, "--state-root", str(state)],
        env={k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")},
    )  # fmt: skip
    times: list[float] = []
    refused: list[str] = []

    async def agent(files: list[str], ready: anyio.Event, go: anyio.Event) -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(server, errlog=errlog) as streams,
                ClientSession(*streams) as session,
            ):
                await session.initialize()
                for n, path in enumerate([files[0], *files]):  # call 0 warms probe, imports
                    if n == 1:
                        ready.set()
                        await go.wait()  # every server warm before the timed calls
                    start = time.perf_counter()
                    result = await session.call_tool("command_run", {"command": f"cat {path}"})
                    if n:
                        times.append((time.perf_counter() - start) * 1000)
                    data = result.structured_content or {}
                    if result.is_error or data.get("ok") is not True:
                        why = (data.get("error") or {}).get("message") or data.get("status")
                        refused.append(f"the server answered {data.get('status')!r}: {why}")
                        ready.set()
                        return

    async def agents() -> None:
        go = anyio.Event()
        readies = [anyio.Event() for _ in lists]
        async with anyio.create_task_group() as group:
            for files, ready in zip(lists, readies, strict=True):
                group.start_soon(agent, files, ready, go)
            for ready in readies:
                await ready.wait()
            go.set()

    anyio.run(agents)
    return refused[0] if refused else times


def together(work: Any, lists: list[list[str]]) -> list[float]:
    """``work(files)`` for each list at once, in threads (each waits on its own child
    processes); all their times."""
    from concurrent.futures import ThreadPoolExecutor

    if len(lists) == 1:
        return list(work(lists[0]))
    with ThreadPoolExecutor(max_workers=len(lists)) as pool:
        return [t for times in pool.map(work, lists) for t in times]


def med(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--ignored", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--msa-venv", type=Path, default=Path("/tmp/msa"))
    parser.add_argument("--fallback-steps", type=int, default=3)
    parser.add_argument("--agents", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidegate-bench-step-") as tmp:
        repo = ensure_repo(args.repo, args.files, args.ignored, Path(tmp)).resolve()
        columns, skipped, version = measure(repo, args, Path(tmp))
    medians = {name: med(values) for name, values in columns.items()}
    report = summary(medians, skipped, version)
    report["p95_ms"] = {name: p95(values) for name, values in columns.items()}
    report["agents"] = args.agents
    report["repo"] = {"path": str(repo), "files": args.files, "ignored": args.ignored}
    report["steps"] = {name: len(values) for name, values in columns.items()}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"one command step (cat FILE), {args.rounds} rounds x {args.steps} steps"
        f" x {args.agents} agent(s) at once, on {repo}"
    )
    for name, value in medians.items():
        ratio = report["ratio_to_msa"].get(name)
        shown = f"  {ratio:6.2f}x mini-swe-agent" if ratio is not None else ""
        tail = report["p95_ms"][name]
        print(f"  {name:<30} median {value:9.2f} ms  p95 {tail:9.2f} ms{shown}")
    for name, why in skipped.items():
        print(f"  {name:<30} SKIPPED: {why}")
    for line in report["targets"]:
        print("  " + line)
    return 0


def measure(
    repo: Path, args: argparse.Namespace, tmp: Path
) -> tuple[dict[str, list[float]], dict[str, str], str]:
    """Every column's step times (``--agents`` copies of each at once), what was skipped
    and why, mini-swe-agent's version."""
    columns: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}
    agents = max(1, args.agents)
    every = command_files(repo, args.steps * agents)
    lists = [every[n::agents] for n in range(agents)]
    files = lists[0]
    python, why = msa_python(args.msa_venv)
    if python is None:
        skipped["mini-swe-agent"] = why
    found = probe()
    if not found.verified:
        skipped["bare bwrap"] = found.reason
    version: list[str] = [""]

    def peer(files: list[str]) -> list[float]:
        assert python is not None
        times, version[0] = msa(python, repo, files)
        return times

    def add(name: str, got: list[float] | str) -> None:
        if isinstance(got, str):
            skipped[name] = got
        else:
            columns.setdefault(name, []).extend(got)

    for _ in range(args.rounds):
        add("bare sh", together(lambda f: bare(repo, f, [], {}), lists))
        if "bare bwrap" not in skipped:
            add("bare bwrap", together(lambda f: bare_bwrap(repo, f), lists))
        if python is not None:
            add("mini-swe-agent", together(peer, lists))
        if agents == 1:
            add("tidegate uncontained", tidegate(repo, files, "none"))
            if "bare bwrap" not in skipped:
                add("tidegate contained", tidegate(repo, files, "auto"))
        for name, containment in MCP_COLUMNS.items():
            if name in skipped or (containment == "auto" and "bare bwrap" in skipped):
                continue
            add(name, tidegate_mcp(repo, lists, containment, tmp / "state"))
    if args.fallback_steps and agents == 1:
        os.environ["TIDEGATE_EFFECT_CAPTURE"] = "inventory"
        try:
            picked = files[: args.fallback_steps + 1]
            columns["tidegate fallback (inventory)"] = tidegate(repo, picked, "none")
        finally:
            del os.environ["TIDEGATE_EFFECT_CAPTURE"]
    return columns, skipped, version[0]


def summary(medians: dict[str, float], skipped: dict[str, str], version: str) -> dict[str, Any]:
    peer = medians.get("mini-swe-agent")
    ratios = {n: round(v / peer, 2) for n, v in medians.items()} if peer else {}
    targets: list[str] = []
    start_cost = None
    if "bare bwrap" in medians:
        start_cost = round(medians["bare bwrap"] - medians["bare sh"], 2)
        targets.append(f"containment start cost (bare bwrap - bare sh): {start_cost:.2f} ms")
    if peer and "tidegate uncontained" in medians:
        unc = medians["tidegate uncontained"]
        targets.append(
            f"uncontained: {unc:.2f} ms vs target 2 x {peer:.2f} = {2 * peer:.2f} ms: "
            + ("met" if unc <= 2 * peer else "NOT met")
        )
        if start_cost is not None and "tidegate contained" in medians:
            con = medians["tidegate contained"]
            bound = 2 * peer + start_cost
            targets.append(
                f"contained: {con:.2f} ms vs target 2 x {peer:.2f} + {start_cost:.2f} = "
                f"{bound:.2f} ms: " + ("met" if con <= bound else "NOT met")
            )
    mcp = medians.get("tidegate over MCP, contained")
    if mcp is not None and peer and start_cost is not None:
        goal = 2 * (peer + start_cost)
        targets.append(
            f"issue #26 goal, over MCP contained: {mcp:.2f} ms vs 2 x ({peer:.2f} + "
            f"{start_cost:.2f}) = {goal:.2f} ms: " + ("met" if mcp <= goal else "NOT met")
        )
    if mcp is not None and "tidegate contained" in medians:
        transport = round(mcp - medians["tidegate contained"], 2)
        targets.append(
            f"MCP's own cost (over MCP - in the loop, both contained): {transport:.2f} ms"
        )
    return {
        "medians_ms": medians,
        "ratio_to_msa": ratios,
        "skipped": skipped,
        "msa_version": version,
        "containment_start_ms": start_cost,
        "targets": targets,
    }


if __name__ == "__main__":
    sys.exit(main())
