"""Matrix 40: when a checkpoint or the final report is written but its acknowledgement
fails, the run fails closed, even though the write itself committed.

Runs go through the engine with the store's ``ack`` fault points (the write commits, then
its read-back acknowledgement raises). A checkpoint whose acknowledgement fails stops the
run with PERSISTENCE_ERROR before the work tree is touched. A final report whose
acknowledgement fails is never reported as succeeded: the host then stores the failure in
its place; when that acknowledgement fails too, the row (which says failed) stays
unacknowledged and every reader shows the run failed. When the second acknowledgement
succeeds, the acknowledged row is the failure."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration._store import FIX, cli, readonly_store, run_recorded


def test_an_unacknowledged_checkpoint_stops_the_run(committed_repo: Repo) -> None:
    repo = committed_repo
    before = repo.tree_state(with_mtimes=True)
    report, store = run_recorded(repo, FIX, "checkpoint.ack:4")
    assert (report.status, report.error_class) == ("failed", "PERSISTENCE_ERROR")
    assert "checkpoint 4 of run" in report.message and "not acknowledged" in report.message
    assert report.failure_phase == "EXPLORE"  # the checkpoint after PREFLIGHT, CONTEXT, EXPLORE
    assert repo.tree_state(with_mtimes=True) == before
    # The checkpoint did commit: the fault hit only its acknowledgement.
    assert len(store.checkpoints(report.run_id)) == 4
    stored = store.get(report.run_id)
    assert (stored.status, stored.error_class) == ("failed", "PERSISTENCE_ERROR")


def test_an_unacknowledged_final_report_is_never_a_success(committed_repo: Repo) -> None:
    repo = committed_repo
    code, report, err = cli(
        "run", "--objective", FIX, cwd=repo.root, env={"TIDEGATE_STORE_FAULT": "report.ack"}
    )
    assert code == 1, err
    assert isinstance(report, dict)
    assert (report["status"], report["error_class"]) == ("failed", "PERSISTENCE_ERROR")
    assert "was not acknowledged" in report["message"]

    run = readonly_store(repo).get(report["run_id"])
    # The host stored the failure over the unacknowledged success; with ``report.ack`` failing
    # every acknowledgement, that row is unacknowledged too, and reads back as failed.
    assert run.stored_status == "failed" and not run.acknowledged
    assert (run.status, run.error_class) == ("failed", "PERSISTENCE_ERROR")
    code, shown, _ = cli("read", report["run_id"], cwd=repo.root)
    assert isinstance(shown, dict) and shown["status"] == "failed"
    listed = cli("runs", cwd=repo.root)[1]
    assert isinstance(listed, list) and listed[0]["status"] == "failed"


def test_a_report_acknowledged_on_the_second_try_records_the_failure(
    committed_repo: Repo,
) -> None:
    report, store = run_recorded(committed_repo, FIX, "report.ack:1")
    assert (report.status, report.error_class) == ("failed", "PERSISTENCE_ERROR")
    run = store.get(report.run_id)
    assert run.acknowledged and run.stored_status == "failed"
    assert run.report is not None and run.report.error_class == "PERSISTENCE_ERROR"
