"""Views of recorded runs, in a stable order: a listing row per run (``tidegate runs``) and
everything recorded about one run (``tidegate read``), built from a store opened by
``store.reading``. Building a view never writes.

A run's row, its status derived as the store derives it, is read by ``store.run_row``. A
row or record that is not what the store writes goes to the engine's own reader
(``store.rows``, the run store's record accessors, the report model): a listing then shows
the run as ``corrupt`` with its ``problem``, and reading it raises ``CorruptRecord``
naming what is wrong.
"""

from __future__ import annotations

import json

from tidegate.store.evidence import (
    chain_problem,
    head_problem,
    integral_json,
    rebuilt,
    replay_digest,
)
from tidegate.store.reading import (
    CHECKPOINT_ROW,
    CHECKPOINT_TYPES,
    LAST_LANDING_SQL,
    RESUMABLE,
    RUN_COLUMNS,
    TERMINAL,
    Irregular,
    Store,
)
from tidegate.store.run_row import run_row

TYPE_CHECKING = False  # ``read`` does not import typing
if TYPE_CHECKING:
    from typing import Any

_HEAD_TYPES = (str, int, str, str)
_PHASE_FIELDS = (
    "seq", "attempt", "phase", "effect", "status", "duration_ms", "detail", "error_class",
    "execution_id",
)  # fmt: skip


