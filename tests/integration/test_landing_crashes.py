"""SIGKILL at every write boundary of ``tidegate apply`` and ``tidegate undo``, then
``tidegate recover`` (finishing, or ``--rollback``), then the same command again.

After the kill every file is whole: exactly as before or exactly as after. A journal left
behind refuses every other write (``apply``, ``undo``, a run) until ``recover`` has
finished or rolled it back; then the command run again lands what is left and records it,
writing nothing twice. ``.git/index``, HEAD and every ref outside ``refs/tidegate/`` never
change, and no journal is left.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.conftest import CALC, Repo, tidegate_cli
from tests.e2e._landing import FIX, dirty, held, landed, outside_refs
from tests.integration._store import cli

__all__ = ["dirty"]

POINTS = [
    "journal.blobs_saved",
    "journal.published",
    "apply_back.before_cas:1",
    "apply_back.before_write:1",
    "apply_back.after_write:1",
    "apply_back.before_cas:2",
    "apply_back.before_write:2",
    "apply_back.after_write:2",
    "landing.before_record",
]
FIXED_CALC = CALC.replace("return a - b", "return a + b")
README = "# calc\n\nunstaged notes\n"
FIXED_README = README.replace("# calc", "# calc (fixed)")


def _journals(repo: Repo) -> list[Path]:
    root = repo.root / ".git" / "tidegate" / "journal"
    return sorted(root.iterdir()) if root.exists() else []


def _whole(repo: Repo) -> tuple[bool, bool]:
    """Whether calc.py and README.md hold the change; each must be exactly one side."""
    calc, readme = repo.read("calc.py"), repo.read("README.md")
    assert calc in (CALC, FIXED_CALC) and readme in (README, FIXED_README)
    return calc == FIXED_CALC, readme == FIXED_README


def _kept(point: str, rollback: bool) -> bool:
    """Whether the interrupted command's writes stand after ``recover``: finished, or
    already complete (killed before recording), unless rolled back or never journalled."""
    if point == "landing.before_record":
        return True
    return not (rollback or point == "journal.blobs_saved")


def _killed(repo: Repo, point: str, *args: str) -> None:
    code, _, err = cli(*args, cwd=repo.root, env={"TIDEGATE_FAULT": point})
    assert code == -signal.SIGKILL, err


@pytest.mark.parametrize("rollback", [False, True], ids=["finish", "rollback"])
@pytest.mark.parametrize("point", POINTS)
def test_a_kill_during_apply_recovers_and_applies_once(
    dirty: Repo, point: str, rollback: bool
) -> None:
    run_id = held(dirty)
    index, refs = dirty.index_bytes(), outside_refs(dirty)

    _killed(dirty, point, "apply", run_id)

    _whole(dirty)
    if _journals(dirty):
        refused = tidegate_cli("apply", run_id, cwd=dirty.root)
        assert refused.returncode == 2 and "tidegate recover" in refused.stderr
    recover = ["recover", "--rollback"] if rollback else ["recover"]
    code, _summary, err = cli(*recover, cwd=dirty.root)
    assert code == 0, err
    assert _whole(dirty) == (_kept(point, rollback),) * 2
    assert _journals(dirty) == []

    code, out, err = cli("apply", run_id, cwd=dirty.root)

    assert code == 0, err
    assert isinstance(out, dict) and out["action"] == "applied"
    assert _whole(dirty) == (True, True)
    assert dirty.index_bytes() == index and outside_refs(dirty) == refs
    assert _journals(dirty) == []
    again = tidegate_cli("apply", run_id, cwd=dirty.root)
    assert again.returncode == 2 and "already applied" in again.stderr


@pytest.mark.parametrize("rollback", [False, True], ids=["finish", "rollback"])
@pytest.mark.parametrize("point", POINTS)
def test_a_kill_during_undo_recovers_and_undoes_once(
    dirty: Repo, point: str, rollback: bool
) -> None:
    run_id = landed(dirty)
    assert _whole(dirty) == (True, True)
    index, refs = dirty.index_bytes(), outside_refs(dirty)

    _killed(dirty, point, "undo", run_id)

    _whole(dirty)
    if _journals(dirty):
        refused = tidegate_cli("undo", run_id, cwd=dirty.root)
        assert refused.returncode == 2 and "tidegate recover" in refused.stderr
        ran = tidegate_cli("run", "--objective", FIX, cwd=dirty.root)
        assert ran.returncode == 2 and "tidegate recover" in ran.stderr
    recover = ["recover", "--rollback"] if rollback else ["recover"]
    code, _, err = cli(*recover, cwd=dirty.root)
    assert code == 0, err
    assert _journals(dirty) == []
    assert _whole(dirty) == (not _kept(point, rollback),) * 2

    code, out, err = cli("undo", run_id, cwd=dirty.root)

    assert code == 0, err
    assert isinstance(out, dict) and out["action"] == "undone"
    assert _whole(dirty) == (False, False)
    assert dirty.index_bytes() == index and outside_refs(dirty) == refs
    again = tidegate_cli("undo", run_id, cwd=dirty.root)
    assert again.returncode == 2 and "undone" in again.stderr


def test_recover_names_the_command_to_run_again(dirty: Repo) -> None:
    run_id = held(dirty)
    _killed(dirty, "apply_back.after_write:1", "apply", run_id)

    shown = tidegate_cli("recover", cwd=dirty.root)

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:2] == [
        f"run {run_id}: apply completed; 1 path(s) written",
        f"  run `tidegate apply {run_id}` again to record it (nothing is written twice)",
    ]


def test_a_kill_after_a_subset_landed_is_recorded_by_running_it_again(dirty: Repo) -> None:
    run_id = held(dirty)
    index = dirty.index_bytes()
    _killed(dirty, "landing.before_record", "apply", run_id, "--only", "calc.py")
    assert _whole(dirty) == (True, False)  # the subset's own run landed it
    after = dirty.tree_state(with_mtimes=True)

    code, out, err = cli("apply", run_id, "--only", "calc.py", cwd=dirty.root)

    assert code == 0, err
    assert isinstance(out, dict) and out["action"] == "applied" and out["written"] == []
    assert dirty.tree_state(with_mtimes=True) == after and dirty.index_bytes() == index
    again = tidegate_cli("apply", run_id, cwd=dirty.root)
    assert again.returncode == 2 and "already applied" in again.stderr
