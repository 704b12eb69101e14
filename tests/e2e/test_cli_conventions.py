"""git's conventions on the command line: ``--version``, ``-h`` beside ``--help`` (on every
command, through the fast path and typer alike), "did you mean" for a mistyped command."""

from __future__ import annotations

import subprocess
import sys
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
    """As git says it, in one line, before typer or the engine is imported; a group's
    sub-commands alike; exit 2, as every usage error."""
    cases = {
        ("rn",): "'rn' is not a tidegate command. The most similar commands are run, runs",
        ("rnu", "--objective", "x"): "'rnu' is not a tidegate command. The most similar "
        "command is run",
        ("xyzzy",): "'xyzzy' is not a tidegate command. See 'tidegate --help'.",
        ("tools", "lst"): "'lst' is not a tidegate tools command. The most similar command is list",
        ("ledger", "stauts", "tasks"): "'stauts' is not a tidegate ledger command. The most "
        "similar command is status",
    }
    for args, said in cases.items():
        shown = tidegate_cli(*args, cwd=tmp_path)
        assert (shown.returncode, shown.stdout) == (2, ""), args
        assert shown.stderr == f"tidegate: {said}\n", shown.stderr
    log = tmp_path / "importtime.txt"
    argv = [sys.executable, "-X", "importtime", "-m", "tidegate", "gym", "rnu-suite"]
    with log.open("w") as err:
        assert subprocess.run(argv, cwd=tmp_path, stderr=err, check=False).returncode == 2
    assert "typer" not in log.read_text() and "tidegate.flow" not in log.read_text()
    # what the table knows typer knows: the hidden review records and a real sub-command
    assert tidegate_cli("review", "run", "--help", cwd=tmp_path).returncode == 0
    assert tidegate_cli("gym", "run-suite", "--help", cwd=tmp_path).returncode == 0
