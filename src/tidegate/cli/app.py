"""Commands: run, review, debug, recover, gc, runs, read, resume, diff, apply, discard, undo (the
engine's); the command
groups are added by ``full_app`` only for a command line that needs them
(``tidegate.cli.groups``).

Exit codes: 0 succeeded, 1 the run failed (PERSISTENCE_ERROR included: a run whose record
was not stored durably never reports success), 2 usage error (a refused resume included),
3 apply-back conflict (nothing changed, .rej files written), 4 another run holds the
repository lock, 130 paused by Ctrl-C (``tidegate resume RUN_ID`` continues it) or
interrupted before its first checkpoint.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from tidegate.cli.after import COMMANDS
from tidegate.cli.groups import add_groups, needs_groups, route_review
from tidegate.cli.options import (
    AgentModelOpt,
    AgentOpt,
    AttemptsOpt,
    ContainmentOpt,
    HoldOpt,
    JsonOpt,
    KeepOpt,
    MaxCostOpt,
    MaxStepsOpt,
    ModelOpt,
    NetworkOpt,
    ObjectiveFileOpt,
    ObjectiveOpt,
    PlannerOpt,
    RebaseOpt,
    RepoOpt,
    ReviewOpt,
    StateRootOpt,
    SubAgentOpt,
    TimeoutOpt,
    VerifyOpt,
    WarmOpt,
)
from tidegate.cli.runcmd import (
    EXIT_USAGE,
    guarded,
    invoke,
    terminate,
)
from tidegate.records.modes import Mode
from tidegate.text.sanitize import sanitize

# The engine, the store's writing side, rich, the model SDKs and the command groups are
# imported where they are used: a command pays only for what it runs (docs/benchmarks.md).

_SETTINGS: dict[str, Any] = {
    "name": "tidegate",
    "help": "Apply AI-proposed changes to your git repository safely: shadow worktree, "
    "verification, retries, and a three-way merge back that never touches your index.",
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}
app = typer.Typer(**_SETTINGS)
"""The engine commands alone (``full_app``: with the command groups)."""
_full: typer.Typer | None = None


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        sys.stdout.write(f"tidegate {version('tidegate')}\n")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show the version and exit.", callback=_show_version, is_eager=True
        ),
    ] = False,
) -> None:
    pass


def full_app() -> typer.Typer:
    """Every command: the engine's (the same objects as ``app``'s) and every group."""
    global _full
    if _full is None:
        full = typer.Typer(**_SETTINGS)
        full.registered_commands = app.registered_commands
        full.registered_callback = app.registered_callback
        add_groups(full)
        _full = full
    return _full


@app.command()
def run(
    mode: Annotated[Mode, typer.Option("--mode", help="patch, review or debug.")] = Mode.PATCH,
    repo: RepoOpt = Path("."),
    objective: ObjectiveOpt = None,
    objective_file: ObjectiveFileOpt = None,
    verify: VerifyOpt = None,
    planner: PlannerOpt = "structured",
    max_attempts: AttemptsOpt = 3,
    verify_timeout: TimeoutOpt = None,
    keep_shadow: KeepOpt = False,
    hold: HoldOpt = False,
    rebase: RebaseOpt = False,
    review: ReviewOpt = False,
    warm_shadow: WarmOpt = False,
    network: NetworkOpt = False,
    containment: ContainmentOpt = None,
    model: ModelOpt = None,
    agent: AgentOpt = None,
    agent_model: AgentModelOpt = None,
    sub_agent: SubAgentOpt = None,
    max_cost: MaxCostOpt = None,
    max_steps: MaxStepsOpt = None,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
    otlp: Annotated[
        str | None,
        typer.Option(
            "--otlp",
            help="Send the run's OpenTelemetry spans to this OTLP/HTTP collector as it goes "
            "(the otel extra; docs/export.md).",
        ),
    ] = None,
) -> None:
    """Propose, verify in a shadow worktree, and merge the change back as unstaged edits."""
    raise typer.Exit(invoke("run", locals()))


@app.command()
def review(
    repo: RepoOpt = Path("."),
    objective: ObjectiveOpt = None,
    objective_file: ObjectiveFileOpt = None,
    verify: VerifyOpt = None,
    planner: PlannerOpt = "structured",
    verify_timeout: TimeoutOpt = None,
    warm_shadow: WarmOpt = False,
    network: NetworkOpt = False,
    containment: ContainmentOpt = None,
    model: ModelOpt = None,
    max_cost: MaxCostOpt = None,
    max_steps: MaxStepsOpt = None,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
    fail_on: Annotated[
        Literal["error", "warning", "never"] | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a finding of this severity or worse exists: error (default), "
            "warning, never.",
        ),
    ] = None,
) -> None:
    """Review only: run the checks in a shadow and report findings. Changes nothing."""
    raise typer.Exit(invoke("review", locals()))


@app.command()
def debug(
    repo: RepoOpt = Path("."),
    objective: ObjectiveOpt = None,
    objective_file: ObjectiveFileOpt = None,
    verify: VerifyOpt = None,
    planner: PlannerOpt = "structured",
    max_attempts: AttemptsOpt = 3,
    verify_timeout: TimeoutOpt = None,
    keep_shadow: KeepOpt = False,
    hold: HoldOpt = False,
    rebase: RebaseOpt = False,
    review: ReviewOpt = False,
    warm_shadow: WarmOpt = False,
    network: NetworkOpt = False,
    containment: ContainmentOpt = None,
    model: ModelOpt = None,
    agent: AgentOpt = None,
    agent_model: AgentModelOpt = None,
    sub_agent: SubAgentOpt = None,
    max_cost: MaxCostOpt = None,
    max_steps: MaxStepsOpt = None,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Review and analyse first, then run the patch cycle."""
    raise typer.Exit(invoke("debug", locals()))


for _command in COMMANDS:  # the commands on recorded runs (cli/after.py)
    app.command()(_command)


def main(argv: list[str] | None = None, *, full: bool = False) -> int:
    """Entry point: turns every usage error into one line on stderr and exit code 2.

    An engine command runs on the engine commands alone, anything else (or ``full``) on
    every command (``tidegate.cli.groups``)."""
    args = sys.argv[1:] if argv is None else argv
    from tidegate.cli.completion import misspelt

    if (unknown := misspelt(args)) is not None:  # the fast path's line, for every entry
        sys.stderr.write(unknown + "\n")
        return EXIT_USAGE
    application = full_app() if full or needs_groups(args) else app
    args = route_review(args)
    signal.signal(signal.SIGTERM, terminate)

    def parsed_and_run() -> int:
        try:
            result = application(
                args=args or ["--help"], prog_name="tidegate", standalone_mode=False
            )
        except typer.Exit as exc:
            return exc.exit_code
        except typer.Abort:
            raise KeyboardInterrupt from None
        except typer.TyperException as exc:  # the CLI parser's usage errors
            sys.stderr.write(sanitize(f"tidegate: error: {exc.format_message()}") + "\n")
            return EXIT_USAGE
        return result if isinstance(result, int) else 0

    return guarded(parsed_and_run)


if __name__ == "__main__":
    sys.exit(main())
