"""``tidegate inspect``: a repository's recorded runs as a read-only local web page.

Prints the address (127.0.0.1, a free port or ``--port``, a fresh random token in the path)
and serves until Ctrl-C. The server is ``tidegate.inspector.server``: GET only, no write
endpoint, nothing served to another host, nothing fetched from anywhere.
"""

from __future__ import annotations

from typing import Annotated

import typer


def inspect_command(
    repo: Annotated[str, typer.Option("--repo", help="The repository whose runs to show.")] = ".",
    state_root: Annotated[
        str | None, typer.Option("--state-root", help="Where the run store is.")
    ] = None,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="The port (default: a free one).")
    ] = 0,
) -> None:
    """Browse recorded runs in a read-only local web page.

    Serves the runs of REPO on 127.0.0.1 behind a random token until Ctrl-C."""
    from tidegate.errors import UsageError
    from tidegate.inspector.server import Inspector

    try:
        inspector = Inspector(repo, state_root, port)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    typer.echo(f"tidegate inspect: the runs of {inspector.root}, read-only, at")
    typer.echo(f"  {inspector.url}")
    typer.echo("(only this machine can connect; keep the address private; Ctrl-C stops)")
    try:
        inspector.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        inspector.httpd.server_close()
