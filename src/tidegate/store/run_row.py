"""A ``runs`` row as the read path shows it: its fields' types checked, its status derived
as the store derives it (a dead holder: ``interrupted``; a final report the store never
acknowledged: ``failed``, ``PERSISTENCE_ERROR``) and its report checked. A row that is not
what the store writes is read by the engine's own reader (``store.rows.stored_run``),
which names what is wrong (``problem``).
"""

from __future__ import annotations

import json

from tidegate.disk.owners import holder_alive
from tidegate.store.reading import KNOWN_STATUSES, TERMINAL, Irregular

TYPE_CHECKING = False  # ``read`` does not import typing
if TYPE_CHECKING:
    from typing import Any


def run_row(row: tuple[Any, ...], *, with_report: bool) -> dict[str, Any]:
    """A ``runs`` row with its status derived and (``with_report``) its report parsed."""
    try:
        return _regular_run(row, with_report)
    except (Irregular, ValueError, TypeError, OverflowError, RecursionError):
        return _engine_run(row, with_report)


def _regular_run(row: tuple[Any, ...], with_report: bool) -> dict[str, Any]:
    (run_id, seq, repo, task_id, kind, mode, status, error_class, failure_phase, attempts,
     _t0, _diff, replay, duration, execution_id, pid, pid_start, host, started, updated,
     report_json, acknowledged) = row  # fmt: skip
    texts = (run_id, repo, task_id, kind, mode, status)
    numbers = (seq, attempts, started, updated)
    if not all(type(v) is str for v in texts) or not all(type(v) is int for v in numbers):
        raise Irregular("a field of the wrong type")
    if status not in KNOWN_STATUSES:
        raise Irregular("a status the store never writes")
    report = None
    files_changed = None
    if report_json is not None:
        value = json.loads(report_json, object_pairs_hook=_unique)
        if not isinstance(value, dict):
            raise Irregular("a report that is not an object")
        if isinstance(value.get("changed_files"), list):
            files_changed = len(value["changed_files"])
        if with_report:
            from tidegate.store.report_check import checked_report

            report = checked_report(value)
    valid = type(pid) is int and 0 < pid < 2**22  # a pid no process can have: no holder
    derived = status
    if derived == "running" and not (
        valid and holder_alive(pid, str(pid_start or ""), str(host or ""))
    ):
        derived = "interrupted"
    unacknowledged = derived in TERMINAL and not acknowledged
    if unacknowledged:
        derived, error_class = "failed", "PERSISTENCE_ERROR"
        if report is not None:
            said = f"{report['status']}: {report['message']}"
            report = {**report, "status": "failed", "error_class": error_class}
            report["message"] = (
                "the final report was written but never acknowledged by the store "
                f"(it said: {said})"
            )
    return {
        "run_id": run_id, "seq": seq, "repo": repo, "task_id": task_id, "kind": kind,
        "mode": mode, "status": derived, "stored_status": status,
        "error_class": None if error_class is None else str(error_class),
        "failure_phase": None if failure_phase is None else str(failure_phase),
        "attempts": attempts, "duration_s": float(duration or 0.0),
        "replay_hash": None if replay is None else str(replay),
        "execution_id": None if execution_id is None else str(execution_id),
        "pid": pid if valid else None, "started_ms": started, "updated_ms": updated,
        "acknowledged": bool(acknowledged), "report": report, "problem": None,
        "files_changed": files_changed,
    }  # fmt: skip


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise Irregular("a repeated key")
    return value


def _engine_run(row: tuple[Any, ...], with_report: bool) -> dict[str, Any]:
    """The row as the engine's reader (``store.rows.stored_run``) reads it."""
    from tidegate.store.rows import stored_run

    run = stored_run(row, with_report=with_report)
    report = None if run.report is None else run.report.model_dump(mode="json")
    return {
        "run_id": run.run_id, "seq": run.seq, "repo": run.repo, "task_id": run.task_id,
        "kind": run.kind, "mode": run.mode, "status": run.status,
        "stored_status": run.stored_status, "error_class": run.error_class,
        "failure_phase": run.failure_phase, "attempts": run.attempts,
        "duration_s": run.duration_s, "replay_hash": run.replay_hash,
        "execution_id": run.execution_id, "pid": run.holder.pid if run.holder else None,
        "started_ms": run.started_ms, "updated_ms": run.updated_ms,
        "acknowledged": run.acknowledged, "report": report, "problem": run.problem,
    }  # fmt: skip
