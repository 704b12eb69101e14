"""``tidegate acp``: speak the Agent Client Protocol on stdio (``tidegate.acp``)."""

from __future__ import annotations

from typing import Annotated

import typer


def acp_command(
    model: Annotated[
        str,
        typer.Option(
            "--model", help="The model every prompt's run uses: openai:MODEL, scripted:PATH, ..."
        ),
    ],
    verify: Annotated[
        str | None, typer.Option("--verify", help="The verification command of every run.")
    ] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Attempts per run.")
    ] = 3,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="Most model requests per run.")
    ] = None,
    state_root: Annotated[
        str | None, typer.Option("--state-root", help="Where the run store is.")
    ] = None,
) -> None:
    """Drive guarded runs from an editor over ACP (stdio).

    An ACP client (Zed, JetBrains) sends prompts; each is a guarded run whose verified
    change is held and offered to the client as a diff to apply or discard."""
    from tidegate.acp.agent import Settings, serve
    from tidegate.flow.request import absolute_script

    settings = Settings(
        model=absolute_script(model) or model,
        verify=verify,
        state_root=state_root,
        max_attempts=max_attempts,
        max_steps=max_steps,
    )
    serve(settings)
