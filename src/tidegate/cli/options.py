"""The options the engine commands share (typer's ``Annotated`` forms), in one place so that
``run``, ``review`` and ``debug`` spell and explain each the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from tidegate.records.modes import DEFAULT_VERIFY_TIMEOUT_S

RepoOpt = Annotated[
    Path, typer.Option("--repo", help="The repository (default: current directory).")
]
ObjectiveOpt = Annotated[
    str | None, typer.Option("--objective", help="What to do: edit blocks or prose.")
]
ObjectiveFileOpt = Annotated[
    Path | None,
    typer.Option("--objective-file", help="Read the objective from a file ('-': stdin)."),
]
VerifyOpt = Annotated[
    str | None,
    typer.Option(
        "--verify",
        help="Command run in the shadow via /bin/sh -c (default: [run] verify in "
        ".tidegate/config.toml, else one detected; 'none': no command).",
    ),
]
PlannerOpt = Annotated[
    str, typer.Option("--planner", help="'structured' (default) or 'scripted:PATH'.")
]
AttemptsOpt = Annotated[int, typer.Option("--max-attempts", min=1, max=20, help="Attempts (1-20).")]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--verify-timeout",
        min=1,
        help="Seconds before VERIFY is killed (default: [run] verify_timeout, else "
        f"{DEFAULT_VERIFY_TIMEOUT_S:g}).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only the final report as JSON.")]
NetworkOpt = Annotated[
    bool, typer.Option("--network", help="Let the verify command reach the network.")
]
ContainmentOpt = Annotated[
    Literal["auto", "required", "none"] | None,
    typer.Option(
        "--containment",
        help="Confine the verify command: auto (bubblewrap when it works), required, none "
        "(default: the repository's [containment] mode, else auto).",
    ),
]
KeepOpt = Annotated[bool, typer.Option("--keep-shadow", help="Keep the shadow worktree.")]
HoldOpt = Annotated[
    bool,
    typer.Option(
        "--hold",
        help="Verify, then stop before merging: the run ends held; `tidegate apply` lands it.",
    ),
]
RebaseOpt = Annotated[
    bool,
    typer.Option(
        "--rebase",
        help="When the change conflicts with what landed since the run began, re-apply it "
        "on a fresh snapshot, verify again and land it (at most 3 times).",
    ),
]
ReviewOpt = Annotated[
    bool,
    typer.Option(
        "--review",
        help="On a terminal: after VERIFY, show each file's diff and ask which to land "
        "(y/n/a/d/q); the rest stays held.",
    ),
]
StateRootOpt = Annotated[
    str | None,
    typer.Option(
        "--state-root",
        help="Where run records are kept (default: $TIDEGATE_STATE_ROOT or the user state dir).",
    ),
]
WarmOpt = Annotated[
    bool,
    typer.Option(
        "--warm-shadow",
        help="Reuse and keep a warm shadow from this repository's pool (faster; one per run "
        "at the same moment, at most 8).",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Let a model plan and patch: openai:MODEL, anthropic:MODEL or scripted:PATH.",
    ),
]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        help="An agent CLI proposes each attempt's change, contained, on a copy of T0: "
        "codex or aider.",
    ),
]
AgentModelOpt = Annotated[
    str | None, typer.Option("--agent-model", help="The model the agent uses (its default).")
]
SubAgentOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--sub-agent",
        help="Let the model hand sub-tasks to this sub-agent (repeatable): tidegate, codex "
        "or aider; each works isolated on its own copy. Needs --model.",
    ),
]
MaxCostOpt = Annotated[
    float | None,
    typer.Option("--max-cost", min=0, help="Hard cap in USD on the model's spending for the run."),
]
MaxStepsOpt = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, help="Most model requests the run may make."),
]
PathsOpt = Annotated[list[str] | None, typer.Option(help="A path of the change (repeatable).")]
