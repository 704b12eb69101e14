"""The one interpreter tidegate runs shell strings with, and how it is described.

A command string is only ever executed as ``[executable, *argv_prefix, command]``; the
description the model sees (``describe()``) is computed from the same immutable value, so
what the prompt promises and what the runner spawns cannot drift apart. The user's login
shell, ``$SHELL`` and the terminal play no part.
"""

from __future__ import annotations

import os
from functools import cache

import msgspec

from tidegate.errors import CapabilityMismatch


class Interpreter(msgspec.Struct, frozen=True):
    """An executable that takes a command string after a fixed argument prefix."""

    executable: str
    argv_prefix: tuple[str, ...]
    dialect: str
    path_style: str
    stdin: str = "closed"
    tty: bool = False
    interactive: bool = False

    def argv(self, command: str) -> list[str]:
        """The exact argv that runs ``command``: the string is one argument, never split."""
        return [self.executable, *self.argv_prefix, command]

    def describe(self) -> dict[str, object]:
        """The command environment as the prompt publishes it (its camelCase keys)."""
        return {
            "executable": self.executable,
            "argumentsPrefix": list(self.argv_prefix),
            "commandMode": "shell_string",
            "shell": os.path.basename(self.executable),
            "dialect": self.dialect,
            "pathStyle": self.path_style,
            "interactive": self.interactive,
            "stdin": self.stdin,
            "tty": self.tty,
        }


POSIX_SH = Interpreter(
    executable="/bin/sh", argv_prefix=("-c",), dialect="posix-sh", path_style="posix"
)


@cache
def host_interpreter() -> Interpreter:
    """The host's interpreter: one value per process.

    Raises CapabilityMismatch when it cannot be executed, so a run that needs commands
    fails before its first model request rather than at its first command.
    """
    if not os.access(POSIX_SH.executable, os.X_OK):
        raise CapabilityMismatch(f"{POSIX_SH.executable} is not an executable interpreter")
    return POSIX_SH
