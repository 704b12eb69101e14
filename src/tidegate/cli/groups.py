"""Which typer application a command line needs, so that a command imports only itself.

The engine commands (run, review, debug, recover, gc, runs, read, resume, diff, apply,
discard, undo) are in
``tidegate.cli.app``; each command group (ledger, tools, mcp, gym, inspect, export,
acp, the operator's) is in a module of its own that imports what it uses (the store's writer, rich,
the tools, the MCP SDK). A command line that names an engine command is given the engine commands alone; any
other (no arguments, ``--help``, a group, an unknown command or option) the full command
set, so the help, the error lines and the exit codes are typer's own for all of it
(tests/e2e/test_lazy_app.py compares the two byte for byte). This module imports nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as in tidegate.cli: importing typing is not free
if TYPE_CHECKING:
    import typer

ENGINE_COMMANDS = frozenset(
    {
        "run",
        "review",
        "debug",
        "recover",
        "gc",
        "runs",
        "status",
        "read",
        "resume",
        "diff",
        "apply",
        "discard",
        "undo",
    }
)
OPERATOR_REVIEW = "review-records"
"""The review records' group, which ``tidegate review run|read`` reach (``route_review``)."""


def route_review(args: list[str]) -> list[str]:
    """``tidegate review run|read ...`` are the review records; ``tidegate review --...``
    stays the engine's review command."""
    if len(args) >= 2 and args[0] == "review" and args[1] in ("run", "read"):
        return [OPERATOR_REVIEW, *args[1:]]
    return args


def needs_groups(args: list[str]) -> bool:
    """Whether ``tidegate ARGS`` needs more than the engine commands."""
    return not args or args[0] not in ENGINE_COMMANDS or route_review(args) != args


def add_groups(app: typer.Typer) -> None:
    """Add every command group to ``app``, in the order the help lists them."""
    from tidegate.cli.acp import acp_command
    from tidegate.cli.export import export_app
    from tidegate.cli.gym import gym_app
    from tidegate.cli.init import init_command
    from tidegate.cli.inspector import inspect_command
    from tidegate.cli.ledger import ledger_app
    from tidegate.cli.mcp import mcp_app
    from tidegate.cli.operator import operator_apps
    from tidegate.cli.shell import completion_command
    from tidegate.cli.tools import tools_app

    app.command(name="init")(init_command)
    app.command(name="completion")(completion_command)
    app.add_typer(ledger_app, name="ledger")
    app.add_typer(tools_app, name="tools")
    app.add_typer(mcp_app, name="mcp")
    app.add_typer(gym_app, name="gym")
    app.command(name="inspect")(inspect_command)
    app.add_typer(export_app, name="export")
    app.command(name="acp")(acp_command)
    for operator_app in operator_apps():
        app.add_typer(operator_app, hidden=operator_app.info.name == OPERATOR_REVIEW)
