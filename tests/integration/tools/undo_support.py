"""Helpers for the undo-of-tool-calls tests: real ``tidegate tools call`` subprocesses, the
byte store they fill, and the undo command."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import Repo, tidegate_cli

UNDO = ("undo",)
"""The command that undoes tool calls (``--call`` / ``--session``)."""


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tools_call(
    repo: Repo, tool: str, env: dict[str, str] | None = None, **arguments: Any
) -> dict[str, Any]:
    proc = tidegate_cli(
        "tools", "call", tool, "--args", json.dumps(arguments), cwd=repo.root, env=env
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    assert result["ok"], (proc.stdout, proc.stderr)
    return result


def repo_dir() -> Path:
    """The repository's directory in the test's state root (there is one repository)."""
    state = Path(os.environ["TIDEGATE_STATE_ROOT"])
    [directory] = [p for p in state.iterdir() if (p / "undo").is_dir()]
    return directory


def sessions() -> list[dict[str, Any]]:
    """The byte store's session indexes, oldest first."""
    found = [json.loads(p.read_text()) for p in (repo_dir() / "undo").glob("*.json")]
    return sorted(found, key=lambda s: float(s["created"]))


def last_call() -> str:
    """``SESSION:CALL`` of the newest session's last call."""
    session = sessions()[-1]
    return f"{session['session']}:{session['calls'][-1]['call_id']}"


def undo(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return tidegate_cli(*UNDO, *args, cwd=repo.root)


def dirty(repo: Repo) -> None:
    """Staged, unstaged and untracked work on top of the committed project."""
    repo.write("staged.txt", "staged\n")
    repo.git("add", "staged.txt")
    repo.write("calc.py", repo.read("calc.py") + "# unstaged edit\n")
    repo.write("notes.txt", "untracked\n")
