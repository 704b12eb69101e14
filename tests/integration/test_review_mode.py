"""Review mode: findings from the user's checks at T0, a read-only workspace, and a main tree
left byte-identical, mtimes of every file and directory included."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.records.modes import Mode
from tidegate.workspace.fs import LocalFS, ReadOnlyFS

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider -p no:hypothesispytest"
FAILING_TEST = "test_calc.py::test_add"
TESTS = (
    "from calc import add, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)


@pytest.fixture
def project(committed_repo: Repo) -> Repo:
    """calc.py with a bug its test catches, plus every kind of dirty state."""
    repo = committed_repo
    repo.write("test_calc.py", TESTS)
    repo.write("pkg/__init__.py", "")
    repo.commit_all("tests")
    repo.write("README.md", "# calc\n\nunstaged edit\n")
    repo.write("pkg/__init__.py", "STAGED = True\n")
    repo.git("add", "pkg/__init__.py")
    repo.write("scratch/notes.txt", "untracked\n")
    repo.write(".env", "ignored\n")
    return repo


def _assert_untouched(repo: Repo, before: dict[str, object], index: bytes, status: str) -> None:
    assert repo.tree_state(with_mtimes=True) == before
    assert repo.index_bytes() == index
    assert repo.status() == status


def test_review_reports_failing_test_and_changes_nothing(project: Repo) -> None:
    before = project.tree_state(with_mtimes=True)
    index = project.index_bytes()
    status = project.status()
    report = project.run("Review calc.py", verify=PYTEST, mode=Mode.REVIEW)
    assert report.status == "succeeded", report.message
    assert report.exit_code == 0
    assert report.mode == "review"
    assert report.fs_mode == "read-only"
    assert report.attempts == 1
    messages = [f.message for f in report.findings]
    assert any(FAILING_TEST in m for m in messages), messages
    assert not any("test_mul" in m for m in messages), messages
    located = [f for f in report.findings if f.path == "test_calc.py"]
    assert located and all(f.line for f in located), report.findings
    assert report.diff == "" and report.diff_sha256 is None
    assert report.changed_files == [] and report.applied_files == []
    assert [e.phase for e in report.phases] == [
        "PREFLIGHT",
        "CONTEXT",
        "EXPLORE",
        "REVIEW",
        "REPORT",
        "SHRINK",
    ]
    _assert_untouched(project, before, index, status)


def test_review_with_edit_blocks_still_changes_nothing(project: Repo) -> None:
    before = project.tree_state(with_mtimes=True)
    index = project.index_bytes()
    status = project.status()
    report = project.run(
        "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
        "create-file: new.txt\ncontent: x\n",
        verify=PYTEST,
        mode=Mode.REVIEW,
    )
    assert report.status == "succeeded", report.message
    assert any(FAILING_TEST in f.message for f in report.findings)
    _assert_untouched(project, before, index, status)


def test_review_with_passing_checks(project: Repo) -> None:
    project.write("calc.py", project.read("calc.py").replace("a - b", "a + b"))
    before = project.tree_state(with_mtimes=True)
    index = project.index_bytes()
    report = project.run("Review calc.py", verify=PYTEST, mode=Mode.REVIEW)
    assert report.status == "succeeded", report.message
    assert [f for f in report.findings if f.source == "verify"] == []
    assert any("passes at T0" in n for n in report.notes), report.notes
    assert project.tree_state(with_mtimes=True) == before
    assert project.index_bytes() == index


@pytest.mark.parametrize(
    "command", [["review"], ["run", "--mode", "review"]], ids=["review", "run-mode-review"]
)
def test_cli_review(project: Repo, command: list[str]) -> None:
    before = project.tree_state(with_mtimes=True)
    index = project.index_bytes()
    status = project.status()
    res = tidegate_cli(
        *command, "--objective", "Review calc.py", "--verify", PYTEST, "--json", cwd=project.root
    )
    # error findings: exit 1, as a linter does (the report itself succeeded)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "finding(s) of severity error (--fail-on error)" in res.stderr
    report = json.loads(res.stdout)
    assert report["status"] == "succeeded"
    assert report["mode"] == "review"
    assert report["fs_mode"] == "read-only"
    assert any(FAILING_TEST in f["message"] for f in report["findings"]), report["findings"]
    _assert_untouched(project, before, index, status)


def test_cli_review_human_output_names_the_failing_test(project: Repo) -> None:
    before = project.tree_state(with_mtimes=True)
    res = tidegate_cli(
        "review", "--objective", "Review calc.py", "--verify", PYTEST, cwd=project.root
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert FAILING_TEST in res.stdout
    assert "nothing was changed" in res.stdout
    assert project.tree_state(with_mtimes=True) == before


def test_cli_review_without_an_objective(project: Repo) -> None:
    """README: ``tidegate review --verify "pytest -q"`` reviews with no objective at all."""
    before = project.tree_state(with_mtimes=True)
    res = tidegate_cli(
        "review", "--verify", PYTEST, "--json", "--fail-on", "never", cwd=project.root
    )
    assert res.returncode == 0, res.stdout + res.stderr  # --fail-on never: findings only
    report = json.loads(res.stdout)
    assert report["status"] == "succeeded"
    assert any(FAILING_TEST in f["message"] for f in report["findings"]), report["findings"]
    assert project.tree_state(with_mtimes=True) == before


def test_cli_review_fail_on_chooses_the_severity(project: Repo) -> None:
    """Error findings fail a review by default and with ``--fail-on warning``; a review
    whose checks pass exits 0 under any choice."""
    for choice, code in (("error", 1), ("warning", 1), ("never", 0)):
        res = tidegate_cli(
            "review", "--verify", PYTEST, "--fail-on", choice, "--json", cwd=project.root
        )
        assert res.returncode == code, (choice, res.stdout + res.stderr)
        assert json.loads(res.stdout)["status"] == "succeeded"
    project.write("calc.py", project.read("calc.py").replace("a - b", "a + b"))
    for choice in ("error", "warning"):
        res = tidegate_cli("review", "--verify", PYTEST, "--fail-on", choice, cwd=project.root)
        assert res.returncode == 0, (choice, res.stdout + res.stderr)


def test_cli_review_with_nothing_to_check_says_so(project: Repo) -> None:
    before = project.tree_state(with_mtimes=True)
    index = project.index_bytes()
    res = tidegate_cli("review", "--verify", "none", cwd=project.root)
    assert res.returncode == 0, res.stdout + res.stderr
    first = res.stdout.splitlines()[0]
    assert "review checked nothing: no verify command" in first, res.stdout
    assert project.tree_state(with_mtimes=True) == before
    assert project.index_bytes() == index


def test_read_only_fs_refuses_every_write(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_bytes(b"original\n")
    (root / "sub").mkdir()
    fs = ReadOnlyFS(LocalFS(root))
    assert fs.root == root
    assert fs.read("a.txt").content == b"original\n"
    before = sorted(p.name for p in root.rglob("*"))
    with pytest.raises(PermissionError, match=r"a\.txt"):
        fs.write_file("a.txt", b"changed\n", 0o644, ".tmp-a")
    with pytest.raises(PermissionError, match=r"sub/new\.txt"):
        fs.write_file("sub/new.txt", b"new\n", 0o644, ".tmp-new")
    with pytest.raises(PermissionError, match="link"):
        fs.write_symlink("link", b"a.txt", ".tmp-link")
    with pytest.raises(PermissionError, match=r"a\.txt"):
        fs.remove("a.txt")
    assert (root / "a.txt").read_bytes() == b"original\n"
    assert sorted(p.name for p in root.rglob("*")) == before
