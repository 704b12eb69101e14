"""The commands on recorded runs, after they ran (or while they run): recover, gc, runs,
status, read, resume, diff, apply, discard, undo. Plain functions with typer's
annotations; ``cli.app`` registers them on the engine's application, in this order (the
order the help lists them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from tidegate.cli.landing import print_landings
from tidegate.cli.options import (
    JsonOpt,
    RepoOpt,
    StateRootOpt,
)
from tidegate.cli.output import dump_json, print_report
from tidegate.cli.runcmd import (
    open_store,
    progress_observer,
)
from tidegate.cli.runtext import line, recover_lines
from tidegate.errors import UsageError
from tidegate.text.sanitize import sanitize


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
        for text in recover_lines(summary, rollback):
            sys.stdout.write(line(text))
    for error in summary.errors:
        sys.stderr.write(sanitize(f"tidegate: error: {error}") + "\n")
    raise typer.Exit(0 if summary.clean else 1)


def gc(
    repo: RepoOpt = Path("."),
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Say which runs would be pruned and which leftovers removed; change nothing.",
        ),
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


def status(repo: RepoOpt = Path("."), as_json: JsonOpt = False) -> None:
    """List the runs alive in this repository now: phase, elapsed time, pid."""
    from tidegate.cli.status import status_output

    sys.stdout.write(status_output(repo, as_json))


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


COMMANDS = (recover, gc, runs, status, read, resume, diff, apply, discard, undo)
