"""A warm server for a test: started through the console script's entry point, in
the test's own runtime directory (``tests/conftest.py`` gives each test one), stopped and
killed at the end."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TIDEGATE = [sys.executable, "-c", "import sys; from tidegate.cli import entry; sys.exit(entry())"]
"""The console script's body (``tidegate.cli.entry``) under this interpreter: a server and
its clients started so agree on the interpreter, from any directory."""
EDIT = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TIDEGATE, *args],
        env={**os.environ, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def served(env: dict[str, str] | None = None) -> int:
    res = cli("warm", "status", "--json", env=env)
    return int(json.loads(res.stdout).get("served", -1)) if res.returncode == 0 else -1


@pytest.fixture
def warm_server() -> Iterator[int]:
    """The pid of a running warm server."""
    started = cli("warm", "start", "--idle-timeout", "120", "--json")
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    try:
        yield pid
    finally:
        cli("warm", "stop")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
