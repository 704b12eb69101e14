"""The ``tidegate`` command line. Thin: parse, call a service, render.

``main`` first tries the fast path (``tidegate.cli.fast``: help, ``runs``, ``read``,
``completion`` and a mistyped command's one line, without importing typer or the engine), then the typer application: the engine commands
alone for a command line naming one of them, every command otherwise
(``tidegate.cli.groups``). ``app`` (every command) is loaded on first use."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing typing is a fifth of this path's cost
if TYPE_CHECKING:
    from typing import Any

    import typer

    app: typer.Typer

__all__ = ["app", "entry", "main"]


def entry() -> int:
    """The console script: ``main``, then, after a run, an exit that skips the
    interpreter's teardown when nothing is left for it to do. Tearing down the engine's
    modules (pydantic's schemas, typer, ~400 modules) takes 50-70 ms after a run has
    finished and said everything. Only after a run whose body closed its store (SQLite's
    WAL checkpointed, ``cli.runcmd.finished_cleanly``), with no exit handler registered and
    no thread but this one: the streams are flushed and the process ends at once. Every
    other command (which may hold connections or files the teardown would close) exits
    the ordinary way."""
    code = main()
    runcmd = sys.modules.get("tidegate.cli.runcmd")
    if runcmd is None or not getattr(runcmd, "finished_cleanly", False):
        return code
    import atexit
    import os
    import threading

    pending = getattr(atexit, "_ncallbacks", None)
    if pending is None or pending() or threading.active_count() > 1:
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # a closed pipe: the ordinary exit reports it as usual
        return code
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Entry point (``tidegate``): the exit code of the command ``argv`` names."""
    args = sys.argv[1:] if argv is None else argv
    if "=run" in _environ("TIDEGATE_FAULT"):
        # The crash tests' ``=run`` fault runs its command through the one runner, which
        # registers itself with ``tidegate.disk.faults`` when it loads.
        import tidegate.exec.runner  # noqa: F401
    from tidegate.cli.fast import dispatch

    code = dispatch(args)
    if code is not None:
        return code
    if args[:1] and args[0] in ("run", "review", "debug"):
        # A plain command line runs without typer, with a head start (tidegate.cli.runcmd).
        from tidegate.cli.runcmd import dispatch as run_dispatch

        code = run_dispatch(list(args))
        if code is not None:
            return code
    from tidegate.cli.app import main as full

    return full(args)


def _environ(name: str) -> str:
    import os

    return os.environ.get(name, "")


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
