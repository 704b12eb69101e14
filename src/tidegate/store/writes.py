"""The SQL a run store write transaction runs: the trace with its projections,
checkpoints and final reports. Each function takes the open connection and writes
nothing outside the caller's transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from tidegate.disk.faults import maybe_crash
from tidegate.store.chain_rows import ChainTip, encode, tip_of
from tidegate.store.checkpoints import Checkpoint, CheckpointKey, seal, seal_head
from tidegate.store.reading import CHECKPOINT_ROW
from tidegate.store.redact import Redactor
from tidegate.store.trace import TraceEvent, now_ms
from tidegate.text.sanitize import redact_value

if TYPE_CHECKING:
    from tidegate.records.report import FlowReport


def insert_events(db: sqlite3.Connection, events: Sequence[TraceEvent]) -> None:
    """Append ``events`` to the trace and update the tables projected from them."""
    if not events:
        return
    # OR IGNORE: a flush whose commit succeeded but whose caller never learned so (an
    # interrupt between the two) is retried with the very same events.
    db.executemany(
        "INSERT OR IGNORE INTO trace VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                e.run_id,
                e.seq,
                e.event_id,
                e.task_id,
                e.execution_id,
                e.attempt,
                e.tool_call_id,
                e.kind,
                e.phase,
                e.payload,
                e.meta,
                e.at_ms,
            )
            for e in events
        ],
    )
    for event in events:
        project = _PROJECTIONS.get(event.kind)
        if project is not None:
            project(db, event)


def _project_phase(db: sqlite3.Connection, e: TraceEvent) -> None:
    payload, meta = e.payload_value(), e.meta_value()
    # OR IGNORE: the unique (run_id, event_seq) index makes a repeated flush a no-op.
    db.execute(
        "INSERT OR IGNORE INTO phase_events (run_id, seq, attempt, phase, effect, status, duration_ms, "
        "detail, error_class, task_id, execution_id, event_seq) VALUES (?, (SELECT "
        "COALESCE(MAX(seq), 0) + 1 FROM phase_events WHERE run_id = ?), ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?)",
        (
            e.run_id,
            e.run_id,
            e.attempt or 0,
            payload["phase"],
            payload["effect"],
            payload["status"],
            int(meta.get("duration_us", 0)) / 1000,
            str(meta.get("detail", "")),
            payload.get("error_class"),
            e.task_id,
            e.execution_id,
            e.seq,
        ),
    )


def _project_attempt(db: sqlite3.Connection, e: TraceEvent) -> None:
    p = e.payload_value()
    event = {**p, "duration_ms": int(e.meta_value().get("duration_us", 0)) / 1000}
    db.execute(
        "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.run_id,
            p["attempt"],
            e.execution_id,
            p["status"],
            p.get("failure_phase"),
            p.get("error_class"),
            p.get("proposal_sha256"),
            p.get("candidate_tree"),
            e.seq,
            json.dumps(event, sort_keys=True),
        ),
    )


def _project_tool_request(db: sqlite3.Connection, e: TraceEvent) -> None:
    p = e.payload_value()
    db.execute(
        "INSERT OR IGNORE INTO tool_calls (run_id, tool_call_id, canonical_tool, input_sha256, "
        "attempt, execution_id, request_seq, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'requested')",
        (
            e.run_id,
            e.tool_call_id,
            p["canonical_tool"],
            p["input_sha256"],
            e.attempt,
            e.execution_id,
            e.seq,
        ),
    )


def _project_tool_finish(db: sqlite3.Connection, e: TraceEvent) -> None:
    p = e.payload_value()
    changed = db.execute(
        "UPDATE tool_calls SET status = ?, effects = ?, result_sha256 = ?, finish_seq = ? "
        "WHERE run_id = ? AND tool_call_id = ?",
        (
            p["status"],
            json.dumps(p.get("effects"), sort_keys=True),
            p.get("result_sha256"),
            e.seq,
            e.run_id,
            e.tool_call_id,
        ),
    ).rowcount
    if changed != 1:
        raise sqlite3.IntegrityError(f"tool call {e.tool_call_id} finished but was never requested")


_PROJECTIONS: dict[str, Callable[[sqlite3.Connection, TraceEvent], None]] = {
    "phase.finished": _project_phase,
    "attempt.finished": _project_attempt,
    "tool.requested": _project_tool_request,
    "tool.finished": _project_tool_finish,
}


def insert_checkpoint(
    db: sqlite3.Connection,
    key: CheckpointKey,
    run_id: str,
    reason: str,
    state: Mapping[str, object],
    tip: ChainTip | None,
    redactor: Redactor,
) -> tuple[Checkpoint, ChainTip]:
    """Seal the redacted ``state`` as the run's next checkpoint, chained to its last one
    and covering the trace up to its last event, and insert it -- as a delta against
    ``tip`` (the writer's copy of the last checkpoint) when that is still the run's last,
    else rebuilt from the rows -- with the run's new committed head (in the caller's
    transaction: both or neither). Returns the checkpoint and the new tip."""
    row = db.execute(
        "SELECT seq, hash FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
    ).fetchone()
    seq, prev = (1, None) if row is None else (int(row[0]) + 1, str(row[1]))
    event_seq = db.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM trace WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    redacted = redactor(dict(state))
    assert isinstance(redacted, dict)
    sealed = seal(
        key,
        run_id=run_id,
        seq=seq,
        event_seq=int(event_seq),
        reason=reason,
        prev_hash=prev,
        state=redacted,
    )
    if prev is not None and (tip is None or (tip.seq, tip.hash) != (seq - 1, prev)):
        tip = tip_of(run_id, _since_last_full(db, run_id))
    encoding, text, new_tip = encode(tip, sealed)
    db.execute(
        "INSERT INTO checkpoints (run_id, seq, event_seq, reason, prev_hash, hash, mac, "
        "document, encoding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            sealed.seq,
            sealed.event_seq,
            sealed.reason,
            sealed.prev_hash,
            sealed.hash,
            sealed.mac,
            text,
            encoding,
        ),
    )
    maybe_crash("checkpoint.before_head", sealed.seq)  # crash tests: the row, not the head
    head = seal_head(key, sealed)
    db.execute(
        "INSERT INTO checkpoint_heads VALUES (?, ?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET "
        "count = excluded.count, last_hash = excluded.last_hash, mac = excluded.mac",
        (head.run_id, head.count, head.last_hash, head.mac),
    )
    return sealed, new_tip


def _since_last_full(db: sqlite3.Connection, run_id: str) -> list[tuple[object, ...]]:
    return db.execute(
        f"SELECT {CHECKPOINT_ROW} FROM checkpoints WHERE run_id = ? AND seq >= (SELECT "
        "COALESCE(MAX(seq), 0) FROM checkpoints WHERE run_id = ? AND encoding = 'full') "
        "ORDER BY seq",
        (run_id, run_id),
    ).fetchall()


def redacted_report(report: FlowReport) -> FlowReport:
    """``report`` as it is stored: with secrets redacted."""
    from tidegate.records.report import FlowReport

    return FlowReport.model_validate(redact_value(report.model_dump(mode="json")))


def upsert_report(db: sqlite3.Connection, report: FlowReport, text: str) -> None:
    """Store the final report (``text``) on the run's row, not yet acknowledged; a run
    that never started (refused at bootstrap) gets its row here."""
    values = (
        report.status,
        report.error_class,
        report.failure_phase,
        report.attempts,
        report.t0_ref,
        report.diff_sha256,
        report.replay_hash,
        report.duration_s,
        text,
        now_ms(),
    )
    changed = db.execute(
        "UPDATE runs SET status = ?, error_class = ?, failure_phase = ?, attempts = ?, "
        "t0_ref = ?, diff_sha256 = ?, replay_hash = ?, duration_s = ?, report_json = ?, "
        "updated_ms = ?, acknowledged = 0 WHERE run_id = ?",
        (*values, report.run_id),
    ).rowcount
    if changed:
        return
    stamp = now_ms()
    db.execute(
        "INSERT INTO runs (run_id, seq, repo, task_id, mode, status, error_class, failure_phase, "
        "attempts, t0_ref, diff_sha256, replay_hash, duration_s, report_json, started_ms, "
        "updated_ms) VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            report.run_id,
            report.repo,
            report.run_id,
            report.mode,
            *values[:-1],
            stamp,
            stamp,
        ),
    )
