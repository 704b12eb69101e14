"""git's conventions on the command line: ``--version``, ``-h`` beside ``--help`` (on every
command, through the fast path and typer alike), "did you mean" for a mistyped command."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from tests.conftest import tidegate_cli


def test_version_and_short_help(tmp_path: Path) -> None:
    shown = tidegate_cli("--version", cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (0, f"tidegate {version('tidegate')}\n")
    assert tidegate_cli("-h", cwd=tmp_path).stdout == tidegate_cli("--help", cwd=tmp_path).stdout
    for command in (["run"], ["runs"], ["read"], ["ledger"], ["mcp", "serve"]):
        short, long = (
            tidegate_cli(*command, "-h", cwd=tmp_path),
            tidegate_cli(*command, "--help", cwd=tmp_path),
        )
        assert short.returncode == 0 and short.stdout == long.stdout, command
        assert "-h, --help" in short.stdout, command


def test_a_mistyped_command_gets_a_suggestion(tmp_path: Path) -> None:
    shown = tidegate_cli("rn", cwd=tmp_path)
    assert shown.returncode == 2
    assert shown.stderr.strip().endswith("Did you mean 'run', 'runs'?"), shown.stderr
