"""A verify command the repository names (``[tool.tidegate.run] verify`` in its committed
``pyproject.toml``, a tracked ``.tidegate/config.toml``, or one detected from its
manifests) is a command the repository chose: with no bubblewrap it is refused unless the
user approves running it uncontained, and the choice is shown as a note, never silent.

"No bubblewrap" is made real by pointing ``TIDEGATE_BWRAP`` at a program that does not
exist, as in test_one_guard. Each attack plants a marker-writing command; the marker must
not exist afterwards and the user's work tree and index must be byte-identical. Each test
fails if the CLI hands the repository's command to the run as the user's own
(``origin="user"``), or drops the note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli

NO_BWRAP = {"TIDEGATE_BWRAP": "/nonexistent/bwrap"}
OBJECTIVE = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


def _planted(repo: Repo, marker: Path, how: str) -> None:
    command = f"touch {marker}"
    if how == "pyproject":
        repo.write("pyproject.toml", f'[tool.tidegate.run]\nverify = "{command}"\n')
    elif how == "tracked-local":
        repo.write(".tidegate/config.toml", f'[run]\nverify = "{command}"\n')
    else:  # detected: a package.json test script is the repository's code
        repo.write("package.json", json.dumps({"scripts": {"test": command}}))
        repo.write("go.mod", "module x\n")  # would come second
    repo.git("add", "-f", "-A")
    repo.git("commit", "-q", "-m", "planted")


@pytest.mark.parametrize("how", ["pyproject", "tracked-local", "detected"])
def test_the_repositorys_verify_is_refused_uncontained_without_approval(
    committed_repo: Repo, tmp_path: Path, how: str
) -> None:
    repo = committed_repo
    marker = tmp_path / "ran"
    _planted(repo, marker, how)
    repo.write("README.md", "# calc\n\nunstaged\n")
    repo.write("notes.txt", "untracked\n")
    before = repo.tree_state(with_mtimes=True)
    res = tidegate_cli("run", "--objective", OBJECTIVE, "--json", cwd=repo.root, env=NO_BWRAP)
    assert res.returncode == 1, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["status"] == "failed"
    assert (
        "refused to run a command from the repository's files uncontained" in (report["message"])
    ), report["message"]
    assert not marker.exists()
    assert repo.tree_state(with_mtimes=True) == before  # .git/index included
    # the choice was said, on stderr before the run and in the report
    shown = "npm test" if how == "detected" else f"touch {marker}"
    assert f"tidegate: note: no --verify: using `{shown}`" in res.stderr
    assert any("a command the repository chose" in n for n in report["notes"]), report["notes"]


def test_the_users_approval_lets_it_run_and_says_whose_it_is(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    marker = tmp_path / "ran"
    _planted(repo, marker, "pyproject")
    res = tidegate_cli(
        "run", "--objective", OBJECTIVE, "--containment", "none", "--json",
        cwd=repo.root, env=NO_BWRAP,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert marker.exists()
    report = json.loads(res.stdout)
    assert (
        "a command from the repository's files, approved by --containment none"
        in (report["containment"]["reason"])
    ), report["containment"]


def test_the_users_own_verify_wins_and_runs_as_theirs(committed_repo: Repo, tmp_path: Path) -> None:
    """The repository's command never replaces the user's ``[run] verify``; the user's
    runs as the user's own command (uncontained when there is no bubblewrap, and said so)."""
    repo = committed_repo
    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    _planted(repo, theirs, "pyproject")
    (repo.root / ".tidegate").mkdir()
    (repo.root / ".tidegate" / "config.toml").write_text(f'[run]\nverify = "touch {mine}"\n')
    res = tidegate_cli("run", "--objective", OBJECTIVE, "--json", cwd=repo.root, env=NO_BWRAP)
    assert res.returncode == 0, res.stdout + res.stderr
    assert mine.exists() and not theirs.exists()
    assert f"using `touch {mine}` from .tidegate/config.toml" in res.stderr


def test_verify_none_runs_nothing_the_repository_names(
    committed_repo: Repo, tmp_path: Path
) -> None:
    repo = committed_repo
    marker = tmp_path / "ran"
    _planted(repo, marker, "detected")
    res = tidegate_cli(
        "run", "--objective", OBJECTIVE, "--verify", "none", "--json",
        cwd=repo.root, env=NO_BWRAP,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert not marker.exists()
    report = json.loads(res.stdout)
    assert report["verify"] is None
    assert "--verify none: no verify command runs" in report["notes"]
