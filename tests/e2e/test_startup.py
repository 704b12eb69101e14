"""The fast path of ``tidegate --help``, ``runs`` and ``read`` (issue #12), untimed.

Two promises, each checked against real subprocesses: the fast path prints exactly what
the typer application prints (help, listings, reports, error lines and exit codes), and it
does not load the heavy libraries at all. The second is what keeps startup fast: the test
fails as soon as someone re-adds an eager import on these paths, whatever the machine's
speed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
TYPER = "import sys; from tidegate.cli.app import main; sys.exit(main(sys.argv[1:]))"
"""The typer application itself, without the fast path in front of it."""

ALWAYS_HEAVY = (
    "typer",
    "click",
    "openai",
    "anthropic",
    "httpx",
    "mcp",
    "tree_sitter",
    "tidegate.flow.transaction",
    "tidegate.agent",
    "tidegate.models",
    "tidegate.tools",
    "tidegate.planners",
)
"""Never needed to list or show recorded runs, nor for the help."""


def _typer(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TYPER, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def _loaded(*args: str, cwd: Path, env: dict[str, str] | None = None) -> set[str]:
    """The modules ``tidegate ARGS`` imports, from ``python -X importtime``."""
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tidegate", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in res.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _heavy(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == n or m.startswith(n + ".") for n in names))


@pytest.fixture
def recorded(committed_repo: Repo) -> Repo:
    """A repository with two recorded runs: one that succeeded, one that failed."""
    ok = tidegate_cli("run", "--objective", FIX, "--verify", "true", cwd=committed_repo.root)
    assert ok.returncode == 0, ok.stderr
    failed = tidegate_cli(
        "run", "--objective", FIX, "--verify", "false", "--max-attempts", "1",
        cwd=committed_repo.root,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    return committed_repo


@pytest.mark.parametrize("columns", ["80", "132"])
@pytest.mark.parametrize("args", [["--help"], []], ids=["help", "no-arguments"])
def test_the_fast_help_is_what_typer_renders(tmp_path: Path, args: list[str], columns: str) -> None:
    env = {"COLUMNS": columns}
    fast = tidegate_cli(*args, cwd=tmp_path, env=env)
    slow = _typer(*args, cwd=tmp_path, env=env)
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, slow.stdout, "")
    assert slow.returncode == 0 and "Commands:" in slow.stdout


def test_a_narrow_terminal_gets_typer_wrapping(tmp_path: Path) -> None:
    fast = tidegate_cli("--help", cwd=tmp_path, env={"COLUMNS": "60"})
    slow = _typer("--help", cwd=tmp_path, env={"COLUMNS": "60"})
    assert fast.stdout == slow.stdout and fast.returncode == 0


CASES = [
    ["runs"],
    ["runs", "--json"],
    ["runs", "--limit", "1"],
    ["runs", "--limit=1", "--json"],
    ["runs", "--limit", "0"],
    ["runs", "--bogus"],
    ["runs", "--help"],
    ["read", "latest"],
    ["read", "latest", "--json"],
    ["read", "latest", "--json", "--detail"],
    ["read", "--json", "latest"],
    ["read", "no-such-run"],
    ["read"],
]
"""Plain forms (answered by the fast path), and forms it hands to typer (errors, help)."""


def test_runs_and_read_say_what_the_typer_commands_say(recorded: Repo) -> None:
    for args in CASES:
        fast = tidegate_cli(*args, cwd=recorded.root)
        slow = _typer(*args, cwd=recorded.root, env={})
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            slow.returncode,
            slow.stdout,
            slow.stderr,
        ), args


def test_runs_outside_a_repository_and_read_outside_one(recorded: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for args in (["runs"], ["read", "latest"], ["runs", "--repo", str(recorded.root)]):
        fast = tidegate_cli(*args, cwd=outside)
        slow = _typer(*args, cwd=outside, env={})
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            slow.returncode,
            slow.stdout,
            slow.stderr,
        ), args


def test_help_and_runs_load_no_cli_framework_no_sdk_and_no_models(recorded: Repo) -> None:
    for args in (["--help"], ["runs"], ["runs", "--json"]):
        loaded = _loaded(*args, cwd=recorded.root)
        assert "tidegate.cli.fast" in loaded
        assert (
            _heavy(loaded, (*ALWAYS_HEAVY, "rich", "pydantic", "tidegate.records.report")) == []
        ), args


def test_read_loads_neither_rich_nor_the_report_model_nor_the_engines_store(
    recorded: Repo,
) -> None:
    plain = (*ALWAYS_HEAVY, "rich", "pydantic", "tidegate.flow", "subprocess", "typing")
    plain += ("dataclasses", "pathlib", "hashlib", "tidegate.records.report")
    for args in (["read", "latest", "--json"], ["read", "latest"], ["runs"]):
        loaded = _loaded(*args, cwd=recorded.root)
        assert "tidegate.cli.records" in loaded, args
        assert _heavy(loaded, plain) == [], args
        # Of the store, only the read path (no typing, no dataclasses).
        store = {m for m in loaded if m.startswith("tidegate.store")}
        lean = {"tidegate.store", "tidegate.store.delta", "tidegate.store.evidence"}
        lean |= {"tidegate.store.reading", "tidegate.store.locate", "tidegate.store.views"}
        lean |= {"tidegate.store.run_row"}
        assert store <= lean | {"tidegate.store.report_check"}, (args, store - lean)


def test_a_terminal_gets_the_styled_report_without_rich(recorded: Repo) -> None:
    """FORCE_COLOR says standard output is a terminal (styles): both paths write them."""
    shown = _loaded("read", "latest", cwd=recorded.root, env={"FORCE_COLOR": "1"})
    assert _heavy(shown, (*ALWAYS_HEAVY, "rich", "pydantic")) == []
    fast = tidegate_cli("read", "latest", cwd=recorded.root, env={"FORCE_COLOR": "1"})
    slow = _typer("read", "latest", cwd=recorded.root, env={"FORCE_COLOR": "1"})
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, slow.stdout, slow.stderr)
    assert "\x1b[1;31mfailed\x1b[0m" in fast.stdout  # bold red, as rich styled it
