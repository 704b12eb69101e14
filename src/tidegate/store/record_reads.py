"""The run store's record readers: runs, one run, its request, trace, checkpoints and
their committed head, attempts and tool calls, each row checked as the store writes it (a
record that is not is named by ``CorruptRecord``). ``RunStore`` has them; ``resume``,
``recover``, the gym and the read path's irregular cases read through them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from tidegate.errors import UsageError
from tidegate.store.chain_rows import rebuild
from tidegate.store.checkpoints import ChainHead, Checkpoint
from tidegate.store.corrupt import CorruptRecord, stored_json
from tidegate.store.reading import CHECKPOINT_ROW, CHECKPOINT_TYPES, RUN_COLUMNS
from tidegate.store.rows import (
    ATTEMPT_COLUMNS,
    TOOL_CALL_COLUMNS,
    StoredAttempt,
    StoredRun,
    StoredToolCall,
    stored_attempt,
    stored_run,
    stored_tool_call,
)
from tidegate.store.trace import TraceEvent, check_event


class RecordReads(ABC):
    """Reading records back; ``query`` is the store's."""

    @abstractmethod
    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...

    def runs(
        self, limit: int = 50, repo: str | None = None, *, reports: bool = True
    ) -> list[StoredRun]:
        """The newest runs first; ``reports=False`` leaves ``report`` None (a listing does
        not need the parsed reports, nor the model library that parses them)."""
        where, params = ("WHERE repo = ? ", [repo]) if repo is not None else ("", [])
        rows = self.query(
            f"SELECT {RUN_COLUMNS} FROM runs {where}ORDER BY seq DESC LIMIT ?",
            [*params, limit],
        )
        return [stored_run(row, with_report=reports) for row in rows]

    def get(self, run_id: str) -> StoredRun:
        """A run by id, or the newest with ``latest``."""
        if run_id == "latest":
            rows = self.query(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY seq DESC LIMIT 1")
        else:
            rows = self.query(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise UsageError(f"no recorded run {run_id!r} for this repository")
        return stored_run(rows[0])

    def request(self, run_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT request_json FROM runs WHERE run_id = ?", [run_id])
        if not rows or rows[0][0] is None:
            return None
        value = stored_json(rows[0][0], f"run {run_id}: its stored request")
        return value if isinstance(value, dict) else None

    def events(self, run_id: str) -> list[TraceEvent]:
        rows = self.query(
            "SELECT run_id, seq, event_id, task_id, execution_id, attempt, tool_call_id, kind, "
            "phase, payload, meta, at_ms FROM trace WHERE run_id = ? ORDER BY seq",
            [run_id],
        )
        events = [TraceEvent(*row) for row in rows]
        for event in events:
            check_event(event)
        return events

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's checkpoints in order, each document rebuilt from its row (whole, or a
        delta on the one before: ``chain_rows``); verify them with ``verify_committed``."""
        rows = self.query(
            f"SELECT {CHECKPOINT_ROW} FROM checkpoints WHERE run_id = ? ORDER BY seq", [run_id]
        )
        for row in rows:
            if not all(isinstance(v, t) for v, t in zip(row, CHECKPOINT_TYPES, strict=True)):
                raise CorruptRecord(
                    f"run {run_id}: checkpoint row {row[1]!r} has a field of the wrong type"
                )
        return rebuild(run_id, rows)

    def checkpoint_head(self, run_id: str) -> ChainHead | None:
        """The run's committed chain head, or None when none was recorded."""
        rows = self.query(
            "SELECT run_id, count, last_hash, mac FROM checkpoint_heads WHERE run_id = ?",
            [run_id],
        )
        if not rows:
            return None
        if not all(isinstance(v, t) for v, t in zip(rows[0], (str, int, str, str), strict=True)):
            raise CorruptRecord(f"run {run_id}: its checkpoint head has a field of the wrong type")
        return ChainHead(*rows[0])

    def attempts(self, run_id: str) -> list[StoredAttempt]:
        rows = self.query(
            f"SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE run_id = ? ORDER BY attempt", [run_id]
        )
        return [stored_attempt(run_id, r) for r in rows]

    def tool_calls(self, run_id: str) -> list[StoredToolCall]:
        rows = self.query(
            f"SELECT {TOOL_CALL_COLUMNS} FROM tool_calls WHERE run_id = ? ORDER BY request_seq",
            [run_id],
        )
        return [stored_tool_call(run_id, r) for r in rows]
