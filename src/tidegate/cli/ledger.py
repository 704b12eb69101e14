"""``tidegate ledger``: the task ledger commands. Thin: parse, call tidegate.ledger, print.

Exit codes: 0 done; 1 the command ended somewhere a person must look (ship refused, an item
blocked by a gate or its retry budget, a run that failed, a failing --run check, ``next``
at a blocker); 2 usage error, malformed file (``file:line: ...``) or illegal transition;
4 another ledger command holds the task directory.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tidegate.cli.ledger_text import ledger_console, print_runs, print_status
from tidegate.cli.output import dump_json
from tidegate.errors import UsageError
from tidegate.records.modes import DEFAULT_VERIFY_TIMEOUT_S

if TYPE_CHECKING:
    from enum import Enum

    from tidegate.ledger.model import FailureType, Route
    from tidegate.ledger.operations import Outcome

# The ledger's operations and engine are imported by the commands that use them, so that
# starting `tidegate run` does not pay for them.

ledger_app = typer.Typer(
    name="ledger",
    help="Resumable task loops kept in markdown files: checkpoint, ledger, notes, plan, review.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

TaskArg = Annotated[Path, typer.Argument(help="The task directory.", show_default=False)]
ItemArg = Annotated[str, typer.Argument(help="The item ID, e.g. T1.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON only.")]
ReasonOpt = Annotated[str, typer.Option("--reason", help="Why (recorded in the files).")]
FailureOpt = Annotated[
    str | None,
    typer.Option(
        "--failure",
        help="verification_failed, review_blocked, scope_drift, needs_user_decision or agent_error.",
        show_default=False,
    ),
]


def _choice(enum: type[Enum], value: str, option: str) -> Any:
    """An option value as the ledger's enum; a bad one is a usage error naming the choices."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in enum)
        raise UsageError(f"{option}: {value!r} is not one of {choices}") from None


def _route(value: str, option: str) -> Route:
    from tidegate.ledger.model import Route

    route: Route = _choice(Route, value, option)
    return route


def _failure(value: str | None) -> FailureType | None:
    from tidegate.ledger.model import FailureType

    if value is None:
        return None
    failure: FailureType = _choice(FailureType, value, "--failure")
    return failure


def _finish(outcome: Outcome) -> None:
    out = ledger_console()
    for line in outcome.lines:
        out.print(line)
    raise typer.Exit(outcome.exit_code)


@ledger_app.command()
def init(
    task_dir: TaskArg,
    route: Annotated[str, typer.Option("--route", help="small, medium, high or epic.")],
    brief: Annotated[str, typer.Option("--brief", help="What the task is.")],
    item: Annotated[
        list[str] | None, typer.Option("--item", help="An item title (repeatable).")
    ] = None,
) -> None:
    """Create the files the route requires, with one ledger item per --item (or the brief)."""
    from tidegate.ledger import operations as ops

    _finish(ops.init(task_dir, _route(route, "--route"), brief, item or []))


@ledger_app.command()
def status(task_dir: TaskArg, as_json: JsonOpt = False) -> None:
    """Items, stages, budgets and the resume pointer."""
    from tidegate.ledger import operations as ops
    from tidegate.ledger.operations import status_view

    state, action = ops.load(task_dir)
    if as_json:
        sys.stdout.write(dump_json(status_view(state, action)) + "\n")
        return
    print_status(state, action)


@ledger_app.command(name="next")
def next_(task_dir: TaskArg, as_json: JsonOpt = False) -> None:
    """The next action by the minimal runtime algorithm (exit 1 when a person must act)."""
    from tidegate.ledger import operations as ops

    _, action = ops.load(task_dir)
    if as_json:
        payload = {"kind": action.kind, "item": action.item, "text": action.text}
        sys.stdout.write(dump_json(payload, indent=None) + "\n")
    else:
        ledger_console().print(action.text)
    raise typer.Exit(1 if action.kind in ("blocked", "decide", "promote") else 0)


@ledger_app.command()
def claim(
    task_dir: TaskArg,
    item: ItemArg,
    assignee: Annotated[str | None, typer.Option("--as", help="Who claims it ($USER).")] = None,
) -> None:
    """pending -> in_progress. A human gate blocks for a person's decision instead."""
    from tidegate.ledger import operations as ops

    _finish(ops.claim(task_dir, item, assignee))


@ledger_app.command()
def record(
    task_dir: TaskArg,
    item: ItemArg,
    evidence: Annotated[
        list[str] | None,
        typer.Option("--evidence", help="command:/artifact:/ci:/review:/file: ref (repeatable)."),
    ] = None,
    run: Annotated[
        str | None, typer.Option("--run", help="Run this check via /bin/sh -c and record it.")
    ] = None,
    cwd: Annotated[
        Path | None, typer.Option("--cwd", help="Where paths resolve and --run runs.")
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds for --run.")] = (
        DEFAULT_VERIFY_TIMEOUT_S
    ),
) -> None:
    """Record evidence for an item (rejected kinds are refused)."""
    from tidegate.ledger import operations as ops

    _finish(ops.record(task_dir, item, evidence or [], run, cwd, timeout))


@ledger_app.command()
def done(task_dir: TaskArg, item: ItemArg) -> None:
    """in_progress -> done, if the attempt has accepted passing evidence."""
    from tidegate.ledger import operations as ops

    _finish(ops.done(task_dir, item))


