"""``tidegate mcp serve``: the active tools over MCP on stdin/stdout.

The same executor, approval policy and effect capture as ``tidegate tools call``. Approval
questions cannot be answered over stdio: such calls come back as pending approvals. The
session is one run (kind ``mcp``) in the workspace repository's run store; it ends when
the client closes stdin or on SIGTERM. Exit code 0, or 1 with one ``PERSISTENCE_ERROR``
line when a record could not be stored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tidegate.cli.tools import (
    ApprovalOpt,
    ContainmentOpt,
    DoublesOpt,
    ModeOpt,
    NetworkOpt,
    StateRootOpt,
    open_cli_executor,
    open_cli_run,
)

if TYPE_CHECKING:
    from tidegate.mcp.change import ChangeTool
    from tidegate.tools.recording import ToolRun

mcp_app = typer.Typer(
    name="mcp",
    help="Serve the tools to an MCP client.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@mcp_app.command()
def serve(
    workspace: Annotated[Path, typer.Option("--workspace", help="The workspace root.")],
    approval: ApprovalOpt = "balanced",
    mode: ModeOpt = "patch",
    network: NetworkOpt = "policy_gated",
    containment: ContainmentOpt = "auto",
    doubles: DoublesOpt = False,
    validation_command: Annotated[
        str | None, typer.Option("--validation-command", help="What project.validate runs.")
    ] = None,
    state_root: StateRootOpt = None,
) -> None:
    """Serve the workspace's active tools over MCP stdio until the client disconnects."""
    from tidegate.mcp.server import serve as serve_stdio

    executor = open_cli_executor(
        workspace,
        approval,
        mode,
        network,
        containment,
        doubles,
        state_root,
        validation_command,
        mcp_client=True,
    )

    def open_run() -> ToolRun | None:
        return open_cli_run(executor, "mcp", state_root)

    serve_stdio(executor, open_run, _change_tool(workspace, state_root, mode, approval))


def _change_tool(
    workspace: Path, state_root: str | None, mode: str, approval: str
) -> ChangeTool | None:
    """``change_propose`` when the workspace is a git repository (the engine needs one)."""
    from tidegate.errors import UsageError
    from tidegate.mcp.change import ChangeTool
    from tidegate.workspace.repo import discover

    try:
        root = discover(workspace).root
    except UsageError:
        return None
    return ChangeTool(root, state_root, mode, approval)


@mcp_app.command("codex-config")
def codex_config(
    workspace: Annotated[Path, typer.Option("--workspace", help="The workspace root.")],
    approval: Annotated[
        str | None, typer.Option("--approval", help="Passed on to `mcp serve --approval`.")
    ] = None,
    state_root: StateRootOpt = None,
) -> None:
    """Print the `[mcp_servers.tidegate]` table for Codex's config.toml (docs/agents.md).

    Refused, in one line, when the server it registers would not start: the table says
    ``required = true``, so Codex would fail every run instead."""
    from tidegate.agents.mcp_registration import codex_mcp_table

    _print_registration(codex_mcp_table, workspace, approval, state_root)


@mcp_app.command("claude-config")
def claude_config(
    workspace: Annotated[Path, typer.Option("--workspace", help="The workspace root.")],
    approval: Annotated[
        str | None, typer.Option("--approval", help="Passed on to `mcp serve --approval`.")
    ] = None,
    state_root: StateRootOpt = None,
) -> None:
    """Print the `.mcp.json` that registers the server with Claude Code (project scope).

    Save it as `.mcp.json` at the repository's root (or merge its `mcpServers` entry into
    one), or give the entry to `claude mcp add-json tidegate`. Refused, in one line, when
    the server it registers would not start."""
    from tidegate.agents.mcp_registration import claude_mcp_json

    _print_registration(claude_mcp_json, workspace, approval, state_root)


def _print_registration(
    build: Callable[..., str], workspace: Path, approval: str | None, state_root: str | None
) -> None:
    """What ``build`` makes of the root ``mcp serve`` would serve; one line and exit 2 when
    that server would not start."""
    from tidegate.errors import UsageError

    try:
        root = would_serve(workspace, approval, state_root)
        text = build(root, state_root=Path(state_root) if state_root else None, approval=approval)
    except UsageError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(text, nl=False)


def would_serve(workspace: Path, approval: str | None, state_root: str | None) -> Path:
    """The repository root ``mcp serve --workspace WORKSPACE`` would serve with
    ``change_propose``, after the checks it makes before it answers a client (approval
    profile, repository, the repository's tidegate configuration, state root), without
    creating anything. UsageError for the first that fails."""
    from tidegate.config import load_policy
    from tidegate.errors import UsageError
    from tidegate.store.state_root import resolve_state_root
    from tidegate.tools.host import PROFILES
    from tidegate.workspace.repo import discover

    if approval is not None and approval not in PROFILES:
        raise UsageError(f"unknown approval profile {approval!r}")
    repo = discover(workspace)
    load_policy(repo.root)
    resolve_state_root(state_root, repo.root, create=False, git_dir=repo.common_dir)
    return repo.root
