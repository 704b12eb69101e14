"""SIGKILL in the middle of an apply-back, then ``tidegate recover``.

The real CLI runs in a subprocess with ``TIDEGATE_FAULT=apply_back.after_write:N``, which
kills it with SIGKILL right after the N-th file write. Whatever the crash point, every file
is exactly its old or its new version (never partial), the index is never written, and
``recover`` either finishes the apply-back or (``--rollback``) undoes it, removes the
journal, and removes the shadow worktree the killed run left behind.
"""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.errors import UsageError
from tidegate.workspace.lock import live_runs

OLD: dict[str, tuple[bytes, int] | None] = {
    "a.txt": (b"one\ntwo\nthree\n", 0o644),
    "b.sh": (b"#!/bin/sh\necho b\n", 0o644),
    "c.txt": (b"gamma\n", 0o644),
    "d/new.txt": None,
}
NEW: dict[str, tuple[bytes, int] | None] = {
    "a.txt": (b"one\nTWO\nthree\n", 0o644),
    "b.sh": (b"#!/bin/sh\necho B\n", 0o755),
    "c.txt": None,
    "d/new.txt": (b"created\n", 0o644),
}
OBJECTIVE = (
    "edit-file: a.txt\nreplace: two\nwith: TWO\n"
    "edit-file: b.sh\nreplace: echo b\nwith: echo B\n"
    "chmod-file: b.sh\nexecutable: true\n"
    "delete-file: c.txt\n"
    "create-file: d/new.txt\ncontent: <<<\ncreated\n>>>\n"
)
FAULT = "apply_back.after_write"


@pytest.fixture
def crash_repo(repo: Repo, tmp_path: Path) -> Repo:
    for path, entry in OLD.items():
        if entry is not None:
            repo.write(path, entry[0], mode=entry[1])
    repo.write("unrelated.txt", "unrelated\n")
    repo.commit_all()
    (tmp_path / "tmp").mkdir()
    return repo


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # Shadows and scratch dirs of the killed run land under tmp_path, not the system temp.
    return {"TMPDIR": str(tmp_path / "tmp"), **extra}


def _entry(repo: Repo, path: str) -> tuple[bytes, int] | None:
    full = repo.root / path
    if not os.path.lexists(full):
        return None
    st = os.lstat(full)
    assert stat.S_ISREG(st.st_mode), path
    return full.read_bytes(), stat.S_IMODE(st.st_mode) & 0o755


def _states(repo: Repo) -> dict[str, str]:
    """'old' or 'new' for every path of the change; anything else fails the test."""
    out = {}
    for path in OLD:
        current = _entry(repo, path)
        if current == NEW[path]:
            out[path] = "new"
        elif current == OLD[path]:
            out[path] = "old"
        else:
            raise AssertionError(f"{path} is neither old nor new: {current!r}")
    return out


def _tmp_leftovers(repo: Repo) -> list[str]:
    return [
        str(p.relative_to(repo.root))
        for p in repo.root.rglob(".tidegate-tmp-*")
        if ".git" not in p.relative_to(repo.root).parts
    ]


def _shadows(repo: Repo) -> list[str]:
    listing = repo.git("worktree", "list", "--porcelain")
    return [
        line.removeprefix("worktree ")
        for line in listing.splitlines()
        if line.startswith("worktree ") and "tidegate-shadow-" in line
    ]


def _journal_dirs(repo: Repo) -> list[Path]:
    root = repo.root / ".git" / "tidegate" / "journal"
    return sorted(p for p in root.iterdir()) if root.exists() else []


def _crash(repo: Repo, tmp_path: Path, n: int) -> dict[str, Any]:
    """Run the change in a subprocess killed after the n-th write; return the landing
    lock's holder (it died holding it)."""
    res = tidegate_cli(
        "run",
        "--repo",
        str(repo.root),
        "--objective",
        OBJECTIVE,
        "--json",
        env=_env(tmp_path, TIDEGATE_FAULT=f"{FAULT}:{n}"),
    )
    assert res.returncode == -9, (res.returncode, res.stdout, res.stderr)
    assert res.stdout == ""
    holder: dict[str, Any] = json.loads(
        (repo.root / ".git" / "tidegate" / "apply.lock").read_text()
    )
    assert holder["pid"] != os.getpid()
    return holder


def _recover(repo: Repo, tmp_path: Path, *flags: str) -> dict[str, Any]:
    res = tidegate_cli("recover", "--repo", str(repo.root), *flags, "--json", env=_env(tmp_path))
    assert res.returncode == 0, (res.stdout, res.stderr)
    summary: dict[str, Any] = json.loads(res.stdout)
    return summary


def test_the_fault_point_is_inert_past_the_last_write(crash_repo: Repo, tmp_path: Path) -> None:
    """Control: the same change completes when the fault names a write that never comes."""
    repo = crash_repo
    index = repo.index_bytes()
    res = tidegate_cli(
        "run",
        "--repo",
        str(repo.root),
        "--objective",
        OBJECTIVE,
        "--json",
        env=_env(tmp_path, TIDEGATE_FAULT=f"{FAULT}:{len(OLD) + 1}"),
    )
    assert res.returncode == 0, (res.stdout, res.stderr)
    report = json.loads(res.stdout)
    assert report["status"] == "succeeded"
    assert len(report["applied_files"]) == len(OLD)
    assert set(_states(repo).values()) == {"new"}
    assert repo.index_bytes() == index
    assert _journal_dirs(repo) == []
    assert _shadows(repo) == []