@ledger_app.command()
def requeue(
    task_dir: TaskArg,
    item: ItemArg,
    reason: ReasonOpt,
    failure: FailureOpt = None,
    decision: Annotated[
        str | None, typer.Option("--decision", help="A person's decision (gates, scope).")
    ] = None,
) -> None:
    """Back to pending: a retry (in_progress/done) or a resolved blocker (blocked)."""
    from tidegate.ledger import operations as ops

    _finish(ops.requeue(task_dir, item, reason, _failure(failure), decision))


@ledger_app.command()
def block(task_dir: TaskArg, item: ItemArg, reason: ReasonOpt, failure: FailureOpt = None) -> None:
    """-> blocked (default failure: needs_user_decision; the reason is the decision needed)."""
    from tidegate.ledger import operations as ops

    _finish(ops.block(task_dir, item, reason, _failure(failure)))


@ledger_app.command()
def discard(
    task_dir: TaskArg,
    item: ItemArg,
    decision: Annotated[str, typer.Option("--decision", help="Why it leaves the scope.")],
) -> None:
    """-> discarded, by an explicit decision (recorded as a D-N line)."""
    from tidegate.ledger import operations as ops

    _finish(ops.discard(task_dir, item, decision))


@ledger_app.command()
def route(
    task_dir: TaskArg,
    to: Annotated[str, typer.Option("--to", help="small, medium, high or epic.")],
    reason: ReasonOpt,
) -> None:
    """Promote or demote the route (a route_change decision line; new files as needed)."""
    from tidegate.ledger import operations as ops

    _finish(ops.route(task_dir, _route(to, "--to"), reason))


@ledger_app.command()
def ship(
    task_dir: TaskArg,
    milestone: Annotated[
        str | None, typer.Option("--milestone", help="Epic: the milestone to ship.")
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="Recorded with the decision.")] = "",
) -> None:
    """Ship, or name everything that is missing (exit 1)."""
    from tidegate.ledger import operations as ops

    _finish(ops.ship(task_dir, milestone, reason))


# `ledger run`'s options
_RepoOpt = Annotated[Path, typer.Option("--repo", help="The repository (default: .).")]
_PlannerOpt = Annotated[
    str, typer.Option("--planner", help="'structured' (default) or 'scripted:PATH'.")
]
_ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model", help="A model plans and patches: openai:M, anthropic:M or scripted:PATH."
    ),
]
_AgentOpt = Annotated[
    str | None, typer.Option("--agent", help="An agent CLI works the item: codex or aider.")
]
_AgentModelOpt = Annotated[
    str | None, typer.Option("--agent-model", help="The model the agent uses.")
]
_MaxCostOpt = Annotated[
    float | None, typer.Option("--max-cost", min=0, help="Hard cap in USD per item run.")
]
_MaxStepsOpt = Annotated[
    int | None, typer.Option("--max-steps", min=1, help="Most model requests per item run.")
]
_VerifyOpt = Annotated[
    str | None, typer.Option("--verify", help="Overrides the item's 'Verify:' line.")
]
_VerifyTimeoutOpt = Annotated[float, typer.Option("--verify-timeout", min=1)]
_AllOpt = Annotated[bool, typer.Option("--all", help="Keep going while items succeed.")]
_StateRootOpt = Annotated[
    str | None,
    typer.Option("--state-root", help="Where the item runs are recorded (as for `run`)."),
]
_AllowUncontainedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-uncontained",
        help="Where bubblewrap is unusable, run a plan's 'Verify:' command uncontained "
        "(refused otherwise).",
    ),
]


@ledger_app.command(name="run")
def run_(
    task_dir: TaskArg,
    repo: _RepoOpt = Path("."),
    planner: _PlannerOpt = "structured",
    model: _ModelOpt = None,
    agent: _AgentOpt = None,
    agent_model: _AgentModelOpt = None,
    max_cost: _MaxCostOpt = None,
    max_steps: _MaxStepsOpt = None,
    verify: _VerifyOpt = None,
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1, max=20)] = 3,
    verify_timeout: _VerifyTimeoutOpt = DEFAULT_VERIFY_TIMEOUT_S,
    all_items: _AllOpt = False,
    state_root: _StateRootOpt = None,
    allow_uncontained: _AllowUncontainedOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run the next pending item as a guarded tidegate run and record its evidence."""
    from tidegate.flow.request import absolute_script
    from tidegate.ledger.engine import RunOptions, run_items

    if model is not None and planner != "structured":
        raise UsageError("give either --planner or --model, not both")
    options = RunOptions(
        repo,
        str(absolute_script(planner)),
        verify,
        max_attempts,
        verify_timeout,
        model=absolute_script(model),
        max_cost_usd=max_cost,
        max_steps=max_steps,
        state_root=state_root,
        agent=agent,
        agent_model=agent_model,
        allow_uncontained=allow_uncontained,
    )
    from tidegate.cli.render import ProgressPrinter, console

    observer = None if as_json else ProgressPrinter(console(stderr=True))
    runs = run_items(task_dir, options, all_items, observer)
    print_runs(runs, as_json)
    raise typer.Exit(runs[-1].outcome.exit_code)
