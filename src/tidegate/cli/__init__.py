"""The ``tidegate`` command line. Thin: parse, call a service, render.

``main`` first tries the fast path (``tidegate.cli.fast``: help, ``runs``, ``read``
without importing typer or the engine), then the typer application: the engine commands
alone for a command line naming one of them, every command otherwise
(``tidegate.cli.groups``). ``app`` (every command) is loaded on first use."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing typing is a fifth of this path's cost
if TYPE_CHECKING:
    from typing import Any

    import typer

    app: typer.Typer

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point (``tidegate``): the exit code of the command ``argv`` names."""
    args = sys.argv[1:] if argv is None else argv
    from tidegate.cli.fast import dispatch

    code = dispatch(args)
    if code is not None:
        return code
    if args[:1] and args[0] in ("run", "review", "debug"):
        # The run's first git work (lock, T0's scan) goes on while the engine is imported.
        from tidegate.flow import headstart

        headstart.begin(list(args))
        try:
            from tidegate.cli.app import main as full

            return full(args)
        finally:
            headstart.discard()
    from tidegate.cli.app import main as full

    return full(args)


def __getattr__(name: str) -> Any:
    if name == "app":
        from tidegate.cli.app import full_app

        # Importing the submodule bound the package's ``app`` to it; the name means the
        # whole typer application (every command), as it did when this module imported it
        # eagerly.
        typer_app = full_app()
        globals()["app"] = typer_app
        return typer_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
