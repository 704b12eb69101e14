"""What became of a run's change after the run: ``landings`` rows (schema 5).

A run that ends ``held`` (``run --hold``) kept its verified change without applying it;
``tidegate apply`` lands it later (``applied``), ``tidegate discard`` drops it
(``discarded``). A landed change -- by the run's own APPLY_BACK or by ``apply`` -- can be
reversed once (``undone``). Rows are appended, never changed; the last one stands. A row
is written after the work tree holds what it says (the journal covers the writes before
it), so a crash in between leaves the work tree ahead of the record, and running the same
command again finds nothing left to write and records it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from tidegate.store.reading import LAST_LANDING_SQL
from tidegate.store.trace import now_ms
from tidegate.text.sanitize import redact_value

if TYPE_CHECKING:
    from tidegate.store.db import RunStore

ACTIONS = ("applied", "discarded", "undone")
__all__ = ["ACTIONS", "LAST_LANDING_SQL", "landed_by", "landings", "record_landing"]


def landings(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    """The run's landing rows, oldest first: ``action``, ``detail`` (an object), ``at_ms``."""
    rows = store.query(
        "SELECT action, detail, at_ms FROM landings WHERE run_id = ? ORDER BY seq", [run_id]
    )
    out = []
    for action, detail, at_ms in rows:
        value = json.loads(detail) if isinstance(detail, str) else None
        if action not in ACTIONS or not isinstance(value, dict) or not isinstance(at_ms, int):
            from tidegate.store.corrupt import CorruptRecord

            raise CorruptRecord(f"run {run_id}: a landing record is not what the store writes")
        out.append({"action": action, "detail": value, "at_ms": at_ms})
    return out


def landed_by(store: RunStore) -> dict[str, str]:
    """The runs that landed a subset of a held run, each mapped to that held run (the
    ``by_run`` of an ``applied`` landing): their change stands for the held run's."""
    rows = store.query(
        "SELECT run_id, json_extract(detail, '$.by_run') FROM landings "
        "WHERE action = 'applied' AND json_valid(detail) "
        "AND json_type(detail, '$.by_run') = 'text'"
    )
    return {str(by): str(held) for held, by in rows}


def record_landing(store: RunStore, run_id: str, action: str, detail: dict[str, Any]) -> None:
    """Append a landing row, durably and acknowledged (``PersistenceError`` otherwise)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown landing action {action!r}")
    text = json.dumps(redact_value(detail), sort_keys=True)
    store._inject(["landing.write"], f"record that run {run_id} was {action}")

    def write(db: sqlite3.Connection) -> int:
        seq = int(
            db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM landings WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
        )
        db.execute(
            "INSERT INTO landings (run_id, seq, action, detail, at_ms) VALUES (?, ?, ?, ?, ?)",
            (run_id, seq, action, text, now_ms()),
        )
        return seq

    seq = store.transaction(f"record that run {run_id} was {action}", write)

    def written() -> bool:
        rows = store.query(
            "SELECT action FROM landings WHERE run_id = ? AND seq = ?", [run_id, seq]
        )
        return bool(rows) and rows[0][0] == action

    store.acknowledge(f"the landing of run {run_id}", "landing.ack", written)
