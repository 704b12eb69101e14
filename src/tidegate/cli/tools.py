"""``tidegate tools``: list the canonical tools and call one, as the agent loop would.

``call`` prints the whole result (output, error, host-authored effects) as JSON.
Exit codes: 0 the call succeeded; 1 it failed (a structured failure, a denial, a pause);
2 usage error (bad JSON, unknown tool, bad option); 3 approval pending (nobody can answer
here: re-run with ``--grant REQUEST_ID`` to approve); 5 the call's outcome is unknown.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from tidegate.errors import UsageError

if TYPE_CHECKING:
    from tidegate.tools.executor import ToolExecutor

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
    str | None, typer.Option("--state-root", help="Where artifacts and task state are kept.")
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
) -> ToolExecutor:
    from tidegate.tools.host import open_executor

    return open_executor(
        workspace,
        approval=approval,
        mode=mode,
        network=network,
        containment=containment,
        doubles=doubles,
        state_root=state_root,
        validation_command=validation_command,
        grants=grants or (),
    )


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
    out = Console(highlight=False, soft_wrap=True)
    for row in rows:
        label = f"  [{row['label']}]" if row["label"] else ""
        out.print(
            f"{row['canonical_id']:<19} {row['name']:<19} {row['state']:<20} "
            f"{','.join(row['capabilities'])}{label}",
            markup=False,
        )
    out.print(f"registry {registry_hash}", markup=False)
    out.print(f"effect profile {PROFILE_VERSION} {PROFILE_SHA256}", markup=False)


def _arguments(text: str) -> dict[str, Any]:
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--args: not JSON: {exc.msg} (line {exc.lineno} col {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise UsageError("--args: must be a JSON object")
    return value


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
    from tidegate.tools.calls import ToolCall, ToolOutcomeUnknown
    from tidegate.tools.catalog import canonical_id

    arguments = _arguments(args)
    if canonical_id(tool) is None:
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
        try:
            result = executor.execute(call)
        except ToolOutcomeUnknown as unknown:
            result = unknown.result
    sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    if result.status == "pending_approval" and result.approval_request is not None:
        sys.stderr.write(
            f"tidegate: approval needed; re-run with --grant {result.approval_request.request_id}\n"
        )
        raise typer.Exit(EXIT_PENDING)
    if result.status == "unknown_outcome":
        raise typer.Exit(EXIT_UNKNOWN)
    raise typer.Exit(0 if result.ok else 1)
