"""``tidegate tools``: list the canonical tools and call one, as the agent loop would.

``call`` prints the whole result (output, error, host-authored effects) as JSON, and
records the call as one run (kind ``tools``) in the workspace repository's run store.
Exit codes: 0 the call succeeded; 1 it failed (a structured failure, a denial, a pause) or
its record could not be stored (one ``PERSISTENCE_ERROR`` line; the result is still
printed); 2 usage error (bad JSON, unknown tool, bad option); 3 approval pending (nobody
can answer here: re-run with ``--grant REQUEST_ID`` to approve); 5 the call's outcome is
unknown.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tidegate.cli.output import safe_line
from tidegate.cli.render import console, dump_json
from tidegate.errors import PersistenceError, UsageError
from tidegate.text.sanitize import sanitize

if TYPE_CHECKING:
    from tidegate.tools.calls import ToolCall, ToolResult
    from tidegate.tools.executor import ToolExecutor
    from tidegate.tools.recording import RunKind, ToolRun

# tidegate.tools is imported by the commands, so that other commands do not pay for it.

EXIT_PENDING = 3
EXIT_UNKNOWN = 5

tools_app = typer.Typer(
    name="tools",
    help="The canonical tools: list them, call one with host-attested effects.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

WorkspaceOpt = Annotated[
    Path, typer.Option("--workspace", help="The workspace root (default: current directory).")
]
ApprovalOpt = Annotated[
    str, typer.Option("--approval", help="strict, balanced or trusted-workspace.")
]
ModeOpt = Annotated[str, typer.Option("--mode", help="patch, debug or review (read-only).")]
NetworkOpt = Annotated[
    str, typer.Option("--network", help="allowed, denied or policy_gated (default).")
]
ContainmentOpt = Annotated[
    str, typer.Option("--containment", help="auto (default), required or none.")
]
DoublesOpt = Annotated[
    bool,
    typer.Option(
        "--with-doubles",
        help="Register the labelled deterministic doubles (research, preview, perception).",
    ),
]
StateRootOpt = Annotated[
    str | None,
    typer.Option(
        "--state-root",
        help="Where run records, artifacts and task state are kept (default: "
        "TIDEGATE_STATE_ROOT, else the per-user state directory).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON only.")]


def open_cli_executor(
    workspace: Path,
    approval: str,
    mode: str,
    network: str,
    containment: str,
    doubles: bool,
    state_root: str | None,
    validation_command: str | None = None,
    grants: list[str] | None = None,
    *,
    mcp_client: bool = False,
) -> ToolExecutor:
    from tidegate.exec.guard import Origin
    from tidegate.tools.host import open_executor

    executor = open_executor(
        workspace,
        approval=approval,
        mode=mode,
        network=network,
        containment=containment,
        doubles=doubles,
        state_root=state_root,
        validation_command=validation_command,
        grants=grants or (),
        origin=Origin.MCP_CLIENT if mcp_client else Origin.USER,
    )
    for note in executor.context.policy_notes:
        sys.stderr.write(sanitize(f"tidegate: note: {note}") + "\n")
    return executor


def open_cli_run(
    executor: ToolExecutor, kind: RunKind, state_root: str | None, **settings: object
) -> ToolRun | None:
    """Begin the run that records this surface's calls, or None (said once on stderr)
    when the workspace is not in a repository with a commit."""
    from tidegate.tools.host import NotRecorded, open_tool_run

    try:
        return open_tool_run(executor, kind, state_root, settings)
    except NotRecorded as exc:
        sys.stderr.write(sanitize(f"tidegate: note: not recording this run ({exc})") + "\n")
        return None


def _rows(executor: ToolExecutor) -> list[dict[str, Any]]:
    from tidegate.tools.catalog import CATALOG
    from tidegate.tools.effects import PROFILE

    registry = executor.registry
    available = set(registry.available)
    rows = []
    for spec in CATALOG:
        if registry.is_active(spec.tool_id):
            state = "active"
        elif spec.tool_id in available:
            state = "available"
        elif spec.tool_id in registry.adapters:
            state = f"excluded ({executor.context.mode.value} mode)"
        else:
            state = "absent (no adapter)"
        rows.append(
            {
                "canonical_id": spec.tool_id,
                "name": spec.model_name,
                "state": state,
                "label": registry.label(spec.tool_id),
                "capabilities": sorted(PROFILE[spec.tool_id]),
                "summary": spec.summary,
            }
        )
    return rows


@tools_app.command("list")
def list_tools(
    workspace: WorkspaceOpt = Path("."),
    approval: ApprovalOpt = "balanced",
    mode: ModeOpt = "patch",
    doubles: DoublesOpt = False,
    state_root: StateRootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """All 21 canonical tools: active, available, or absent, with labels and capabilities."""
    from tidegate.tools.effects import PROFILE_SHA256, PROFILE_VERSION

    with open_cli_executor(
        workspace, approval, mode, "policy_gated", "auto", doubles, state_root
    ) as executor:
        rows = _rows(executor)
        registry_hash = executor.registry.active_hash
    if as_json:
        payload = {
            "tools": rows,
            "registry_hash": registry_hash,
            "effect_profile_version": PROFILE_VERSION,
            "effect_profile_sha256": PROFILE_SHA256,
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    out = console()
    for row in rows:
        label = f"  [{row['label']}]" if row["label"] else ""
        out.print(
            f"{row['canonical_id']:<19} {row['name']:<19} {row['state']:<20} "
            f"{','.join(row['capabilities'])}{label}",
            markup=False,
        )
    out.print(f"registry {registry_hash}", markup=False)
    out.print(f"effect profile {PROFILE_VERSION} {PROFILE_SHA256}", markup=False)


def _arguments(text: str) -> dict[str, Any] | str:
    """The parsed ``--args`` object; a syntax error is a usage error. Text holding a value
    strict JSON has not (NaN, 1e400, a huge integer, deep nesting, an unpaired surrogate)
    is handed on as text: the executor refuses it as a recorded ``invalid_arguments`` call."""
    from tidegate.tools.arguments import ArgumentsRejected, parse_arguments

    if text == "-":
        text = sys.stdin.read()
    try:
        value = parse_arguments(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--args: not JSON: {exc.msg} (line {exc.lineno} col {exc.colno})"
        ) from None
    except ArgumentsRejected:
        return text
    if not isinstance(value, dict):
        raise UsageError("--args: must be a JSON object")
    return value


def _try_finish(run: ToolRun | None, **how: str) -> None:
    """End ``run`` on the way out of a failure; a store that fails again changes nothing
    about what is reported (the first failure is)."""
    if run is not None:
        with contextlib.suppress(Exception):
            run.finish(**how)


@tools_app.command("call")
def call_tool(
    tool: Annotated[str, typer.Argument(help="workspace.read or workspace_read ...")],
    args: Annotated[
        str, typer.Option("--args", help="The arguments as a JSON object ('-': stdin).")
    ] = "{}",
    workspace: WorkspaceOpt = Path("."),
    approval: ApprovalOpt = "balanced",
    mode: ModeOpt = "patch",
    network: NetworkOpt = "policy_gated",
    containment: ContainmentOpt = "auto",
    doubles: DoublesOpt = False,
    grant: Annotated[
        list[str] | None,
        typer.Option("--grant", help="An approval request ID to grant (repeatable)."),
    ] = None,
    validation_command: Annotated[
        str | None,
        typer.Option("--validation-command", help="What project.validate runs."),
    ] = None,
    state_root: StateRootOpt = None,
) -> None:
    """Call one tool and print its result and effects as JSON."""
    from tidegate.tools.calls import ToolCall
    from tidegate.tools.catalog import canonical_id
    from tidegate.tools.recording import input_digest

    arguments = _arguments(args)
    tool_id = canonical_id(tool)
    if tool_id is None:
        raise UsageError(f"unknown tool {tool!r} (see 'tidegate tools list')")
    with open_cli_executor(
        workspace,
        approval,
        mode,
        network,
        containment,
        doubles,
        state_root,
        validation_command,
        grant,
    ) as executor:
        call = ToolCall(call_id="cli-1", name=tool, arguments=arguments)
        run = open_cli_run(
            executor, "tools", state_root, tool=tool_id, arguments_sha256=input_digest(arguments)
        )
        result, failure = _execute(executor, call, run)
        for line in executor.keep_failures:  # the call ran; its undo bytes could not be kept
            sys.stderr.write(sanitize(f"tidegate: note: not undoable: {line}") + "\n")
    _report(result, failure, tool_id)


def _execute(
    executor: ToolExecutor, call: ToolCall, run: ToolRun | None
) -> tuple[ToolResult, PersistenceError | None]:
    """The call's result, its run finished; and the persistence failure, if the record
    could not be stored after the call was dispatched (before that, it is raised)."""
    from tidegate.tools.calls import ToolOutcomeUnknown

    failure: PersistenceError | None = None
    try:
        result = executor.execute(call)
    except ToolOutcomeUnknown as unknown:
        result = unknown.result
    except PersistenceError as exc:
        if run is None or run.calls.last_result is None:
            _try_finish(run, persistence_error=str(exc))
            raise  # nothing was dispatched: there is no result to show
        failure, result = exc, run.calls.last_result
    except BaseException:  # Ctrl-C, SIGTERM: end the run as stopped, if the store lets us
        _try_finish(run, ended_by="interrupted")
        raise
    if run is not None:
        try:
            run.finish(persistence_error=None if failure is None else str(failure))
        except PersistenceError as exc:
            failure = failure or exc
    return result, failure


def _report(result: ToolResult, failure: PersistenceError | None, tool_id: str) -> None:
    """Print the result as JSON and exit with the call's code (see the module's doc)."""
    sys.stdout.write(dump_json(result.to_json()) + "\n")
    if failure is not None:
        sys.stderr.write(sanitize(f"tidegate: error: PERSISTENCE_ERROR: {failure}") + "\n")
        raise typer.Exit(1)
    if result.status == "pending_approval" and result.approval_request is not None:
        sys.stderr.write(
            f"tidegate: approval needed; re-run with --grant {result.approval_request.request_id}\n"
        )
        raise typer.Exit(EXIT_PENDING)
    if result.status == "unknown_outcome":
        raise typer.Exit(EXIT_UNKNOWN)
    if result.error is not None and result.error.code in ("invalid_arguments", "path_refused"):
        message = ascii(result.error.message)[1:-1]
        safe_line(f"tidegate: error: {tool_id}: {message}", stream=sys.stderr)
    raise typer.Exit(0 if result.ok else 1)
