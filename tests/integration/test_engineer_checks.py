"""The engineer's host-side verification against real git states and real guarded runs:
"PATH holds the merge the run wrote, as an unstaged edit" holds only while PATH's bytes
are the ones the run's apply-back wrote and git shows them unstaged -- not for a path
git merely lists as modified (the user's own edit), not after the bytes changed again or
were put back, not for a staged change; "no other path changed" sees another path edited
again, put back, deleted or created, but not tidegate's own ``.tidegate/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo
from tests.e2e._operator import EDIT, op
from tidegate.operator.engineer import _verify_edit, _verify_model_run
from tidegate.operator.grounding import GitState, git_state
from tidegate.records.report import FlowReport
from tidegate.workspace.repo import discover

ACTION = {"path": "calc.py", "verify_contains": ["return a + b"]}
FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
README = "edit-file: README.md\nreplace: # calc\nwith: # calc, fixed\n"
SHOWS = "calc.py holds the merge the run wrote, as an unstaged edit"
OTHERS = "no other path changed"
INDEX = "index unchanged"


def state(repo: Repo) -> GitState:
    return git_state(discover(repo.root))


def verdicts(checks: list[dict[str, Any]]) -> dict[str, bool]:
    return {c["check"]: c["passed"] for c in checks}


def fixed(repo: Repo) -> tuple[GitState, FlowReport]:
    """The state before a real guarded run that fixes calc.py, and its report."""
    before = state(repo)
    report = repo.run(FIX)
    assert report.status == "succeeded", report.message
    return before, report


def edit_checks(repo: Repo, before: GitState, report: FlowReport) -> dict[str, bool]:
    return verdicts(_verify_edit(repo.root, ACTION, before, state(repo), report))


def test_the_runs_own_merge_verifies(committed_repo: Repo) -> None:
    before, report = fixed(committed_repo)
    got = edit_checks(committed_repo, before, report)
    assert got[SHOWS] and got[OTHERS] and got[INDEX], got


def test_a_path_git_lists_only_because_the_user_edited_it_is_not_the_runs(
    committed_repo: Repo,
) -> None:
    """The user's own unstaged edit of calc.py (`` M``) and a run that wrote README.md:
    git lists calc.py as modified, but the run wrote nothing there."""
    committed_repo.write("calc.py", committed_repo.read("calc.py") + "# mine\n")
    before = state(committed_repo)
    report = committed_repo.run(README)
    assert report.status == "succeeded" and [f.path for f in report.changed_files] == ["README.md"]
    got = edit_checks(committed_repo, before, report)
    assert got[SHOWS] is False


@pytest.mark.parametrize("how", ["put back", "changed again"])
def test_the_path_no_longer_holding_what_the_run_wrote_fails(
    committed_repo: Repo, how: str
) -> None:
    before, report = fixed(committed_repo)
    if how == "put back":
        committed_repo.git("checkout", "--", "calc.py")
    else:
        committed_repo.write("calc.py", committed_repo.read("calc.py") + "# later\n")
    assert edit_checks(committed_repo, before, report)[SHOWS] is False


def test_a_staged_change_is_not_an_unstaged_edit(committed_repo: Repo) -> None:
    before, report = fixed(committed_repo)
    committed_repo.git("add", "calc.py")
    got = edit_checks(committed_repo, before, report)
    assert got[SHOWS] is False, "'M ' is staged, not an unstaged edit"
    assert got[INDEX] is False


@pytest.mark.parametrize("how", ["edited again", "put back", "deleted", "created"])
def test_another_path_changed_is_seen(committed_repo: Repo, how: str) -> None:
    if how in ("edited again", "put back"):
        committed_repo.write("README.md", "# calc\nthe user's line\n")
    before, report = fixed(committed_repo)
    if how == "edited again":  # `` M`` before and after: only the bytes tell
        committed_repo.write("README.md", "# calc\nthe user's line, changed\n")
    elif how == "put back":
        committed_repo.git("checkout", "--", "README.md")
    elif how == "deleted":
        (committed_repo.root / "README.md").unlink()
    else:
        committed_repo.write("notes.txt", "new\n")
    after = state(committed_repo)
    checks = _verify_edit(committed_repo.root, ACTION, before, after, report)
    got = verdicts(checks)
    assert got[SHOWS] is True
    assert got[OTHERS] is False, how
    (other,) = [c for c in checks if c["check"] == OTHERS]
    assert other["detail"] == ["notes.txt" if how == "created" else "README.md"]
    model = verdicts(_verify_model_run(committed_repo.root, before, after, report))
    assert model["only the run's files changed"] is False, how


def test_tidegates_own_directory_is_not_another_path(committed_repo: Repo) -> None:
    """The run adds ``.tidegate/`` to ``.git/info/exclude``: the user's untracked file
    there leaves git's status; that is no change of the action's."""
    committed_repo.write(".tidegate/notes.txt", "the user's notes\n")
    before, report = fixed(committed_repo)
    after = state(committed_repo)
    assert ".tidegate/notes.txt" in before.changed_paths()
    assert ".tidegate/notes.txt" not in after.changed_paths()
    got = verdicts(_verify_edit(committed_repo.root, ACTION, before, after, report))
    assert got[SHOWS] and got[OTHERS], got


def test_an_engineer_edit_of_a_file_the_user_had_edited_verifies(
    capsys: pytest.CaptureFixture[str], committed_repo: Repo, tmp_path: Path
) -> None:
    """The action's edit lands on top of the user's own unstaged edit of the same file:
    git shows `` M`` before and after, and the check must still see the change."""
    committed_repo.write("calc.py", committed_repo.read("calc.py") + "\n# the user's note\n")
    root = tmp_path / "state"
    res = op(capsys, "engineer", "run", "single-process", str(committed_repo.root), EDIT, str(root), "--json")  # fmt: skip
    view = res.json()
    assert verdicts(view["verification"]["checks"])[SHOWS] is True, view["verification"]
    assert res.code == 0 and view["verification"]["passed"] is True
    assert committed_repo.read("calc.py").endswith("# the user's note\n")
