"""A SIGKILL on either side of publishing the apply-back journal.

The journal is only useful if every blob it points at is on disk before it is published:
``journal.blobs_saved`` kills the run after the blobs and before the journal (recovery
must find no journal and change nothing); ``journal.published`` kills it right after the
journal is published and before the first write (recovery must be able to finish or undo
every operation from the blobs, which fails if the journal is ever published first).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.adversarial._applyback import NEW, OLD, env, four_ops, journals, leftovers, on_disk, run
from tests.conftest import Repo
from tests.integration._store import cli

__all__ = ["four_ops"]


def test_killed_before_the_journal_is_published_nothing_to_recover(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    before = repo.tree_state()

    code, _, _ = run(repo, tmp_path, TIDEGATE_FAULT="journal.blobs_saved")

    assert code == -signal.SIGKILL
    assert repo.tree_state() == before
    code, summary, err = cli("recover", cwd=repo.root, env=env(tmp_path))
    assert code == 0, err
    assert [j["action"] for j in summary["journals"]] == ["discarded"]
    assert repo.tree_state() == before
    assert journals(repo) == [] and leftovers(tmp_path) == []


@pytest.mark.parametrize(("rollback", "expected"), [(False, NEW), (True, OLD)])
def test_killed_right_after_publishing_recover_finishes_or_undoes_every_op(
    four_ops: Repo, tmp_path: Path, rollback: bool, expected: dict[str, tuple[bytes, int] | None]
) -> None:
    repo = four_ops
    index = repo.index_bytes()

    code, _, _ = run(repo, tmp_path, TIDEGATE_FAULT="journal.published")

    assert code == -signal.SIGKILL
    assert on_disk(repo, OLD)  # no write came before the journal
    args = ("recover", "--rollback") if rollback else ("recover",)
    code, summary, err = cli(*args, cwd=repo.root, env=env(tmp_path))
    assert code == 0, err
    [journal] = summary["journals"]
    assert journal["action"] == ("rolled back" if rollback else "completed")
    assert on_disk(repo, expected)
    assert repo.index_bytes() == index
    assert journals(repo) == [] and leftovers(tmp_path) == []
