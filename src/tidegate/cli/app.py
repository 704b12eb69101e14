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

from tidegate.cli.groups import add_groups, needs_groups, route_review
from tidegate.cli.landing import print_landings
from tidegate.cli.output import dump_json, print_report
from tidegate.cli.runcmd import (
    EXIT_USAGE,
    guarded,
    invoke,
    open_store,
    progress_observer,
    terminate,
)
from tidegate.errors import UsageError
from tidegate.records.modes import DEFAULT_VERIFY_TIMEOUT_S, Mode
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
    typer.Option("--warm-shadow", help="Reuse and keep this repository's warm shadow (faster)."),
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


@app.command()
def recover(
    repo: RepoOpt = Path("."),
    rollback: Annotated[
        bool,
        typer.Option("--rollback", help="Undo interrupted apply-backs instead of finishing them."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Finish (or --rollback) apply-backs a crash interrupted; remove stale shadows."""
    from tidegate.flow.recovery import recover_repository

    summary = recover_repository(repo, rollback=rollback)
    if as_json:
        sys.stdout.write(dump_json(summary.as_dict()) + "\n")
    else:
        from tidegate.cli.render import console

        out = console()
        if not (
            summary.journals
            or summary.removed_shadows
            or summary.removed_scratch
            or summary.removed_copies
            or summary.removed_sandboxes
            or summary.errors
        ):
            out.print("nothing to recover")
        for j in summary.journals:
            run_id, _, kind = j.run_id.partition(".")
            what = {"apply": "apply", "undo": "undo"}.get(kind, "apply-back")
            out.print(f"run {run_id}: {what} {j.action}; {len(j.finished)} path(s) written")
            if kind and j.action == "completed":
                out.print(
                    f"  run `tidegate {what} {run_id}` again to record it (nothing is written "
                    "twice)",
                    markup=False,
                )
            elif j.action == "completed":
                out.print(
                    f"  its record says 'interrupted' until `tidegate resume {j.run_id}` "
                    "records the report (nothing is written twice)",
                    markup=False,
                )
            for path in j.diverged:
                out.print(f"  left alone (changed since the crash): {path}", markup=False)
            for kept in j.kept:
                beside = (
                    f"the {'old' if rollback else 'new'} version is in {kept.side_copy}"
                    if kept.side_copy
                    else f"the {'old' if rollback else 'new'} version has no file there"
                )
                out.print(
                    f"  kept your edit of {kept.path} (changed after the crash); {beside}",
                    markup=False,
                    soft_wrap=True,
                )
        for path in summary.removed_shadows:
            out.print(f"removed stale shadow {path}", markup=False)
        for path in summary.removed_scratch:
            out.print(f"removed stale scratch directory {path}", markup=False)
        for path in summary.removed_copies:
            out.print(f"removed a dead sub-agent's copy {path}", markup=False)
        for path in summary.removed_sandboxes:
            out.print(f"removed a dead command's sandbox directory {path}", markup=False)
    for line in summary.errors:
        sys.stderr.write(sanitize(f"tidegate: error: {line}") + "\n")
    raise typer.Exit(0 if summary.clean else 1)


@app.command()
def gc(
    repo: RepoOpt = Path("."),
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say which runs would be pruned; change nothing.")
    ] = False,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Prune runs past retention ([retention] runs, default 50) and what dead runs left."""
    from tidegate.cli.runtext import gc_lines
    from tidegate.flow.retention import collect

    store = open_store(repo, state_root)
    try:
        summary = collect(repo, store, dry_run=dry_run)
    finally:
        store.close()
    if as_json:
        sys.stdout.write(dump_json(summary.as_dict()) + "\n")
    else:
        sys.stdout.write(sanitize("\n".join(gc_lines(summary))) + "\n")
    raise typer.Exit(1 if summary.errors else 0)


@app.command()
def runs(
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo",
            help="Only this repository's runs (default: the current one; outside a "
            "repository, every repository in the state root).",
        ),
    ] = None,
    state_root: StateRootOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many, newest first.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """List recorded runs, newest first (read-only; a run whose process died shows as
    interrupted)."""
    from tidegate.cli.records import runs_output

    sys.stdout.write(runs_output(None if repo is None else str(repo), state_root, limit, as_json))


@app.command()
def status(repo: RepoOpt = Path("."), as_json: JsonOpt = False) -> None:
    """List the runs alive in this repository now: phase, elapsed time, pid."""
    from tidegate.cli.status import status_output

    sys.stdout.write(status_output(repo, as_json))


@app.command()
def read(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
    repo: RepoOpt = Path("."),
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
    detail: Annotated[
        bool,
        typer.Option(
            "--detail", help="With --json: the run, phases, attempts, effects and evidence."
        ),
    ] = False,
) -> None:
    """Show a recorded run: report, phases, attempts, effects, evidence (changes nothing)."""
    from tidegate.cli.records import read_output

    sys.stdout.write(read_output(run_id, str(repo), state_root, as_json, detail))


@app.command()
def resume(
    run_id: Annotated[str, typer.Argument(help="The paused or interrupted run ('latest' too).")],
    repo: RepoOpt = Path("."),
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Continue a paused or interrupted run from its last checkpoint. Refused (exit 2) when
    the workspace, the request, the planner's inputs or the configuration changed, or when
    a checkpoint fails verification."""
    from tidegate.flow.resume import resume_run
    from tidegate.store import StoreRecorder, resume_ticket

    store = open_store(repo, state_root)
    ticket = resume_ticket(store, run_id)
    observer = progress_observer(as_json)
    report = resume_run(ticket, StoreRecorder(store, task_id=ticket.task_id), observer)
    print_report(report, as_json)
    raise typer.Exit(report.exit_code)


RunArg = Annotated[
    str | None,
    typer.Argument(help="A run id (default: the newest one the command applies to)."),
]
PathsOpt = Annotated[list[str] | None, typer.Option(help="A path of the change (repeatable).")]


@app.command()
def diff(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")] = "latest",
    repo: RepoOpt = Path("."),
    state_root: StateRootOpt = None,
    stat: Annotated[bool, typer.Option("--stat", help="Files and line counts only.")] = False,
) -> None:
    """Show a recorded run's change as a diff (through your pager on a terminal)."""
    from tidegate.cli.output import shown
    from tidegate.cli.records import diff_output

    shown(diff_output(run_id, str(repo), state_root, stat))


@app.command()
def apply(
    run_id: RunArg = None,
    repo: RepoOpt = Path("."),
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Apply only this path (repeatable).")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Leave this path out (repeatable).")
    ] = None,
    review: Annotated[
        bool,
        typer.Option(
            "--review", help="On a terminal: show each file's diff and ask which to land."
        ),
    ] = False,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Land a held run's verified change (`run --hold`) as unstaged edits, with the same
    three-way merge as a run; a subset is verified again on its own first."""
    from tidegate.flow.landing import apply_run

    if review:
        from tidegate.cli.landing import require_terminal, review_held

        if only or exclude:
            raise UsageError("apply --review asks which files to land: not with --only/--exclude")
        require_terminal("--review", as_json)
        raise typer.Exit(review_held(repo, state_root, run_id))
    store = open_store(repo, state_root)
    try:
        outcome = apply_run(
            repo, store, run_id, only or [], exclude or [], progress_observer(as_json)
        )
    finally:
        store.close()
    raise typer.Exit(print_landings([outcome], as_json))


@app.command()
def discard(
    run_id: RunArg = None,
    repo: RepoOpt = Path("."),
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Drop a held run's change; it can no longer be applied (your files are not touched)."""
    from tidegate.flow.landing import discard_run

    store = open_store(repo, state_root)
    try:
        outcome = discard_run(repo, store, run_id)
    finally:
        store.close()
    raise typer.Exit(print_landings([outcome], as_json))


@app.command()
def undo(
    run_id: RunArg = None,
    repo: RepoOpt = Path("."),
    last: Annotated[
        int | None,
        typer.Option("--last", min=1, help="Undo the last N applied runs, newest first."),
    ] = None,
    call_id: Annotated[
        str | None,
        typer.Option(
            "--call", help="Undo one tool call instead (CALL, or SESSION:CALL): its bytes back."
        ),
    ] = None,
    session_id: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="Undo every call of a tool session instead ('latest' too), newest first; "
            "with --call, the session the call is in.",
        ),
    ] = None,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Reverse an applied run's change with a three-way merge: your edits since are kept,
    a conflict changes nothing (.rej files), the index is never touched. --call/--session
    put back what tool calls (tools call, MCP) replaced or deleted, the same way."""
    from tidegate.flow.landing import undo_last, undo_run

    if call_id is not None or session_id is not None:
        from tidegate.cli.undo_calls import undo_tool_calls_command

        if run_id is not None or last is not None:
            raise UsageError("undo: give a run id, --last N, or --call/--session, not several")
        raise typer.Exit(undo_tool_calls_command(repo, state_root, call_id, session_id, as_json))
    if last is not None and run_id is not None:
        raise UsageError("give a run id or --last N, not both")
    store = open_store(repo, state_root)
    try:
        if last is not None:
            outcomes = undo_last(repo, store, last)
        else:
            outcomes = [undo_run(repo, store, run_id)]
    finally:
        store.close()
    raise typer.Exit(print_landings(outcomes, as_json))


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
