"""An engine command runs on the engine commands alone (issue #12), untimed.

``tidegate run`` (review, debug, recover, runs, read, resume) is handed a typer
application without the command groups (ledger, tools, mcp, gym, the operator's), so it
imports none of their modules. Two promises, each checked against real subprocesses: what
the user sees (help, error lines, exit codes) is byte for byte what the full application
prints, and a ``run --json`` loads neither the groups' modules nor rich nor a model SDK.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.e2e.test_startup import FIX, _heavy, _loaded

FULL = "import sys; from tidegate.cli.app import main; sys.exit(main(sys.argv[1:], full=True))"
"""The full application (every command), whatever the command line."""

ENGINE = ["run", "review", "debug", "recover", "runs", "read", "resume"]

CASES = [
    *([command, "--help"] for command in ENGINE),
    ["run", "--bogus"],
    ["run", "--jsn"],  # typer suggests --json
    ["run", "--max-attempts", "99"],
    ["run", "--mode", "nope"],
    ["run", "--objective"],
    ["run", "stray"],
    ["run", "--objective", "x", "--objective-file", "y"],
    ["run", "--verify", "true"],  # no objective: a usage error before any run
    ["review", "--max-attempts", "2"],
    ["debug", "--help", "--json"],
    ["read"],
    ["resume"],
    ["recover", "--rollback=yes"],
    ["runs", "--limit", "0"],
    ["bogus"],
    ["rn"],
    ["--bogus"],
    ["review", "run", "--help"],
    ["review", "read", "--help"],
    ["ledger", "--help"],
    ["mcp", "--help"],
    ["inspect", "--help"],
]
"""Engine commands (the lazy application), and lines only the full one takes."""

GROUP_MODULES = (
    "tidegate.cli.ledger",
    "tidegate.cli.tools",
    "tidegate.cli.mcp",
    "tidegate.cli.gym",
    "tidegate.cli.inspector",
    "tidegate.cli.operator",
    "tidegate.cli.render",
    "tidegate.ledger",
    "tidegate.gym",
    "tidegate.operator",
    "tidegate.tools",
    "tidegate.mcp.server",
    "tidegate.inspector",
    "http.server",
    "tidegate.models",
    "tidegate.agent",
    "mcp",
    "openai",
    "anthropic",
    "httpx",
    "rich",
)
"""Not needed by a ``run --json`` without --model or --agent."""


def _full(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", FULL, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("columns", ["80", "57"])
def test_the_lazy_application_says_what_the_full_one_says(
    committed_repo: Repo, columns: str
) -> None:
    """Every case at 80 columns; the help, which click wraps, at a narrow width too."""
    env = {"COLUMNS": columns}
    for args in CASES if columns == "80" else [c for c in CASES if "--help" in c]:
        lazy = tidegate_cli(*args, cwd=committed_repo.root, env=env)
        full = _full(*args, cwd=committed_repo.root, env=env)
        assert (lazy.returncode, lazy.stdout, lazy.stderr) == (
            full.returncode,
            full.stdout,
            full.stderr,
        ), args
        assert lazy.stdout or lazy.stderr, args
    assert committed_repo.git("status", "--porcelain") == ""  # none of them changed anything


def test_the_full_application_lists_the_groups_the_lazy_one_leaves_out(
    committed_repo: Repo,
) -> None:
    """The comparison above means something: the two applications are not the same."""
    code = "import sys; from tidegate.cli.app import app; app(args=['--help'], prog_name='t')"
    lazy = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    ).stdout
    full = _full("--help", cwd=committed_repo.root, env={}).stdout
    assert "ledger" in full and "gym" in full and "run" in full
    assert "ledger" not in lazy and "gym" not in lazy and "resume" in lazy


@pytest.mark.parametrize("command", ["run", "review"])
def test_a_json_run_loads_no_other_command_no_rich_and_no_sdk(
    committed_repo: Repo, command: str
) -> None:
    args = ["--objective", FIX] if command == "run" else []
    loaded = _loaded(command, *args, "--verify", "true", "--json", cwd=committed_repo.root)
    assert "tidegate.flow.transaction" in loaded  # it did run
    assert _heavy(loaded, GROUP_MODULES) == []


UNUSED_BY_A_PYTHON_EDIT = (
    "tomllib",  # no TOML file to read or check
    "unidiff",  # no diff proposal
    "tidegate.validate.hunks",
    "tidegate.validate.edit_blocks",  # no SEARCH/REPLACE blocks
    "tree_sitter",  # Python is checked through ast
    "tidegate.validate.scope.javascript",
    "tidegate.flow.land",  # only a rebase reads a landed change
    "tidegate.planners.rebase",
    "tidegate.planners.scripted",
    "tidegate.workspace.fingerprint",  # T0 has the trees: no scan of its own
    "platformdirs",  # the default state root is answered without it on Linux
)
"""Imported only where used: a structured one-line edit of a Python file (the warm run
``bench/warm_run.py`` times, whose CPU issue #26 counts) loads none of them."""


def test_a_python_edit_loads_no_parser_it_does_not_use(committed_repo: Repo) -> None:
    loaded = _loaded(
        "run", "--objective", FIX, "--verify", "true", "--json", cwd=committed_repo.root
    )
    assert "tidegate.validate.syntax" in loaded  # it did check the edit
    assert _heavy(loaded, UNUSED_BY_A_PYTHON_EDIT) == []


def test_a_text_run_still_renders_with_rich(committed_repo: Repo) -> None:
    res = tidegate_cli("run", "--objective", FIX, "--verify", "true", cwd=committed_repo.root)
    assert res.returncode == 0, res.stderr
    assert "succeeded" in res.stdout and "attempt 1" in res.stderr
    assert "return a + b" in (committed_repo.root / "calc.py").read_text()
