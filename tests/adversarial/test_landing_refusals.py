"""``tidegate apply`` and ``tidegate undo`` against hostile input and a hostile work tree.

A run id that is a path or climbs out with ``..`` (it names refs, a journal directory and
a rejects directory), a run recorded for another work tree of the same repository, a
symlink planted where the change lands, a file the user rewrote before an undo. Each is
refused in one line, or ends as a conflict, with nothing changed; each test fails if its
protection is removed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.e2e._landing import dirty, files_but, held, landed, outside_refs, rejects_of
from tests.integration._store import cli

__all__ = ["dirty"]

NEW_FILE = "create-file: pkg/new.py\ncontent: VALUE = 1\n"


@pytest.mark.parametrize(
    "run_id", ["../../journal", "/tmp/elsewhere", "a/b", "..", "run.apply", "-x", ""]
)
@pytest.mark.parametrize("verb", ["apply", "undo", "discard"])
def test_a_run_id_that_is_a_path_is_refused(dirty: Repo, verb: str, run_id: str) -> None:
    held(dirty)
    before = dirty.tree_state(with_mtimes=True)
    runtime = sorted(p.name for p in (dirty.root / ".git" / "tidegate").iterdir())

    res = tidegate_cli(verb, "--", run_id, cwd=dirty.root)

    assert res.returncode == 2
    assert res.stderr == (
        f"tidegate: error: {run_id!r} is not a run id (`tidegate runs` lists them)\n"
    )
    assert dirty.tree_state(with_mtimes=True) == before
    assert sorted(p.name for p in (dirty.root / ".git" / "tidegate").iterdir()) == runtime


def test_a_run_of_another_work_tree_is_refused(dirty: Repo, tmp_path: Path) -> None:
    """A linked work tree of the same name shares the store; its runs are not ours."""
    run_id = held(dirty)
    other = tmp_path / "linked" / dirty.root.name
    other.parent.mkdir()
    dirty.git("worktree", "add", "-q", "--detach", str(other))
    linked = Repo(other)
    before, refs = linked.tree_state(with_mtimes=True), outside_refs(dirty)

    res = tidegate_cli("apply", run_id, cwd=other)

    assert res.returncode == 2
    assert res.stderr == (
        f"tidegate: error: run {run_id} was recorded for another work tree ({dirty.root}), "
        f"not {other}\n"
    )
    assert linked.tree_state(with_mtimes=True) == before and outside_refs(dirty) == refs
    assert "return a - b" in linked.read("calc.py")


def test_a_run_of_another_repository_is_not_found(dirty: Repo, tmp_path: Path) -> None:
    run_id = held(dirty)
    other = Repo(tmp_path / "other")
    other.root.mkdir()
    other.git("init", "-q")
    other.write("calc.py", "x = 1\n")
    other.commit_all()
    before = other.tree_state(with_mtimes=True)

    res = tidegate_cli("apply", run_id, "--repo", str(other.root), cwd=dirty.root)

    assert res.returncode == 2
    assert res.stderr == f"tidegate: error: no recorded run {run_id!r} for this repository\n"
    assert other.tree_state(with_mtimes=True) == before


def test_a_symlinked_directory_planted_where_the_change_lands(dirty: Repo, tmp_path: Path) -> None:
    run_id = held(dirty, NEW_FILE, "true")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, dirty.root / "pkg")
    before = files_but(dirty)

    code, out, _ = cli("apply", run_id, cwd=dirty.root)

    assert code == 3
    assert isinstance(out, dict) and out["action"] == "conflict"
    assert "unsafe path" in out["message"]
    assert list(outside.iterdir()) == []
    assert files_but(dirty) == before
    assert [p.name for p in rejects_of(dirty)] == ["new.py.rej"]


def test_a_symlink_planted_at_the_file_the_change_edits(dirty: Repo, tmp_path: Path) -> None:
    run_id = held(dirty)
    target = tmp_path / "precious.txt"
    target.write_text("precious\n")
    (dirty.root / "calc.py").unlink()
    os.symlink(target, dirty.root / "calc.py")
    before = files_but(dirty)

    code, _out, _ = cli("apply", run_id, cwd=dirty.root)

    assert code == 3
    assert target.read_text() == "precious\n"
    assert os.readlink(dirty.root / "calc.py") == str(target)
    assert files_but(dirty) == before


def test_undo_after_the_user_rewrote_the_file_changes_nothing(dirty: Repo) -> None:
    run_id = landed(dirty)
    dirty.write("calc.py", "def add(a, b):\n    return sum((a, b))\n")  # the changed line too
    before = files_but(dirty)
    index, refs = dirty.index_bytes(), outside_refs(dirty)

    code, out, _ = cli("undo", run_id, cwd=dirty.root)

    assert code == 3
    assert isinstance(out, dict) and out["action"] == "conflict"
    assert "nothing was changed" in out["message"]
    assert [p.name for p in rejects_of(dirty)] == ["calc.py.rej"]
    assert files_but(dirty) == before
    assert dirty.index_bytes() == index and outside_refs(dirty) == refs
    code, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list) and rows[0]["landing"] is None  # still applied
    assert tidegate_cli("undo", "--last", "1", cwd=dirty.root).returncode == 3


def test_a_user_file_created_where_the_undo_would_delete_is_kept(dirty: Repo) -> None:
    run_id = landed(dirty, NEW_FILE, "true")
    dirty.write("pkg/new.py", "VALUE = 2  # mine now\n")
    before = files_but(dirty)

    code, _out, _ = cli("undo", run_id, cwd=dirty.root)

    assert code == 3
    assert dirty.read("pkg/new.py") == "VALUE = 2  # mine now\n"
    assert files_but(dirty) == before


def test_what_cannot_be_done_to_a_run_is_refused(dirty: Repo) -> None:
    run_id = held(dirty)
    before = dirty.tree_state(with_mtimes=True)
    res = tidegate_cli("undo", run_id, cwd=dirty.root)
    assert res.returncode == 2
    assert res.stderr == (
        f"tidegate: error: cannot undo run {run_id}: its change is held, not applied; "
        f"`tidegate discard {run_id}` drops it\n"
    )
    failed = tidegate_cli(
        "run", "--hold", "--objective", NEW_FILE, "--verify", "false", "--max-attempts", "1",
        cwd=dirty.root,
    )  # fmt: skip
    assert failed.returncode == 1
    _, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list) and rows[0]["status"] == "failed"
    failed_id = rows[0]["run_id"]
    res = tidegate_cli("apply", failed_id, cwd=dirty.root)
    assert res.returncode == 2 and "no change of its own to apply" in res.stderr
    unknown = tidegate_cli("apply", run_id, "--only", "nope.py", cwd=dirty.root)
    assert unknown.returncode == 2
    assert unknown.stderr == "tidegate: error: 'nope.py' is not a path of the run's change\n"
    assert dirty.tree_state(with_mtimes=True) == before


def test_a_held_change_does_not_land_past_a_policy_that_now_protects_it(dirty: Repo) -> None:
    run_id = held(dirty)
    dirty.write(".tidegate/config.toml", '[validate]\nprotected = ["calc.py"]\n')
    before = dirty.tree_state(with_mtimes=True)

    res = tidegate_cli("apply", run_id, cwd=dirty.root)

    assert res.returncode == 2
    assert res.stderr == (
        f"tidegate: error: cannot apply run {run_id}: tidegate's configuration (pyproject.toml "
        "[tool.tidegate] or .tidegate/config.toml) judges changes differently since the run "
        "was held; nothing was applied. Run it again, or discard it\n"
    )
    assert dirty.tree_state(with_mtimes=True) == before


def test_a_held_change_whose_objects_are_gone_is_refused(dirty: Repo) -> None:
    """Someone deleted the run's refs and git gc pruned its objects."""
    run_id = held(dirty)
    for ref in dirty.git("for-each-ref", "--format=%(refname)", "refs/tidegate/").split():
        dirty.git("update-ref", "-d", ref)
    dirty.git("reflog", "expire", "--expire=now", "--all")
    dirty.git("gc", "-q", "--prune=now")
    before = dirty.tree_state(with_mtimes=True)

    res = tidegate_cli("apply", run_id, cwd=dirty.root)

    assert res.returncode == 2
    assert "its change is no longer kept in this repository (pruned by retention" in res.stderr
    assert len(res.stderr.splitlines()) == 1
    assert dirty.tree_state(with_mtimes=True) == before


