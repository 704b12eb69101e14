"""Commands: run, review, debug, recover.

Exit codes: 0 succeeded, 1 the run failed, 2 usage error, 3 apply-back conflict (nothing
changed, .rej files written), 4 another run holds the repository lock.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from tidegate.cli.ledger import ledger_app
from tidegate.cli.render import ProgressPrinter, print_report
from tidegate.errors import TidegateError, UsageError
from tidegate.flow.modes import Mode
from tidegate.flow.request import DEFAULT_VERIFY_TIMEOUT_S, RunRequest
from tidegate.flow.transaction import execute
from tidegate.recovery import recover_repository
from tidegate.store import RunStore, repository_store, resolve_state_root
from tidegate.workspace.repo import discover

EXIT_USAGE = 2

app = typer.Typer(
    name="tidegate",
    help="Apply AI-proposed changes to your git repository safely: shadow worktree, "
    "verification, retries, and a three-way merge back that never touches your index.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(ledger_app, name="ledger")

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
    str | None, typer.Option("--verify", help="Command run in the shadow via /bin/sh -c.")
]
PlannerOpt = Annotated[
    str, typer.Option("--planner", help="'structured' (default) or 'scripted:PATH'.")
]
AttemptsOpt = Annotated[int, typer.Option("--max-attempts", min=1, max=20, help="Attempts (1-20).")]
TimeoutOpt = Annotated[
    float, typer.Option("--verify-timeout", min=1, help="Seconds before VERIFY is killed.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only the final report as JSON.")]
KeepOpt = Annotated[bool, typer.Option("--keep-shadow", help="Keep the shadow worktree.")]
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


def _objective(
    objective: str | None, objective_file: Path | None, required: bool
) -> tuple[str, Path, str]:
    """The objective text, the directory its relative paths start from, and its name."""
    if objective is not None and objective_file is not None:
        raise UsageError("give only one of --objective and --objective-file")
    if objective is None and objective_file is None:
        if required:
            raise UsageError("give one of --objective and --objective-file")
        return "", Path.cwd(), "objective"
    if objective is not None:
        return objective, Path.cwd(), "objective"
    assert objective_file is not None
    if str(objective_file) == "-":
        return sys.stdin.buffer.read().decode("utf-8"), Path.cwd(), "stdin"
    try:
        text = objective_file.read_bytes().decode("utf-8")  # bytes: keep CRLF exactly
        return text, objective_file.resolve().parent, str(objective_file)
    except OSError as exc:
        raise UsageError(f"--objective-file {objective_file}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"--objective-file {objective_file}: not UTF-8 text") from exc


def _store(repo: Path, state_root: str | None) -> RunStore:
    """The repository's run store, after validating the state root (before any run)."""
    found = discover(repo)
    root = resolve_state_root(state_root, found.root)
    return RunStore(repository_store(root, found.common_dir, found.root.name) / "runs.sqlite3")


def _run(
    mode: Mode,
    objective: str | None,
    objective_file: Path | None,
    as_json: bool,
    state_root: str | None,
    **fields: Any,
) -> None:
    """Build the request (``fields`` are RunRequest fields), run it, record it, render, exit."""
    text, base, source = _objective(objective, objective_file, required=mode is not Mode.REVIEW)
    request = RunRequest(
        mode=mode, objective=text, objective_base=base, objective_source=source, **fields
    )
    store = _store(request.repo, state_root)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    observer = None if as_json else ProgressPrinter(err)
    report = execute(request, observer=observer)
    code = report.exit_code
    try:
        store.record(report)
    except (sqlite3.Error, OSError) as exc:
        err.print(
            f"tidegate: error: PERSISTENCE_ERROR: run {report.run_id} ended {report.status} "
            f"but could not be recorded in {store.path}: {exc}",
            markup=False,
        )
        code = 1
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        print_report(Console(highlight=False, soft_wrap=True), report)
    raise typer.Exit(code)


