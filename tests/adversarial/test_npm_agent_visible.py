"""An agent CLI installed the npm way (a launcher script in ``node_modules/<pkg>/bin`` that
loads sibling packages, run by an interpreter named on its ``#!`` line) must be able to
start under containment: the whole ``node_modules`` tree and the interpreter's
installation are in the view, read-only, even inside HOME (where only named programs'
installations are taken, never HOME itself)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import requires_containment
from tidegate.exec.containment import ContainmentPolicy
from tidegate.exec.guard import Clearance, Origin
from tidegate.exec.runner import run_command
from tidegate.exec.view import toolchain_dirs


def _npm_install(prefix: Path) -> Path:
    modules = prefix / "lib" / "node_modules"
    launcher = modules / "fakeagent" / "bin" / "agent.sh"
    launcher.parent.mkdir(parents=True)
    sibling = modules / "fakeagent-linux-x64" / "native.txt"
    sibling.parent.mkdir(parents=True)
    sibling.write_text("native part\n")
    launcher.write_text(
        '#!/bin/sh\nexec cat "$(dirname "$0")/../../fakeagent-linux-x64/native.txt"\n'
    )
    launcher.chmod(0o755)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "fakeagent").symlink_to(launcher)
    return prefix / "bin" / "fakeagent"


def test_the_node_modules_tree_of_a_named_program_is_in_the_view(tmp_path: Path) -> None:
    home = tmp_path / "home"
    program = _npm_install(home / ".npm-global")
    dirs = toolchain_dirs(None, [str(program.resolve())], home=str(home), hidden=[])
    assert str((home / ".npm-global" / "lib" / "node_modules").resolve()) in dirs
    assert str(home.resolve()) not in dirs  # never HOME itself


@requires_containment
def test_an_npm_installed_agent_starts_under_containment(
    tmp_path: Path, monkeypatch: object
) -> None:
    home = tmp_path / "home"
    program = _npm_install(home / ".npm-global")
    work = tmp_path / "work"
    work.mkdir()
    policy = ContainmentPolicy(
        required=True, network=False, writable=(work,), executables=(str(program.resolve()),)
    )
    res = run_command(
        [str(program.resolve())],
        work,
        20,
        tmp_path / "spill",
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
        clearance=Clearance(Origin.AGENT),
        containment=policy,
    )
    assert res.ok, res.stderr_tail
    assert res.stdout_tail == "native part\n"
