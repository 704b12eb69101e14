"""Bootstrap: where tidegate refuses to run (changing nothing at all), and what a run records
before its first phase: the T0 ref, the exclude entry, and a shadow worktree that goes away."""

from __future__ import annotations

import glob
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Repo, git, tidegate_cli
from tidegate.errors import NotARepositoryError, UsageError
from tidegate.flow.transaction import execute
from tidegate.records.request import RunRequest

OBJECTIVE = "edit-file: a.txt\nreplace: alpha\nwith: beta\n"


def full_state(root: Path) -> dict[str, object]:
    """Everything under ``root``, .git included: kinds, modes, bytes, link targets, mtimes."""
    state: dict[str, object] = {}
    if not root.exists():
        return {"<missing>": True}
    for dirpath, dirnames, filenames in os.walk(root):
        st = os.lstat(dirpath)
        state[f"dir:{os.path.relpath(dirpath, root)}"] = (st.st_mode, st.st_mtime_ns)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if os.path.islink(full):
                state[rel] = ("link", os.readlink(full))
            else:
                with open(full, "rb") as fh:
                    state[rel] = (st.st_mode, fh.read(), st.st_mtime_ns)
    return state


def _outside(tmp: Path) -> Path:
    root = tmp / "plain"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


def _bare(tmp: Path) -> Path:
    root = tmp / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(root)], check=True)
    return root


def _unborn(tmp: Path) -> Path:
    root = tmp / "unborn"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("alpha\n")
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")  # an index exists, HEAD still has no commit
    return root


