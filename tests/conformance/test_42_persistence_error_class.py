"""Matrix 42 (the storage half): durable-storage failures are PERSISTENCE_ERROR, never
UNKNOWN or a retryable failure, and never a provider/model failure.

A store file that is not a database is refused before the run starts: one line naming
PERSISTENCE_ERROR, exit 1, nothing snapshotted or changed. A store failure in the middle
of a run ends it at once with PERSISTENCE_ERROR and the phase it happened after; it is not
retried, even with attempts to spare."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration._store import FIX, cli, run_recorded, state_root
from tidegate.errors import ErrorClass, PersistenceError


def test_the_error_class_is_terminal() -> None:
    assert PersistenceError.error_class is ErrorClass.PERSISTENCE_ERROR
    assert not ErrorClass.PERSISTENCE_ERROR.retryable


def test_a_broken_store_file_refuses_the_run_before_it_starts(committed_repo: Repo) -> None:
    repo = committed_repo
    assert cli("run", "--objective", FIX, cwd=repo.root)[0] == 0
    repo.git("checkout", "--", "calc.py")
    [store] = state_root().glob("*/runs.sqlite3")
    store.write_bytes(b"this is not an SQLite database" * 100)
    before = repo.tree_state(with_mtimes=True)
    refs = repo.git("for-each-ref", "refs/tidegate")

    code, report, err = cli("run", "--objective", FIX, cwd=repo.root)

    assert code == 1 and report is None
    assert err.count("\n") == 1 and err.startswith("tidegate: error: PERSISTENCE_ERROR: ")
    assert repo.tree_state(with_mtimes=True) == before
    assert repo.git("for-each-ref", "refs/tidegate") == refs


def test_a_store_failure_mid_run_is_classified_and_not_retried(committed_repo: Repo) -> None:
    report, _ = run_recorded(committed_repo, FIX, "checkpoint.write:6", max_attempts=3)
    assert (report.status, report.error_class) == ("failed", "PERSISTENCE_ERROR")
    assert report.failure_phase == "PATCH"  # checkpoints: bootstrap, then one per phase
    assert report.attempts == 1 and report.attempt_events == []
    assert "could not be stored durably" in report.message