def test_a_result_ref_moved_to_another_change_is_refused(dirty: Repo) -> None:
    """The kept result is the repository's; what was verified is the run store's record."""
    run_id = held(dirty)
    blob = dirty.git("hash-object", "-w", "--stdin", input=b"import os; os.system('evil')\n")
    forged = dirty.git("mktree", input=f"100644 blob {blob.strip()}\tcalc.py\n".encode()).strip()
    entries = dirty.git("ls-tree", f"refs/tidegate/keep:{run_id}").splitlines()
    entries = [e for e in entries if not e.endswith("\tresult")] + [f"040000 tree {forged}\tresult"]
    run_tree = dirty.git("mktree", input="\n".join(entries).encode() + b"\n").strip()
    top = dirty.git("mktree", input=f"040000 tree {run_tree}\t{run_id}\n".encode()).strip()
    dirty.git("update-ref", "refs/tidegate/keep", dirty.git("commit-tree", top, "-m", "f").strip())
    before = dirty.tree_state(with_mtimes=True)

    res = tidegate_cli("apply", run_id, cwd=dirty.root)

    assert res.returncode == 2
    assert "what is kept of its result does not hold the change that was verified" in res.stderr
    assert len(res.stderr.splitlines()) == 1
    assert dirty.tree_state(with_mtimes=True) == before


@pytest.mark.parametrize("verb", ["apply", "discard"])
def test_nothing_lands_while_another_landing_holds_the_lock(dirty: Repo, verb: str) -> None:
    """``apply`` and ``discard`` take the landing lock APPLY_BACK takes: while another
    process holds it they wait (here: give up after the wait), write nothing, record
    nothing, and say who holds it in one line."""
    from tidegate.workspace.lock import ApplyLock
    from tidegate.workspace.repo import discover

    run_id = held(dirty)
    before = dirty.tree_state(with_mtimes=True)
    lock = ApplyLock(discover(dirty.root).runtime_dir, "another-run").acquire()
    try:
        res = tidegate_cli(verb, run_id, cwd=dirty.root, env={"TIDEGATE_LANDING_WAIT_S": "0.3"})
    finally:
        lock.release()

    assert res.returncode == 4
    assert len(res.stderr.splitlines()) == 1 and "another-run" in res.stderr
    assert dirty.tree_state(with_mtimes=True) == before
    _, rows, _ = cli("runs", cwd=dirty.root)
    assert isinstance(rows, list) and rows[0]["landing"] is None  # still held
