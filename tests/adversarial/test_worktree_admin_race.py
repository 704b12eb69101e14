"""git's worktree commands race each other: a ``worktree add`` reads every linked work
tree's admin files while another add is still writing its own, and dies on an empty
``commondir``; a ``remove`` racing a ``prune`` dies on a vanished entry. Concurrent runs
add and remove shadows all the time, so tidegate serialises its worktree commands. And a
``worktree add`` killed mid-write leaves an entry that breaks every later ``git
worktree`` command (and ``git gc``) of the user's: the next tidegate command removes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import Repo, tidegate_cli

PROCESSES = 8
CYCLES = 40

_CYCLE = """
import sys
from pathlib import Path
import tempfile
from tidegate.workspace.repo import discover
from tidegate.workspace.shadow.worktrees import add_worktree, discard

repo = discover(Path(sys.argv[1]))
commit = sys.argv[2]
failed = 0
for i in range(int(sys.argv[3])):
    path = Path(tempfile.mkdtemp(prefix="tidegate-shadow-race-"))
    try:
        add_worktree(repo, path, commit)
    except Exception as exc:
        failed += 1
        print(exc, file=sys.stderr)
    discard(repo, path)
print(failed)
"""


def _plant_half_made_entry(repo: Repo, name: str) -> Path:
    """What ``git worktree add`` has written when it is killed between creating
    ``commondir`` and writing it."""
    entry = repo.root / ".git" / "worktrees" / name
    entry.mkdir(parents=True)
    (entry / "gitdir").write_text(f"{repo.root.parent / name}/.git\n")
    (entry / "locked").write_text("initializing\n")
    (entry / "HEAD").write_text("0" * 40 + "\n")
    (entry / "commondir").write_text("")
    return entry


def test_concurrent_shadow_adds_and_removes_never_fail(repo: Repo) -> None:
    for i in range(20):
        repo.write(f"d/f{i}.txt", f"{i}\n")
    repo.commit_all()
    commit = repo.git("rev-parse", "HEAD").strip()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CYCLE, str(repo.root), commit, str(CYCLES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    results = [proc.communicate(timeout=300) for proc in procs]
    failures = [err for out, err in results if out.strip() != "0"]
    assert not failures, failures[0]
    assert all(proc.returncode == 0 for proc in procs)
    listed = repo.git("worktree", "list", "--porcelain")
    assert "tidegate-shadow-race-" not in listed


LINES = "".join(f"line {i}\n" for i in range(1, 11))


def test_an_entry_a_killed_worktree_add_left_is_removed(repo: Repo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_all()
    mine = repo.root.parent / "mine"
    repo.git("worktree", "add", "--detach", "--quiet", str(mine), "HEAD")
    repo.git("worktree", "lock", "--reason", "initializing", str(mine))
    entry = _plant_half_made_entry(repo, "tidegate-shadow-20260101-000000-dead00-abcd1234")
    kept = _plant_half_made_entry(repo, "tidegate-shadow-20260101-000000-kept00-abcd1234")
    (kept / "commondir").write_text("../..\n")  # whole, locked by the user on purpose
    (kept / "locked").write_text("kept by the user\n")
    broken = subprocess.run(
        ["git", "-C", str(repo.root), "worktree", "list"], capture_output=True, text=True
    )
    assert broken.returncode != 0 and "commondir" in broken.stderr  # git is broken by it
    repo.write("f.txt", LINES.replace("line 10", "line 10, the user's"))
    index = (repo.root / ".git" / "index").read_bytes()

    result = tidegate_cli(
        "run", "--objective", "edit-file: f.txt\nreplace: line 2\nwith: LINE 2",
        "--verify", "true", cwd=repo.root,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert not entry.exists()
    assert (kept / "locked").read_text() == "kept by the user\n"
    listed = repo.git("worktree", "list", "--porcelain")
    assert f"worktree {mine}\n" in listed and "locked initializing" in listed  # the user's
    expected = LINES.replace("line 10", "line 10, the user's").replace("line 2\n", "LINE 2\n")
    assert (repo.root / "f.txt").read_text() == expected
    assert (repo.root / ".git" / "index").read_bytes() == index


def test_the_lock_never_follows_a_planted_link(repo: Repo, tmp_path: Path) -> None:
    repo.write("f.txt", "one\n")
    repo.commit_all()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runtime = repo.root / ".git" / "tidegate"
    runtime.mkdir()
    (runtime / "worktrees.lock").symlink_to(elsewhere / "victim")
    result = tidegate_cli(
        "run", "--objective", "edit-file: f.txt\nreplace: one\nwith: two",
        "--verify", "true", cwd=repo.root,
    )  # fmt: skip
    assert result.returncode != 0
    assert not (elsewhere / "victim").exists()
    assert (repo.root / "f.txt").read_text() == "one\n"


def test_a_planted_lock_link_still_lets_gc_list_what_it_would_remove(repo: Repo) -> None:
    repo.write("f.txt", "one\n")
    repo.commit_all()
    runtime = repo.root / ".git" / "tidegate"
    runtime.mkdir()
    (runtime / "worktrees.lock").symlink_to(repo.root.parent / "victim")
    result = tidegate_cli("gc", "--dry-run", "--json", cwd=repo.root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (repo.root.parent / "victim").exists()