@pytest.mark.parametrize("n", range(1, len(OLD)))
def test_crash_after_write_n_then_recover_completes(
    crash_repo: Repo, tmp_path: Path, n: int
) -> None:
    repo = crash_repo
    index = repo.index_bytes()

    holder = _crash(repo, tmp_path, n)

    # Killed mid-apply-back: exactly n paths written, each one whole; the rest untouched.
    states = _states(repo)
    assert sorted(states.values()).count("new") == n, states
    assert repo.index_bytes() == index
    assert repo.read("unrelated.txt") == "unrelated\n"
    journal = repo.root / ".git" / "tidegate" / "journal" / str(holder["run_id"])
    assert _journal_dirs(repo) == [journal]
    assert (journal / "journal.json").is_file()
    shadows = _shadows(repo)
    assert len(shadows) == 1 and Path(shadows[0]).is_dir()
    # A kill inside a write leaves a temp file next to the target; recover must clear it.
    record = next(
        r
        for r in json.loads((journal / "journal.json").read_text())["ops"]
        if states[r["path"]] == "old"
    )
    torn = (repo.root / record["path"]).parent / record["tmp"]
    torn.parent.mkdir(parents=True, exist_ok=True)
    torn.write_bytes(b"half a wri")

    summary = _recover(repo, tmp_path)

    assert summary["clean"] is True
    [report] = summary["journals"]
    assert report["run_id"] == holder["run_id"]
    assert report["action"] == "completed"
    assert report["diverged"] == []
    assert sorted(report["finished"]) == sorted(p for p, s in states.items() if s == "old")
    assert summary["removed_shadows"] == shadows
    assert set(_states(repo).values()) == {"new"}
    assert _tmp_leftovers(repo) == []
    assert _journal_dirs(repo) == []
    assert _shadows(repo) == []
    assert not Path(shadows[0]).exists()
    assert repo.index_bytes() == index

    # The repository is usable again: a normal run goes through.
    after = repo.run("edit-file: unrelated.txt\nreplace: unrelated\nwith: related\n")
    assert after.status == "succeeded", after.message
    assert repo.read("unrelated.txt") == "related\n"
    assert set(_states(repo).values()) == {"new"}
    assert repo.index_bytes() == index


@pytest.mark.parametrize("n", [1, len(OLD) - 1])
def test_crash_then_recover_rollback_restores_old(crash_repo: Repo, tmp_path: Path, n: int) -> None:
    repo = crash_repo
    index = repo.index_bytes()
    holder = _crash(repo, tmp_path, n)
    assert sorted(_states(repo).values()).count("new") == n

    summary = _recover(repo, tmp_path, "--rollback")

    [report] = summary["journals"]
    assert (report["run_id"], report["action"]) == (holder["run_id"], "rolled back")
    assert len(report["finished"]) == n
    assert set(_states(repo).values()) == {"old"}
    assert not (repo.root / "d").exists()
    assert _tmp_leftovers(repo) == []
    assert _journal_dirs(repo) == []
    assert _shadows(repo) == []
    assert repo.index_bytes() == index
    assert repo.status() == ""


def test_next_run_is_refused_until_the_interrupted_apply_back_is_recovered(
    crash_repo: Repo, tmp_path: Path
) -> None:
    repo = crash_repo
    index = repo.index_bytes()
    holder = _crash(repo, tmp_path, 2)
    before = repo.tree_state(with_mtimes=True)

    # A new run would snapshot a half-applied tree: it must refuse and change nothing.
    with pytest.raises(UsageError, match="tidegate recover"):
        repo.run("edit-file: unrelated.txt\nreplace: unrelated\nwith: related\n")
    assert repo.tree_state(with_mtimes=True) == before
    assert repo.index_bytes() == index

    summary = _recover(repo, tmp_path)
    assert [j["run_id"] for j in summary["journals"]] == [holder["run_id"]]
    assert set(_states(repo).values()) == {"new"}
    assert _journal_dirs(repo) == []
    assert _shadows(repo) == []
    report = repo.run("edit-file: unrelated.txt\nreplace: unrelated\nwith: related\n")
    assert report.status == "succeeded", report.message
    assert repo.read("unrelated.txt") == "related\n"
    assert repo.index_bytes() == index


def test_a_run_killed_before_apply_back_leaves_the_tree_alone_and_is_not_live(
    crash_repo: Repo, tmp_path: Path
) -> None:
    repo = crash_repo
    before = repo.tree_state(with_mtimes=True)
    res = tidegate_cli(
        "run",
        "--repo",
        str(repo.root),
        "--objective",
        OBJECTIVE,
        "--json",
        env=_env(tmp_path, TIDEGATE_FAULT="phase.VERIFY"),
    )
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert repo.tree_state(with_mtimes=True) == before
    (registration,) = (repo.root / ".git" / "tidegate" / "live").iterdir()
    assert json.loads(registration.read_text())["phase"] in ("APPLY", "VERIFY")
    assert live_runs(repo.root / ".git" / "tidegate") == []  # dead: not live, and removed
    assert not registration.exists()

    report = repo.run("edit-file: unrelated.txt\nreplace: unrelated\nwith: related\n")
    assert report.status == "succeeded", report.message
    summary = _recover(repo, tmp_path)
    assert summary["journals"] == []
    assert _shadows(repo) == []
    assert not list((tmp_path / "tmp").glob("tidegate-run-*")), "scratch dir not removed"