@app.command()
def run(
    mode: Annotated[Mode, typer.Option("--mode", help="patch, review or debug.")] = Mode.PATCH,
    repo: RepoOpt = Path("."),
    objective: ObjectiveOpt = None,
    objective_file: ObjectiveFileOpt = None,
    verify: VerifyOpt = None,
    planner: PlannerOpt = "structured",
    max_attempts: AttemptsOpt = 3,
    verify_timeout: TimeoutOpt = DEFAULT_VERIFY_TIMEOUT_S,
    keep_shadow: KeepOpt = False,
    warm_shadow: WarmOpt = False,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Propose, verify in a shadow worktree, and merge the change back as unstaged edits."""
    _run(
        mode,
        objective,
        objective_file,
        as_json,
        state_root,
        repo=repo,
        verify=verify,
        planner=planner,
        max_attempts=max_attempts,
        verify_timeout_s=verify_timeout,
        keep_shadow=keep_shadow,
        warm_shadow=warm_shadow,
    )


@app.command()
def review(
    repo: RepoOpt = Path("."),
    objective: ObjectiveOpt = None,
    objective_file: ObjectiveFileOpt = None,
    verify: VerifyOpt = None,
    planner: PlannerOpt = "structured",
    verify_timeout: TimeoutOpt = DEFAULT_VERIFY_TIMEOUT_S,
    warm_shadow: WarmOpt = False,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Review only: run the checks in a shadow and report findings. Changes nothing."""
    _run(
        Mode.REVIEW,
        objective,
        objective_file,
        as_json,
        state_root,
        repo=repo,
        verify=verify,
        planner=planner,
        max_attempts=1,
        verify_timeout_s=verify_timeout,
        warm_shadow=warm_shadow,
    )


@app.command()
def debug(
    repo: RepoOpt = Path("."),
    objective: ObjectiveOpt = None,
    objective_file: ObjectiveFileOpt = None,
    verify: VerifyOpt = None,
    planner: PlannerOpt = "structured",
    max_attempts: AttemptsOpt = 3,
    verify_timeout: TimeoutOpt = DEFAULT_VERIFY_TIMEOUT_S,
    keep_shadow: KeepOpt = False,
    warm_shadow: WarmOpt = False,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Review and analyse first, then run the patch cycle."""
    _run(
        Mode.DEBUG,
        objective,
        objective_file,
        as_json,
        state_root,
        repo=repo,
        verify=verify,
        planner=planner,
        max_attempts=max_attempts,
        verify_timeout_s=verify_timeout,
        keep_shadow=keep_shadow,
        warm_shadow=warm_shadow,
    )


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
    summary = recover_repository(repo, rollback=rollback)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), indent=2) + "\n")
    else:
        out = Console(highlight=False)
        if not summary.journals and not summary.removed_shadows:
            out.print("nothing to recover")
        for j in summary.journals:
            out.print(f"run {j.run_id}: apply-back {j.action}; {len(j.finished)} path(s) written")
            for path in j.diverged:
                out.print(f"  left alone (changed since the crash): {path}", markup=False)
        for path in summary.removed_shadows:
            out.print(f"removed stale shadow {path}", markup=False)
    raise typer.Exit(0 if summary.clean else 1)


@app.command()
def runs(
    repo: RepoOpt = Path("."),
    state_root: StateRootOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many, newest first.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """List this repository's recorded runs, newest first."""
    store = _store(repo, state_root)
    stored = store.runs(limit)
    if as_json:
        rows = [
            {
                "run_id": r.run_id,
                "mode": r.mode,
                "status": r.status,
                "error_class": r.error_class,
                "attempts": r.attempts,
                "duration_s": r.duration_s,
            }
            for r in stored
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    out = Console(highlight=False, soft_wrap=True)
    if not stored:
        out.print("no recorded runs")
    for r in stored:
        failure = f" {r.error_class}" if r.error_class else ""
        out.print(
            f"{r.run_id}  {r.mode:<6} {r.status:<9}{failure}  {r.attempts} attempt(s)  "
            f"{r.duration_s:.1f}s",
            markup=False,
        )


@app.command()
def read(
    run_id: Annotated[str, typer.Argument(help="A run id, or 'latest'.")],
    repo: RepoOpt = Path("."),
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a recorded run's report (nothing is changed)."""
    stored = _store(repo, state_root).get(run_id)
    if as_json:
        sys.stdout.write(stored.report.model_dump_json(indent=2) + "\n")
    else:
        out = Console(highlight=False, soft_wrap=True)
        for event in stored.report.phases:
            out.print(
                f"  attempt {event.attempt} {event.phase:<15} {event.status:<6} "
                f"{event.duration_ms:>9.1f} ms  {event.detail}",
                markup=False,
            )
        print_report(out, stored.report)


def _terminate(signum: int, frame: object) -> None:
    # Unwind normally so the shadow worktree and the lock are cleaned up.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point: turns every usage error into one line on stderr and exit code 2."""
    args = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGTERM, _terminate)
    try:
        result = app(args=args or ["--help"], prog_name="tidegate", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write(
            "tidegate: interrupted (an apply-back is never left half-done; see git status)\n"
        )
        return 130
    except typer.TyperException as exc:  # the CLI parser's usage errors
        sys.stderr.write(f"tidegate: error: {exc.format_message()}\n")
        return EXIT_USAGE
    except UsageError as exc:
        sys.stderr.write(f"tidegate: error: {exc}\n")
        return EXIT_USAGE
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        sys.stderr.write(f"tidegate: error: {where}: {first['msg']}\n")
        return EXIT_USAGE
    except TidegateError as exc:
        sys.stderr.write(f"tidegate: error: {exc}\n")
        return int(getattr(exc, "exit_code", 1))
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
