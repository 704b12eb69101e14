"""``tidegate-probe``, the console script of the operator-probe compatibility surface
(``simard_operator_probe`` in the operator runtime contracts): every name the contract
gives it answers as its canonical command does, ``--help`` lists them, and anything else
is one error line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import tidegate_cli

SP = "single-process"
SPEC_NAMES = (  # operator-runtime-contracts.md: "Compatibility surface" of each mode
    "bootstrap-run", "engineer-loop-run", "engineer-read", "terminal-run", "terminal-run-file",
    "terminal-recipe-list", "terminal-recipe-show", "terminal-recipe-run", "terminal-read",
    "meeting-run", "meeting-read", "goal-curation-run", "improvement-curation-run",
    "improvement-curation-read", "review-run", "review-read",
)  # fmt: skip
SCRIPT = Path(sys.executable).parent / "tidegate-probe"


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script (pyproject's ``tidegate-probe``)."""
    assert SCRIPT.is_file(), "tidegate-probe is not installed beside this interpreter"
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_name_the_contract_gives(flag: str) -> None:
    res = probe(flag)
    assert res.returncode == 0 and res.stderr == ""
    listed = {line.split()[0] for line in res.stdout.splitlines() if line.startswith("  ")}
    assert set(SPEC_NAMES) <= listed
    assert "tidegate engineer terminal-recipe" in res.stdout  # what each one runs


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((), "give a command"),
        (("--verbose",), "unknown option '--verbose'"),
        (("terminal-dance",), "unknown legacy command 'terminal-dance'"),
    ],
)
def test_anything_else_is_one_error_line(args: tuple[str, ...], words: str) -> None:
    res = probe(*args)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("tidegate-probe: error: ")
    assert words in res.stderr and "--help" in res.stderr


def test_the_terminal_names_answer_as_their_canonical_commands(tmp_path: Path) -> None:
    root = tmp_path / "state"
    run = probe("terminal-run", SP, "command: echo probe-terminal-ok", str(root), "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["outcome"] == "success"
    for legacy, canonical in (
        (("terminal-read", SP, str(root)), ("engineer", "terminal-read", SP, str(root))),
        (("terminal-recipe-list",), ("engineer", "terminal-recipe-list")),
        (
            ("terminal-recipe-show", "foundation-check"),
            ("engineer", "terminal-recipe-show", "foundation-check"),
        ),
    ):
        old, new = probe(*legacy, "--json"), tidegate_cli(*canonical, "--json")
        assert old.returncode == new.returncode == 0, old.stderr
        assert json.loads(old.stdout) == json.loads(new.stdout)
    objective = tmp_path / "steps.txt"
    objective.write_text("command: echo from-a-file\nexpect: from-a-file\n")
    from_file = probe("terminal-run-file", SP, str(objective), str(root), "--json")
    assert from_file.returncode == 0, from_file.stderr
    recipe = probe("terminal-recipe-run", SP, "foundation-check", str(root), "--json")
    assert recipe.returncode == 0, recipe.stderr
    assert json.loads(recipe.stdout)["recipe"] == "foundation-check"


def test_a_name_passes_help_on_to_its_command() -> None:
    res = probe("terminal-run", "--help")
    assert res.returncode == 0 and "TOPOLOGY" in res.stdout.upper()
