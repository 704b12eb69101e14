"""The store's records and their rows: what a run starts with, and runs, attempts and
tool calls as read back, with the status a reader should see derived from the row."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from tidegate.errors import ErrorClass
from tidegate.store.corrupt import CorruptRecord, stored_json
from tidegate.store.holder import ProcessIdentity
from tidegate.store.reading import KNOWN_STATUSES, TERMINAL

if TYPE_CHECKING:
    from tidegate.records.report import FlowReport

CORRUPT = "corrupt"
"""The derived status of a run whose row cannot be read as written (see ``problem``)."""


ATTEMPT_COLUMNS = (
    "attempt, execution_id, status, failure_phase, error_class, proposal_sha256, "
    "candidate_tree, event_json"
)
TOOL_CALL_COLUMNS = (
    "tool_call_id, canonical_tool, input_sha256, attempt, execution_id, status, "
    "effects, result_sha256, request_seq, finish_seq"
)


class RunStart(msgspec.Struct, frozen=True):
    """What the store learns when an execution of a run begins."""

    run_id: str
    repo: str
    task_id: str
    mode: str
    execution_id: str
    kind: str = "engine"
    request: Mapping[str, object] | None = None


class StoredRun(msgspec.Struct, frozen=True):
    """A run as the store sees it. ``status`` is derived: a ``running`` run whose process
    is gone is ``interrupted``; an ended run whose report was never acknowledged is
    ``failed`` with PERSISTENCE_ERROR (``stored_status`` keeps what the row says)."""

    run_id: str
    seq: int
    mode: str
    status: str
    error_class: str | None
    attempts: int
    duration_s: float
    report: FlowReport | None
    repo: str = ""
    task_id: str = ""
    kind: str = "engine"
    stored_status: str = ""
    failure_phase: str | None = None
    replay_hash: str | None = None
    execution_id: str | None = None
    holder: ProcessIdentity | None = None
    started_ms: int = 0
    updated_ms: int = 0
    acknowledged: bool = True
    problem: str | None = None
    """Why the row is corrupt (``status`` is then ``corrupt``), else None."""


class StoredAttempt(msgspec.Struct, frozen=True):
    attempt: int
    execution_id: str
    status: str
    failure_phase: str | None
    error_class: str | None
    proposal_sha256: str | None
    candidate_tree: str | None
    event: dict[str, Any]


class StoredToolCall(msgspec.Struct, frozen=True):
    tool_call_id: str
    canonical_tool: str
    input_sha256: str
    attempt: int | None
    execution_id: str
    status: str
    effects: Any
    result_sha256: str | None
    request_seq: int
    finish_seq: int | None


def stored_run(row: tuple[Any, ...], *, with_report: bool = True) -> StoredRun:
    """A ``runs`` row (``RUN_COLUMNS``) as a ``StoredRun``, its status derived; without
    ``with_report`` the report is not parsed (``report`` is None). A row that
    cannot be read as the store writes it comes back with status ``corrupt`` and a
    ``problem`` naming what is wrong, so a listing still shows every other run."""
    try:
        return _stored_run(row, with_report)
    except (TypeError, ValueError, OverflowError) as exc:
        return _corrupt_run(row, f"its row has a malformed field ({type(exc).__name__})")
    except _Corrupt as exc:
        return _corrupt_run(row, str(exc))


class _Corrupt(Exception):
    pass


def _corrupt_run(row: tuple[Any, ...], problem: str) -> StoredRun:
    def text(value: object) -> str:
        return value if isinstance(value, str) else repr(value)

    seq = row[1] if isinstance(row[1], int) else 0
    started = row[18] if isinstance(row[18], int) else 0
    return StoredRun(
        run_id=text(row[0]),
        seq=seq,
        mode=text(row[5]),
        status=CORRUPT,
        error_class=None,
        attempts=0,
        duration_s=0.0,
        report=None,
        repo=text(row[2]),
        task_id=text(row[3]),
        kind=text(row[4]),
        stored_status=text(row[6]),
        started_ms=started,
        updated_ms=started,
        acknowledged=False,
        problem=problem,
    )


def _holder(pid: object, pid_start: object, host: object) -> ProcessIdentity | None:
    """The recorded holder; a pid no process can have (not a positive int below the
    kernel's limit) is no holder at all, so the run reads as interrupted."""
    if not isinstance(pid, int) or not 0 < pid < 2**22:
        return None
    return ProcessIdentity(pid, str(pid_start or ""), str(host or ""))


def _report(report_json: str | bytes) -> FlowReport:
    """The stored report parsed (the report model: loaded only when a report is read), or
    ``_Corrupt`` naming the first field that is not what a report holds."""
    from tidegate.records.checked import CheckError
    from tidegate.records.report import FlowReport

    try:
        return FlowReport.model_validate_json(report_json)
    except CheckError as exc:
        raise _Corrupt(f"its stored report is not a valid report ({exc})") from exc


def _check_report_json(report_json: object) -> None:
    """``_Corrupt`` unless the stored report is at least a JSON object."""
    try:
        value = json.loads(report_json)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise _Corrupt(
            f"its stored report is not a valid report (not JSON: {type(exc).__name__})"
        ) from exc
    if not isinstance(value, dict):
        raise _Corrupt("its stored report is not a valid report (not a JSON object)")


def _stored_run(row: tuple[Any, ...], with_report: bool) -> StoredRun:
    (
        run_id,
        seq,
        repo,
        task_id,
        kind,
        mode,
        status,
        error_class,
        failure_phase,
        attempts,
        _t0_ref,
        _diff,
        replay,
        duration,
        execution_id,
        pid,
        pid_start,
        host,
        started,
        updated,
        report_json,
        acknowledged,
    ) = row
    if status not in KNOWN_STATUSES:
        raise _Corrupt(f"its stored status {status!r} is not one tidegate writes")
    report = None
    if report_json is not None and with_report:
        report = _report(report_json)
    elif report_json is not None:
        _check_report_json(report_json)  # a listing: stdlib JSON only, no report model
    holder = _holder(pid, pid_start, host)
    derived = str(status)
    if derived == "running" and (holder is None or not holder.alive()):
        derived = "interrupted"
    if derived in TERMINAL and not acknowledged:
        derived, error_class = "failed", ErrorClass.PERSISTENCE_ERROR.value
        report = _unacknowledged(report)
    return StoredRun(
        run_id=str(run_id),
        seq=int(seq),
        mode=str(mode),
        status=derived,
        error_class=None if error_class is None else str(error_class),
        attempts=int(attempts),
        duration_s=float(duration or 0.0),
        report=report,
        repo=str(repo),
        task_id=str(task_id),
        kind=str(kind),
        stored_status=str(status),
        failure_phase=None if failure_phase is None else str(failure_phase),
        replay_hash=None if replay is None else str(replay),
        execution_id=None if execution_id is None else str(execution_id),
        holder=holder,
        started_ms=int(started),
        updated_ms=int(updated),
        acknowledged=bool(acknowledged),
    )


def _unacknowledged(report: FlowReport | None) -> FlowReport | None:
    """A final report the store never acknowledged, as a reader must see it: failed."""
    if report is None:
        return None
    return report.model_copy(
        update={
            "status": "failed",
            "error_class": ErrorClass.PERSISTENCE_ERROR.value,
            "message": "the final report was written but never acknowledged by the "
            f"store (it said: {report.status}: {report.message})",
        }
    )


def stored_attempt(run_id: str, r: tuple[Any, ...]) -> StoredAttempt:
    """An ``attempts`` row (``ATTEMPT_COLUMNS``) as a ``StoredAttempt``."""
    event = stored_json(r[7], f"run {run_id}: the record of attempt {r[0]!r}")
    if not isinstance(event, dict):
        raise CorruptRecord(f"run {run_id}: the record of attempt {r[0]!r} is not an object")
    return StoredAttempt(
        attempt=r[0],
        execution_id=r[1],
        status=r[2],
        failure_phase=r[3],
        error_class=r[4],
        proposal_sha256=r[5],
        candidate_tree=r[6],
        event=event,
    )


def stored_tool_call(run_id: str, r: tuple[Any, ...]) -> StoredToolCall:
    """A ``tool_calls`` row (``TOOL_CALL_COLUMNS``) as a ``StoredToolCall``."""
    what = f"run {run_id}: the effects of tool call {r[0]!r}"
    return StoredToolCall(
        tool_call_id=r[0],
        canonical_tool=r[1],
        input_sha256=r[2],
        attempt=r[3],
        execution_id=r[4],
        status=r[5],
        effects=None if r[6] is None else stored_json(r[6], what),
        result_sha256=r[7],
        request_seq=r[8],
        finish_seq=r[9],
    )
