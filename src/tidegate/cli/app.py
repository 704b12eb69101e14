"""Commands: run, review, debug, recover, runs, read, resume.

Exit codes: 0 succeeded, 1 the run failed (PERSISTENCE_ERROR included: a run whose record
was not stored durably never reports success), 2 usage error (a refused resume included),
3 apply-back conflict (nothing changed, .rej files written), 4 another run holds the
repository lock, 130 paused by Ctrl-C (``tidegate resume RUN_ID`` continues it) or
interrupted before its first checkpoint.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import ValidationError
from rich.console import Console

from tidegate.cli.gym import gym_app
from tidegate.cli.ledger import ledger_app
from tidegate.cli.mcp import mcp_app
from tidegate.cli.operator import OPERATOR_REVIEW, operator_apps, route_review
from tidegate.cli.render import ProgressPrinter, print_report
from tidegate.cli.tools import tools_app
from tidegate.errors import PersistenceError, TidegateError, UsageError
from tidegate.flow.modes import Mode
from tidegate.flow.report import FlowReport
from tidegate.flow.request import DEFAULT_VERIFY_TIMEOUT_S, RunRequest
from tidegate.flow.resume import resume_run
from tidegate.flow.transaction import execute
from tidegate.planners import planner_for
from tidegate.recovery import recover_repository
from tidegate.store import (
    RunStore,
    StoreRecorder,
    open_run_store,
    read_all_run_stores,
    read_run_store,
    resume_ticket,
)
from tidegate.store.views import run_row, run_view
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
app.add_typer(tools_app, name="tools")
app.add_typer(mcp_app, name="mcp")
app.add_typer(gym_app, name="gym")
for _operator_app in operator_apps():
    app.add_typer(_operator_app, hidden=_operator_app.info.name == OPERATOR_REVIEW)

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
MaxCostOpt = Annotated[
    float | None,
    typer.Option("--max-cost", min=0, help="Hard cap in USD on the model's spending for the run."),
]
MaxStepsOpt = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, help="Most model requests the run may make."),
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
    return open_run_store(repo, state_root)


def _print(report: FlowReport) -> None:
    print_report(Console(highlight=False, soft_wrap=True), report)


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
    recorder = StoreRecorder(store)
    planner = planner_for(request, recorder=recorder) if request.model or request.agent else None
    if observer is not None and hasattr(planner, "progress"):
        planner.progress = observer.activity  # type: ignore[union-attr]
    try:
        report = execute(request, observer=observer, planner=planner, recorder=recorder)
    finally:
        getattr(planner, "close", lambda: None)()
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        _print(report)
    raise typer.Exit(report.exit_code)


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
    network: NetworkOpt = False,
    containment: ContainmentOpt = None,
    model: ModelOpt = None,
    agent: AgentOpt = None,
    agent_model: AgentModelOpt = None,
    max_cost: MaxCostOpt = None,
    max_steps: MaxStepsOpt = None,
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
        network=network,
        containment=containment,
        model=model,
        agent=agent,
        agent_model=agent_model,
        max_cost_usd=max_cost,
        max_steps=max_steps,
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
    network: NetworkOpt = False,
    containment: ContainmentOpt = None,
    model: ModelOpt = None,
    max_cost: MaxCostOpt = None,
    max_steps: MaxStepsOpt = None,
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
        network=network,
        containment=containment,
        model=model,
        max_cost_usd=max_cost,
        max_steps=max_steps,
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
    network: NetworkOpt = False,
    containment: ContainmentOpt = None,
    model: ModelOpt = None,
    agent: AgentOpt = None,
    agent_model: AgentModelOpt = None,
    max_cost: MaxCostOpt = None,
    max_steps: MaxStepsOpt = None,
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
        network=network,
        containment=containment,
        model=model,
        agent=agent,
        agent_model=agent_model,
        max_cost_usd=max_cost,
        max_steps=max_steps,
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
            if j.action == "completed":
                out.print(
                    f"  its record says 'interrupted' until `tidegate resume {j.run_id}` "
                    "records the report (nothing is written twice)",
                    markup=False,
                )
            for path in j.diverged:
                out.print(f"  left alone (changed since the crash): {path}", markup=False)
        for path in summary.removed_shadows:
            out.print(f"removed stale shadow {path}", markup=False)
    raise typer.Exit(0 if summary.clean else 1)


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
    if repo is None and not _inside_repository(Path(".")):
        stores = read_all_run_stores(state_root)
    else:
        found = discover(repo or Path("."))
        one = read_run_store(found, state_root)
        stores = [one] if one is not None else []
    rows = sorted(
        (run_row(r) for s in stores for r in s.runs(limit)),
        key=lambda r: (r["started_ms"], r["run_id"]),
        reverse=True,
    )[:limit]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    out = Console(highlight=False, soft_wrap=True)
    if not rows:
        out.print("no recorded runs")
    several = len({r["repo"] for r in rows}) > 1
    for r in rows:
        failure = f" {r['error_class']}" if r["error_class"] else ""
        where = f"  {r['repo']}" if several else ""
        out.print(
            f"{r['run_id']}  {r.get('kind', 'engine'):<7}{r['mode']:<6} {r['status']:<11}"
            f"{failure}  {r['attempts']} "
            f"attempt(s)  {r['duration_s']:.1f}s{where}",
            markup=False,
        )


def _inside_repository(path: Path) -> bool:
    try:
        discover(path)
    except UsageError:
        return False
    return True


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
    store = read_run_store(discover(repo), state_root)
    if store is None:
        raise UsageError(f"no recorded run {run_id!r} for this repository")
    view = run_view(store, run_id)
    if as_json:
        shown = view if detail or view["report"] is None else view["report"]
        sys.stdout.write(json.dumps(shown, indent=2) + "\n")
        return
    _print_view(view)


def _print_view(view: dict[str, Any]) -> None:
    out = Console(highlight=False, soft_wrap=True)
    run = view["run"]
    failure = f" {run['error_class']} in {run['failure_phase']}" if run["error_class"] else ""
    out.print(
        f"run {run['run_id']}  {run['mode']}  {run['status']}{failure}  task {run['task_id']}",
        markup=False,
    )
    out.print("phases:", markup=False)
    for p in view["phases"]:
        out.print(
            f"  attempt {p['attempt']} {p['phase']:<15} {p['status']:<6} "
            f"{p['duration_ms']:>9.1f} ms  {p['detail']}",
            markup=False,
        )
    out.print("attempts:", markup=False)
    for a in view["attempts"]:
        why = f" {a['error_class']} in {a['failure_phase']}" if a.get("error_class") else ""
        tree = f"  candidate {a['candidate_tree'][:12]}" if a.get("candidate_tree") else ""
        out.print(f"  {a['attempt']}: {a['status']}{why}{tree}", markup=False)
    effects = view["effects"]
    out.print("effects:", markup=False)
    for f in effects["applied_files"]:
        out.print(
            f"  {f['action']:<9} {f['path']}  {(f['before_sha256'] or '-')[:12]} -> "
            f"{(f['after_sha256'] or '-')[:12]}",
            markup=False,
        )
    for c in effects["tool_calls"]:
        out.print(f"  tool {c['canonical_tool']} {c['tool_call_id']}: {c['status']}", markup=False)
    evidence = view["evidence"]
    out.print("evidence:", markup=False)
    out.print(
        f"  trace: {evidence['trace_events']} event(s); checkpoints: "
        f"{evidence['checkpoints']} ({evidence['checkpoint_chain']})",
        markup=False,
    )
    if evidence["replay_hash"]:
        out.print(f"  replay hash {evidence['replay_hash']}", markup=False)
    if view["resume"]:
        r = view["resume"]
        after = f"after {r['after']}" if r["after"] else "at the start"
        out.print(f"  resumable {after} of attempt {r['attempt']}: {r['command']}", markup=False)
    if view["report"] is not None:
        _print(FlowReport.model_validate(view["report"]))


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
    store = _store(repo, state_root)
    ticket = resume_ticket(store, run_id)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    observer = None if as_json else ProgressPrinter(err)
    report = resume_run(ticket, StoreRecorder(store, task_id=ticket.task_id), observer)
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        _print(report)
    raise typer.Exit(report.exit_code)


def _terminate(signum: int, frame: object) -> None:
    # Unwind normally so the shadow worktree and the lock are cleaned up.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point: turns every usage error into one line on stderr and exit code 2."""
    args = route_review(sys.argv[1:] if argv is None else argv)
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
    except PersistenceError as exc:
        sys.stderr.write(f"tidegate: error: PERSISTENCE_ERROR: {exc}\n")
        return 1
    except TidegateError as exc:
        sys.stderr.write(f"tidegate: error: {exc}\n")
        return int(getattr(exc, "exit_code", 1))
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