def _orphan(tmp: Path) -> Path:
    root = tmp / "orphan"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("alpha\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    git(root, "checkout", "-q", "--orphan", "fresh")  # HEAD names a branch with no commit
    return root


def _git_dir(tmp: Path) -> Path:
    root = tmp / "normal"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("alpha\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return root / ".git"


def _file(tmp: Path) -> Path:
    target = tmp / "a.txt"
    target.write_text("alpha\n")
    return target


def _missing(tmp: Path) -> Path:
    return tmp / "does-not-exist"


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "outside-a-repo": (_outside, "not inside a git repository"),
    "bare": (_bare, "bare repository"),
    "unborn-head": (_unborn, "HEAD has no commit"),
    "orphan-branch": (_orphan, "HEAD has no commit"),
    "missing-dir": (_missing, "no such directory"),
    "inside-git-dir": (_git_dir, "inside a .git directory"),
    "a-file": (_file, "not a directory"),
}


@pytest.fixture
def area(tmp_path: Path) -> Path:
    """A directory of its own (outside any repository) for the refused targets."""
    area = tmp_path / "area"
    area.mkdir()
    return area


@pytest.mark.parametrize("case", CASES)
def test_execute_refuses_and_changes_nothing(case: str, area: Path) -> None:
    make, reason = CASES[case]
    target = make(area)
    before = full_state(area)
    request = RunRequest(repo=target, objective=OBJECTIVE, objective_base=area)
    with pytest.raises(NotARepositoryError) as info:
        execute(request)
    assert isinstance(info.value, UsageError)
    message = str(info.value)
    assert reason in message
    assert "\n" not in message
    assert full_state(area) == before  # no refs/tidegate, no info/exclude edit, no lock dir


@pytest.mark.parametrize("case", CASES)
def test_cli_refuses_with_one_line_and_exit_2(case: str, area: Path) -> None:
    make, reason = CASES[case]
    target = make(area)
    before = full_state(area)
    res = tidegate_cli("run", "--repo", str(target), "--objective", OBJECTIVE, cwd=area)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("tidegate: error: ")
    assert reason in lines[0]
    assert "Traceback" not in res.stderr
    assert full_state(area) == before


@pytest.mark.parametrize("command", ["run", "review", "debug"])
def test_cli_refuses_outside_a_repo_from_the_current_directory(command: str, area: Path) -> None:
    root = _outside(area)
    before = full_state(area)
    res = tidegate_cli(command, "--objective", OBJECTIVE, "--json", cwd=root)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1
    assert res.stderr.startswith("tidegate: error: ")
    assert "not inside a git repository" in res.stderr
    assert full_state(area) == before


def test_unborn_head_via_cli_leaves_git_dir_untouched(area: Path) -> None:
    root = _unborn(area)
    exclude = (root / ".git" / "info" / "exclude").read_bytes()
    res = tidegate_cli("run", "--objective", OBJECTIVE, cwd=root)
    assert res.returncode == 2
    assert git(root, "for-each-ref") == ""
    assert (root / ".git" / "info" / "exclude").read_bytes() == exclude
    assert not (root / ".git" / "tidegate").exists()


def _dirty_project(repo: Repo) -> None:
    repo.write("README.md", "# demo\n")
    repo.write("src/app.py", "VALUE = 1\n")
    repo.write(".gitignore", ".env\nbuild/\n*.log\n")
    repo.commit_all()
    repo.write("src/app.py", "VALUE = 2  # unstaged edit\n")
    repo.write("staged.txt", "staged only\n")
    repo.git("add", "staged.txt")
    repo.write("notes.txt", "untracked\n")
    repo.write("new/dir/deep.txt", "untracked, nested\n")
    repo.write(".env", "SECRET=1\n")
    repo.write("build/out.bin", b"\x00\x01")
    repo.write("debug.log", "ignored\n")


def _ls_tree(repo: Repo, rev: str) -> set[str]:
    return set(repo.git("ls-tree", "-r", "--name-only", "-z", rev).split("\0")) - {""}


def test_t0_ref_records_tracked_and_untracked_but_not_ignored(repo: Repo) -> None:
    _dirty_project(repo)
    head = repo.git("rev-parse", "HEAD").strip()
    report = repo.run("edit-file: README.md\nreplace: demo\nwith: demo app\n")
    assert report.status == "succeeded", report.message
    ref = f"refs/tidegate/keep:{report.run_id}/t0"  # the run's T0 tree, kept when it ended
    assert report.t0_ref == ref
    commit = str(report.t0_commit)
    assert repo.git("rev-parse", f"{commit}^{{tree}}").strip() == repo.git("rev-parse", ref).strip()
    assert repo.git("rev-parse", f"{commit}^").strip() == head
    assert _ls_tree(repo, ref) == {
        ".gitignore",
        "README.md",
        "src/app.py",
        "staged.txt",
        "notes.txt",
        "new/dir/deep.txt",
    }
    assert repo.git("show", f"{ref}/src/app.py") == "VALUE = 2  # unstaged edit\n"
    assert repo.git("show", f"{ref}/notes.txt") == "untracked\n"
    assert repo.git("show", f"{ref}/new/dir/deep.txt") == "untracked, nested\n"
    assert repo.git("show", f"{ref}/README.md") == "# demo\n"  # T0, before the change
    # The run applied its change, and the ignored files are still there, untouched.
    assert repo.read("README.md") == "# demo app\n"
    assert repo.read(".env") == "SECRET=1\n"
    assert (repo.root / "build" / "out.bin").read_bytes() == b"\x00\x01"


def test_t0_index_ref_records_the_staged_state(repo: Repo) -> None:
    _dirty_project(repo)
    staged_tree = repo.git("write-tree").strip()
    report = repo.run("edit-file: README.md\nreplace: demo\nwith: demo app\n")
    assert report.status == "succeeded", report.message
    index_ref = f"refs/tidegate/keep:{report.run_id}/index"
    assert repo.git("rev-parse", index_ref).strip() == staged_tree


def _exclude_entries(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if ".tidegate" in line and not line.lstrip().startswith("#")
    ]


def test_exclude_gains_tidegate_exactly_once_across_two_runs(committed_repo: Repo) -> None:
    exclude = committed_repo.root / ".git" / "info" / "exclude"
    original = exclude.read_text()
    assert _exclude_entries(original) == []
    first = committed_repo.run("edit-file: README.md\nreplace: # calc\nwith: # calc v1\n")
    assert first.status == "succeeded", first.message
    after_first = exclude.read_text()
    assert after_first.startswith(original)
    assert len(_exclude_entries(after_first)) == 1
    assert _exclude_entries(after_first)[0] in ("/.tidegate/", ".tidegate/", ".tidegate")
    second = committed_repo.run("edit-file: README.md\nreplace: # calc v1\nwith: # calc v2\n")
    assert second.status == "succeeded", second.message
    assert exclude.read_text() == after_first
    # Both runs' T0 is kept (in the one keep commit).
    kept = committed_repo.git("ls-tree", "--name-only", "refs/tidegate/keep").split()
    assert kept == sorted([first.run_id, second.run_id])


def test_exclude_entry_really_ignores_tidegate_dir(committed_repo: Repo) -> None:
    report = committed_repo.run("edit-file: README.md\nreplace: # calc\nwith: # calc!\n")
    assert report.status == "succeeded", report.message
    committed_repo.write(".tidegate/rejects/x.rej", "noise\n")
    assert committed_repo.status() == " M README.md\n"


def _worktrees(repo: Repo) -> list[str]:
    out = repo.git("worktree", "list", "--porcelain", "-z").split("\0")
    return [entry.removeprefix("worktree ") for entry in out if entry.startswith("worktree ")]


@pytest.mark.parametrize("verify", [None, "true", "false"])
def test_shadow_worktree_is_removed_after_the_run(committed_repo: Repo, verify: str | None) -> None:
    assert _worktrees(committed_repo) == [str(committed_repo.root)]
    report = committed_repo.run(
        "edit-file: README.md\nreplace: # calc\nwith: # calc!\n", verify=verify, max_attempts=1
    )
    assert report.status == ("failed" if verify == "false" else "succeeded"), report.message
    assert _worktrees(committed_repo) == [str(committed_repo.root)]
    for prefix in ("tidegate-shadow-", "tidegate-run-"):  # the shadow and the scratch dir
        pattern = os.path.join(tempfile.gettempdir(), f"{prefix}{report.run_id}-*")
        assert glob.glob(pattern) == []
    worktrees_dir = committed_repo.root / ".git" / "worktrees"
    assert not worktrees_dir.exists() or list(worktrees_dir.iterdir()) == []


def test_run_from_a_subdirectory_snapshots_the_whole_tree(repo: Repo) -> None:
    _dirty_project(repo)
    request = RunRequest(
        repo=repo.root / "new" / "dir",
        objective="edit-file: README.md\nreplace: demo\nwith: demo app\n",
        objective_base=repo.root,
    )
    report = execute(request)
    assert report.status == "succeeded", report.message
    assert report.repo == str(repo.root)
    assert {"notes.txt", "src/app.py", "new/dir/deep.txt"} <= _ls_tree(repo, str(report.t0_ref))
    assert repo.read("README.md") == "# demo app\n"


@pytest.mark.parametrize(
    "zone", ["America/St_Johns", "Asia/Kolkata", "Etc/GMT+5", "Australia/Sydney"]
)
def test_t0_commits_carry_the_zone_git_would_write(committed_repo: Repo, zone: str) -> None:
    """The T0 and index commits of a run made in a zone west or east of UTC (half hours
    included) say the zone ``git commit-tree`` says under the same ``TZ``."""
    env = {**os.environ, "TZ": zone}
    fix = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
    res = tidegate_cli("run", "--objective", fix, "--json", cwd=committed_repo.root, env=env)
    assert res.returncode == 0, res.stderr
    tree = committed_repo.git("rev-parse", "HEAD^{tree}").strip()
    made = subprocess.run(
        ["git", "commit-tree", tree, "-m", "m"], cwd=committed_repo.root, env=env,
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip

    def zones(rev: str) -> set[str]:
        body = committed_repo.git("cat-file", "commit", rev)
        return {
            line.rsplit(" ", 1)[1]
            for line in body.splitlines()
            if line.startswith(("author ", "committer "))
        }

    (expected,) = zones(made)
    assert expected != "+0000"
    # Folded into refs/tidegate/keep when the run ended, T0's two commits are unreachable.
    lost = committed_repo.git("fsck", "--unreachable", "--no-reflogs").split()
    commits = [
        lost[i + 2] for i, w in enumerate(lost) if w == "unreachable" and lost[i + 1] == "commit"
    ]
    t0s = [c for c in commits if "tidegate T0" in committed_repo.git("cat-file", "commit", c)]
    assert len(t0s) == 2, lost
    for ref in t0s:
        assert zones(ref) == {expected}, ref
