"""A write of the apply-back fails halfway: permission denied, a full disk, a read-only
file system on one file.

The attacker's moment: two of the four operations are already on disk when the third
write fails. tidegate must put the first two back from the journal on the spot (old bytes,
old mode, created files gone), report a failed run naming the file and the errno, list
nothing as applied, and leave no journal, so the next run starts. When the restore fails
too, the journal stays and the message sends the user to ``tidegate recover``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial._applyback import (
    NEW,
    OLD,
    env,
    four_ops,
    journals,
    leftovers,
    on_disk,
    run,
)
from tests.conftest import Repo
from tests.integration._store import cli

__all__ = ["four_ops"]


@pytest.mark.parametrize(("code", "nth"), [("EACCES", 1), ("ENOSPC", 3), ("EROFS", 4)])
def test_a_failed_write_rolls_back_every_earlier_write(
    four_ops: Repo, tmp_path: Path, code: str, nth: int
) -> None:
    repo = four_ops
    before = repo.tree_state()

    exit_code, report, err = run(
        repo, tmp_path, TIDEGATE_FAULT=f"apply_back.before_write:{nth}={code}"
    )

    assert exit_code == 1, err
    assert "Traceback" not in err
    assert report["status"] == "failed"
    assert report["failure_phase"] == "APPLY_BACK"
    assert report["error_class"] == "PERSISTENCE_ERROR"
    failed_path = sorted(OLD)[nth - 1]
    assert f"writing {failed_path}: {code}" in report["message"]
    assert "nothing was applied" in report["message"]
    assert report["applied_files"] == []
    assert repo.tree_state() == before  # bytes, modes, index: all as they were
    assert on_disk(repo, OLD)
    assert journals(repo) == []
    assert leftovers(tmp_path) == []
    assert not list(repo.root.rglob(".tidegate-tmp-*"))

    exit_code, report, err = run(repo, tmp_path)  # nothing pending: the next run works

    assert exit_code == 0, err
    assert on_disk(repo, NEW)


def test_a_journal_that_cannot_be_written_changes_nothing(four_ops: Repo, tmp_path: Path) -> None:
    repo = four_ops
    before = repo.tree_state()

    exit_code, report, err = run(repo, tmp_path, TIDEGATE_FAULT="journal.blobs_saved=ENOSPC")

    assert exit_code == 1, err
    assert report["error_class"] == "PERSISTENCE_ERROR"
    assert "writing the apply-back journal: ENOSPC" in report["message"]
    assert report["applied_files"] == []
    assert repo.tree_state() == before
    assert journals(repo) == []


def test_when_the_restore_fails_too_the_journal_stays_for_recover(
    four_ops: Repo, tmp_path: Path
) -> None:
    repo = four_ops
    before = repo.tree_state()
    faults = "apply_back.before_write:3=ENOSPC,apply_back.before_undo:1=EIO"

    exit_code, report, err = run(repo, tmp_path, TIDEGATE_FAULT=faults)

    assert exit_code == 1, err
    assert report["error_class"] == "PERSISTENCE_ERROR"
    assert "writing c.txt: ENOSPC" in report["message"]
    assert "the journal is kept: run `tidegate recover --rollback`" in report["message"]
    assert sorted(f["path"] for f in report["applied_files"]) == ["a.txt", "b.sh"]
    assert len(journals(repo)) == 1

    exit_code, summary, err = cli("recover", "--rollback", cwd=repo.root, env=env(tmp_path))

    assert exit_code == 0, err
    assert summary["journals"][0]["action"] == "rolled back"
    assert sorted(summary["journals"][0]["finished"]) == ["a.txt", "b.sh"]
    assert repo.tree_state() == before
    assert journals(repo) == []
