"""Which git subcommands a piece of code runs (``Git.run``, the one-shot calls): for tests
that prove a shortcut took no process."""

from __future__ import annotations

import pytest

from tidegate.git import command as git_module


def record_git_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, each one-shot git call's subcommand is appended to the list returned."""
    calls: list[str] = []
    original = git_module.Git.run

    def run(self: git_module.Git, *args: str, **kwargs: object) -> object:
        calls.append(args[0])
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(git_module.Git, "run", run)
    return calls
