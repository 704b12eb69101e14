"""Relative paths the user types are the user's: resolved against the directory the command
runs in, when it is parsed, not wherever the run later looks (a gym's scratch repository, an
objective file's directory, a task directory, a SWE-bench instance's clone)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.e2e._operator import op
from tidegate.gym.swe_synthetic import build_mirrors, shipped_instances

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


def _script(path: Path) -> None:
    path.write_text(json.dumps({"planner": "scripted", "attempts": [{"plan": "fix add", "objective": FIX}]}))  # fmt: skip


def test_a_gym_contestant_script(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _script(tmp_path / "fix.json")
    monkeypatch.chdir(tmp_path)
    res = op(
        capsys, "gym", "run", "safe-change-dirty-tree", "--contestant", "scripted:./fix.json",
        "--state-root", str(tmp_path / "state"), "--json",
    )  # fmt: skip
    assert res.code == 0, res.err
    assert res.json()["status"] == "succeeded"


def test_a_run_planner_script_beside_an_objective_file_elsewhere(
    committed_repo: Repo, tmp_path: Path
) -> None:
    """The objective file's directory is where its own relative paths start, not the
    planner's."""
    _script(committed_repo.root / "fix.json")
    (tmp_path / "objectives").mkdir()
    (tmp_path / "objectives" / "fix.txt").write_text("Fix add.\n")
    res = tidegate_cli(
        "run", "--planner", "scripted:fix.json", "--objective-file",
        str(tmp_path / "objectives" / "fix.txt"), "--verify", "true", "--json",
        cwd=committed_repo.root,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "return a + b" in committed_repo.read("calc.py")


def test_a_ledger_run_planner_script(committed_repo: Repo, tmp_path: Path) -> None:
    """``ledger run`` starts its objectives in the task directory; the script is the
    caller's."""
    task = tmp_path / "tasks" / "calc"
    init = tidegate_cli("ledger", "init", str(task), "--route", "small", "--brief", "Fix add")
    assert init.returncode == 0, init.stderr
    _script(committed_repo.root / "fix.json")
    res = tidegate_cli(
        "ledger", "run", str(task), "--repo", ".", "--planner", "scripted:./fix.json",
        "--verify", "true", cwd=committed_repo.root,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "return a + b" in committed_repo.read("calc.py")


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("mirrors")
    build_mirrors(directory)
    return directory


def test_swe_repos_default_to_the_callers_directory(mirrors: Path, tmp_path: Path) -> None:
    res = tidegate_cli(
        "gym", "swe", str(shipped_instances()), "--oracle", "--instance", "tidegate-gym__calc-1",
        "--allow-uncontained",
        "--state-root", str(tmp_path / "s"), "--json", cwd=mirrors,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout)["resolved"] == 1


def test_a_relative_swe_python_is_the_callers(mirrors: Path, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    os.symlink(sys.executable, tmp_path / "bin" / "python")
    res = tidegate_cli(
        "gym", "swe", str(shipped_instances()), "--oracle", "--instance", "tidegate-gym__calc-1",
        "--allow-uncontained",
        "--repos", str(mirrors), "--python", "bin/python", "--state-root", str(tmp_path / "s"),
        "--json", cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    (result,) = json.loads(res.stdout)["results"]
    assert result["status"] == "resolved" and result["python"] == str(tmp_path / "bin" / "python")
