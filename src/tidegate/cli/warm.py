"""``tidegate warm start|stop|status``: the warm server (``tidegate.cli.warm_server``).

While it runs, ``tidegate run``, ``review`` and ``debug`` of this user, started in the
server's own context, run in a fork of it instead of a fresh interpreter.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

warm_app = typer.Typer(
    name="warm",
    help="A server that keeps the engine imported, for runs that start at once.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def _say(as_json: bool, payload: dict[str, object], line: str) -> None:
    typer.echo(json.dumps(payload, sort_keys=True) if as_json else line)


@warm_app.command()
def start(
    idle_timeout: Annotated[
        float,
        typer.Option("--idle-timeout", min=1.0, help="Seconds without a run before it exits."),
    ] = 1800.0,
    as_json: JsonOpt = False,
) -> None:
    """Start the warm server in the background (one per user and runtime directory)."""
    from tidegate.cli.warm_server import start as start_server

    try:
        pid, directory = start_server(idle_timeout)
    except OSError as exc:
        typer.echo(f"tidegate: warm start: {exc}", err=True)
        raise typer.Exit(1) from None
    _say(
        as_json,
        {"pid": pid, "directory": directory, "idle_timeout_s": idle_timeout},
        f"warm server running (pid {pid}, in {directory})",
    )


@warm_app.command()
def stop(as_json: JsonOpt = False) -> None:
    """Stop the warm server (after the runs it has started end)."""
    from tidegate.cli.warm_server import request, wait_stopped

    status = request(b"stop")
    if status is None:
        _say(as_json, {"running": False}, "no warm server running")
        return
    if not wait_stopped():
        typer.echo(f"tidegate: warm stop: pid {status['pid']} is still running", err=True)
        raise typer.Exit(1)
    _say(as_json, {"running": False, "pid": status["pid"]}, f"warm server {status['pid']} stopped")


@warm_app.command()
def status(as_json: JsonOpt = False) -> None:
    """Whether a warm server is running, and how many runs it has served."""
    from tidegate.cli.warm_server import request

    answer = request(b"ping")
    if answer is None:
        _say(as_json, {"running": False}, "no warm server running")
        raise typer.Exit(1)
    _say(
        as_json,
        {"running": True, **answer},
        f"warm server running (pid {answer['pid']}, {answer['served']} runs served)",
    )