def listing(store: Store, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` runs of ``store``, one ``tidegate runs`` row each: besides the
    run's own fields, its objective's first line, how many files its change has, what
    became of the change (``landing``) and, for a run that never finished, the time from
    its start to its last record as ``duration_s``; ``landed_seq``: its APPLY_BACK's place
    in the work tree's landing order (concurrent runs land one at a time)."""
    rows = store.rows(
        f"SELECT {RUN_COLUMNS}, {_LANDED_SQL}, {_LAST_EVENT_SQL}, request_json, "
        f"{LAST_LANDING_SQL} FROM runs "
        "ORDER BY seq DESC LIMIT ?",
        (limit,),
    )
    names = ("run_id", "repo", "task_id", "kind", "mode", "status", "error_class")
    out = []
    for row in rows:
        run = run_row(row[:-4], with_report=False)
        shown = {name: run[name] for name in names}
        duration, last_event = run["duration_s"], row[-3]
        if run["status"] not in TERMINAL and not duration and type(last_event) is int:
            duration = max(0, last_event - run["started_ms"]) / 1000
        shown.update(
            attempts=run["attempts"],
            duration_s=duration,
            landing=row[-1] if row[-1] in ("applied", "discarded", "undone") else None,
            objective=_objective(row[-2]),
            files_changed=run.get("files_changed"),
            landed_seq=row[-4] if type(row[-4]) is int else None,
        )
        out.append({**shown, "started_ms": run["started_ms"], "problem": run["problem"]})
    return out


_LANDED_SQL = (
    "CASE WHEN json_valid(report_json) THEN json_extract(report_json, '$.landing.seq') END"
)
"""The run's place in its work tree's landing order (``workspace.landed``), or NULL."""
_LAST_EVENT_SQL = (
    "CASE WHEN runs.status IN ('running', 'paused') THEN "
    "(SELECT MAX(at_ms) FROM trace t WHERE t.run_id = runs.run_id) END"
)
"""When an unfinished run recorded its last event (NULL for a finished run)."""


def _objective(request_json: object) -> str:
    """The first line of the run's objective as recorded (redacted), or ``""``."""
    if type(request_json) is not str:
        return ""
    try:
        value = json.loads(request_json)
    except ValueError:
        return ""
    objective = value.get("objective") if isinstance(value, dict) else None
    if type(objective) is not str:
        return ""
    return objective.strip().split("\n", 1)[0][:200] if objective.strip() else ""


def run_view(store: Store, run_id: str) -> dict[str, Any]:
    """Everything recorded about a run (``latest``: the newest): the run, its phases,
    attempts, effects and evidence, and its report."""
    if run_id == "latest":
        found = store.rows(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY seq DESC LIMIT 1")
    else:
        found = store.rows(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
    if not found:
        from tidegate.errors import UsageError

        raise UsageError(f"no recorded run {run_id!r} for this repository")
    run = run_row(found[0], with_report=True)
    rid = run["run_id"]
    if run["problem"] is not None:
        from tidegate.store.corrupt import CorruptRecord

        raise CorruptRecord(f"run {rid} is corrupt in the store: {run['problem']}")
    report = run["report"]

    checkpoints, head = _checkpoints(store, rid)
    events = _events(store, rid)
    chain = _chain(store, rid, checkpoints, head)
    last = checkpoints[-1] if checkpoints else None
    # Resuming is offered only from a chain that verified: `resume` refuses any other.
    resume = _resume(run, last) if chain == "verified" and last is not None else None
    phases = store.rows(
        f"SELECT {', '.join(_PHASE_FIELDS)} FROM phase_events WHERE run_id = ? ORDER BY seq",
        (rid,),
    )
    return {
        "run": {name: run[name] for name in _SHOWN},
        "phases": [dict(zip(_PHASE_FIELDS, p, strict=True)) for p in phases],
        "attempts": _attempts(store, rid),
        "effects": {
            "changed_files": list(report["changed_files"]) if report else [],
            "applied_files": list(report["applied_files"]) if report else [],
            "tool_calls": _tool_calls(store, rid),
        },
        "evidence": {
            "trace_events": len(events),
            "checkpoints": len(checkpoints),
            "last_checkpoint": None
            if last is None
            else {"seq": last[1], "reason": last[3], "hash": last[5]},
            "checkpoint_chain": chain,
            "replay_hash": run["replay_hash"],
            "replay_hash_recomputed": replay_digest(events) if events else None,
            "diff_sha256": report["diff_sha256"] if report else None,
        },
        "resume": resume,
        "landings": _landings(store, rid),
        "report": report,
    }


def trace_events(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The run's trace as ``run_view`` reads it (each event's kind, attempt, phase and
    payload, in order): what the run inspector shows as the transcript."""
    return _events(store, run_id)


_SHOWN = (
    "run_id", "repo", "task_id", "kind", "mode", "status", "stored_status", "error_class",
    "failure_phase", "attempts", "acknowledged", "execution_id", "pid", "started_ms",
    "updated_ms",
)  # fmt: skip


def _resume(run: dict[str, Any], last: tuple[Any, ...]) -> dict[str, Any] | None:
    """Where ``tidegate resume`` would continue a paused or interrupted run from."""
    if run["status"] not in RESUMABLE:
        return None
    saved = json.loads(last[7])["state"]
    attempt = saved.get("attempt", {})
    counters = saved.get("counters", {})
    completed = attempt.get("completed") or []
    number, after = attempt.get("number"), completed[-1] if completed else None
    if counters.get("attempt_closed") and not counters.get("stop"):
        number, after = (number or 0) + 1, None  # the next attempt, from its start
    return {
        "command": f"tidegate resume {run['run_id']}",
        "attempt": number,
        "after": after,
        "checkpoint": last[1],
    }


# -- a run's records -----------------------------------------------------------------------


def _checkpoints(store: Store, run_id: str) -> tuple[list[tuple[Any, ...]], tuple[Any, ...] | None]:
    rows = store.rows(
        f"SELECT {CHECKPOINT_ROW} FROM checkpoints WHERE run_id = ? ORDER BY seq",
        (run_id,),
    )
    heads = store.rows(
        "SELECT run_id, count, last_hash, mac FROM checkpoint_heads WHERE run_id = ?", (run_id,)
    )
    regular = all(
        isinstance(v, t) for row in rows for v, t in zip(row, CHECKPOINT_TYPES, strict=True)
    ) and all(type(v) is t for head in heads for v, t in zip(head, _HEAD_TYPES, strict=True))
    if not regular:
        from msgspec.structs import astuple  # the rare path: not on every read's import

        engine = _engine(store)  # names the field of the wrong type
        found, head = engine.checkpoints(run_id), engine.checkpoint_head(run_id)
        stored = None if head is None else (head.run_id, head.count, head.last_hash, head.mac)
        return [astuple(c) for c in found], stored

    return rebuilt(run_id, rows), heads[0] if heads else None


def _chain(
    store: Store, run_id: str, checkpoints: list[tuple[Any, ...]], head: tuple[Any, ...] | None
) -> str:
    if not checkpoints and head is None:
        return "none recorded"
    if store.secret is None:
        return "unverifiable: no checkpoint key in the state root"

    problem = chain_problem(run_id, checkpoints, store.secret) or head_problem(
        run_id, checkpoints, head, store.secret
    )
    return "verified" if problem is None else f"refused: {problem}"


def _events(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The replay projection of the run's trace (each event's kind, attempt, phase and
    payload, in order)."""

    rows = store.rows(
        "SELECT seq, kind, attempt, phase, payload, meta FROM trace WHERE run_id = ? ORDER BY seq",
        (run_id,),
    )
    try:
        out = []
        for seq, kind, attempt, phase, payload, meta in rows:
            value = integral_json(payload) if type(payload) is str else None
            if type(seq) is not int or type(kind) is not str or not isinstance(value, dict):
                raise Irregular("a trace row the store does not write")
            if type(meta) is not str or not isinstance(json.loads(meta), dict):
                raise Irregular("a trace row whose meta is not an object")
            out.append({"kind": kind, "attempt": attempt, "phase": phase, "payload": value})
        return out
    except (Irregular, ValueError, TypeError, RecursionError):
        from tidegate.store.replay import replay_projection

        return replay_projection(_engine(store).events(run_id))  # names the bad row


def _attempts(store: Store, run_id: str) -> list[dict[str, Any]]:
    rows = store.rows(
        "SELECT attempt, execution_id, event_json FROM attempts WHERE run_id = ? ORDER BY attempt",
        (run_id,),
    )
    try:
        out = []
        for _attempt, execution_id, event in rows:
            value = json.loads(event)
            if not isinstance(value, dict):
                raise Irregular("an attempt record that is not an object")
            out.append({**value, "execution_id": execution_id})
        return out
    except (Irregular, ValueError, TypeError, RecursionError):
        return [
            {**a.event, "execution_id": a.execution_id} for a in _engine(store).attempts(run_id)
        ]


def _tool_calls(store: Store, run_id: str) -> list[dict[str, Any]]:
    rows = store.rows(
        "SELECT tool_call_id, canonical_tool, input_sha256, status, effects "
        "FROM tool_calls WHERE run_id = ? ORDER BY request_seq",
        (run_id,),
    )
    names = ("tool_call_id", "canonical_tool", "input_sha256", "status")
    try:
        return [
            {**dict(zip(names, row[:4], strict=True)), "effects": _effects(row[4])} for row in rows
        ]
    except (Irregular, ValueError, TypeError, RecursionError):
        return [
            {**{n: getattr(c, n) for n in names}, "effects": c.effects}
            for c in _engine(store).tool_calls(run_id)
        ]


def _landings(store: Store, run_id: str) -> list[dict[str, Any]]:
    """What became of the run's change (``store.landings``), oldest first."""
    rows = store.rows(
        "SELECT action, detail, at_ms FROM landings WHERE run_id = ? ORDER BY seq", (run_id,)
    )
    out = []
    for action, detail, at_ms in rows:
        value = json.loads(detail) if type(detail) is str else None
        if type(action) is not str or not isinstance(value, dict) or type(at_ms) is not int:
            from tidegate.store.corrupt import CorruptRecord

            raise CorruptRecord(f"run {run_id}: a landing record is not what the store writes")
        out.append({"action": action, "detail": value, "at_ms": at_ms})
    return out


def _effects(text: object) -> Any:
    if text is None:
        return None
    if not isinstance(text, str):
        raise Irregular("effects that are not JSON text")
    return json.loads(text)


def _engine(store: Store) -> Any:
    """The engine's run store over the same file, read-only: its record readers name what
    is wrong with a record (``CorruptRecord``) or read it their way."""
    from pathlib import Path

    from tidegate.store.checkpoints import CheckpointKey
    from tidegate.store.db import RunStore

    key = None if store.secret is None else CheckpointKey(store.secret)
    return RunStore.open_read_only(Path(store.path), key=key)
