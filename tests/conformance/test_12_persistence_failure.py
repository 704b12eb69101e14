"""Matrix 12: a trace flush that fails, and a final report that cannot be stored, never
end as a completed run.

The real CLI runs with ``TIDEGATE_STORE_FAULT`` naming a store failure point (an explicit
port of the store, inert unless set). A failed trace flush stops the run at once: before
APPLY_BACK, so the work tree is untouched. A final report that cannot be stored turns a
run that did apply its change into a PERSISTENCE_ERROR (exit 1) whose message says what
was applied; when the store takes the downgraded report, that is what ``read`` shows."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration._store import FIX, cli, readonly_store


def test_a_failed_trace_flush_stops_the_run_before_anything_changes(committed_repo: Repo) -> None:
    repo = committed_repo
    before = repo.tree_state(with_mtimes=True)

    code, report, err = cli(
        "run", "--objective", FIX, cwd=repo.root, env={"TIDEGATE_STORE_FAULT": "trace.write"}
    )

    assert code == 1, err
    assert isinstance(report, dict)
    assert (report["status"], report["error_class"]) == ("failed", "PERSISTENCE_ERROR")
    assert "injected store fault at trace.write" in report["message"]
    assert report["phases"] == []  # stopped at its first flush, before any phase
    assert repo.tree_state(with_mtimes=True) == before


def test_a_report_that_cannot_be_stored_is_a_persistence_error(committed_repo: Repo) -> None:
    repo = committed_repo
    code, report, err = cli(
        "run", "--objective", FIX, cwd=repo.root, env={"TIDEGATE_STORE_FAULT": "report.write"}
    )

    assert code == 1, err
    assert isinstance(report, dict)
    assert (report["status"], report["error_class"]) == ("failed", "PERSISTENCE_ERROR")
    assert report["failure_phase"] == "RECORD"
    assert "ended succeeded but its record could not be stored durably" in report["message"]
    assert "the change was applied to 1 path(s) of your work tree" in report["message"]
    assert repo.read("calc.py").count("return a + b") == 1
    # Neither report reached the store: the run reads as interrupted, never succeeded.
    [run] = readonly_store(repo).runs()
    assert run.status == "interrupted" and run.report is None


def test_when_only_the_first_store_attempt_fails_the_failure_is_recorded(
    committed_repo: Repo,
) -> None:
    repo = committed_repo
    code, report, _ = cli(
        "run", "--objective", FIX, cwd=repo.root, env={"TIDEGATE_STORE_FAULT": "report.write:1"}
    )
    assert code == 1
    code, stored, _ = cli("read", "latest", cwd=repo.root)
    assert code == 0 and isinstance(stored, dict) and isinstance(report, dict)
    assert (stored["status"], stored["error_class"]) == ("failed", "PERSISTENCE_ERROR")
    assert stored["run_id"] == report["run_id"]
