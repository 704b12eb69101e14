"""``tidegate recover`` facing a journal it cannot trust: a torn ``journal.json`` and a
missing blob. Recovery must not guess: one error line, exit 1, the journal kept for a
person to look at, the work tree untouched, and no traceback."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.adversarial._applyback import env, four_ops, journals, run
from tests.conftest import Repo, tidegate_cli

__all__ = ["four_ops"]


@pytest.mark.parametrize("damage", ["torn journal", "missing blob"])
def test_a_damaged_journal_is_kept_and_reported_in_one_line(
    four_ops: Repo, tmp_path: Path, damage: str
) -> None:
    repo = four_ops
    code, _, _ = run(repo, tmp_path, TIDEGATE_FAULT="apply_back.after_write:1")
    assert code == -signal.SIGKILL
    [jdir] = journals(repo)
    if damage == "torn journal":
        (jdir / "journal.json").write_text('{"version": 1, "run_id": ')
    else:
        (jdir / "1.new").unlink()  # b.sh's new content: recovery needs it to finish
    before = repo.tree_state()

    res = tidegate_cli("recover", cwd=repo.root, env=env(tmp_path))

    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    [line] = [x for x in res.stderr.splitlines() if x.strip()]
    assert line.startswith(f"tidegate: error: run {jdir.name}: its apply-back journal could not")
    assert journals(repo) == [jdir]
    assert repo.tree_state() == before
