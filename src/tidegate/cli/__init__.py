"""The ``tidegate`` command line. Thin: parse, call a service, render.

``main`` first tries the fast path (``tidegate.cli.fast``: help, ``runs``, ``read``
without importing typer or the engine), then the typer application. ``app`` is loaded on
first use."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing typing is a fifth of this path's cost
if TYPE_CHECKING:
    from typing import Any

    from tidegate.cli.app import app

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point (``tidegate``): the exit code of the command ``argv`` names."""
    args = sys.argv[1:] if argv is None else argv
    from tidegate.cli.fast import dispatch

    code = dispatch(args)
    if code is not None:
        return code
    from tidegate.cli.app import main as full

    return full(args)


def __getattr__(name: str) -> Any:
    if name == "app":
        from tidegate.cli.app import app as typer_app

        # Importing the submodule bound the package's ``app`` to it; the name means the
        # typer application, as it did when this module imported it eagerly.
        globals()["app"] = typer_app
        return typer_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
