"""``tidegate completion SHELL``: the typer command (its help and its errors); the scripts
and the candidates they ask for are ``cli.completion``'s, which the fast path answers
without typer."""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import typer


def completion_command(
    shell: Annotated[
        Literal["bash", "zsh", "fish"], typer.Argument(help="The shell: bash, zsh or fish.")
    ],
) -> None:
    """Print a shell completion script: bash, zsh or fish."""
    from tidegate.cli.completion import script

    sys.stdout.write(script(shell))
