"""One recorded run's view for ``tidegate read`` on the standard library alone: what
``tidegate.store.views.run_view`` builds, with the same evidence checks (the checkpoint
chain's hashes, canonical form, order and HMAC under the state root's key; the replay
hash recomputed from the trace). Part of the fast path (``tidegate.cli.quickread``):
whatever it cannot answer exactly raises, and the full command answers.
"""

from __future__ import annotations

import json

from tidegate.cli.quickread import RUN_COLUMNS, Unsupported, run_record, sha256

TYPE_CHECKING = False  # the fast path does not import typing
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

CHECKPOINT_FORMAT = "tidegate.checkpoint/1"
HEAD_FORMAT = "tidegate.checkpoint-head/1"
REPLAY_FORMAT = "tidegate.replay/1"
RESUMABLE = frozenset({"paused", "interrupted"})


def run_view(db: sqlite3.Connection, key: bytes | None, run_id: str) -> dict[str, Any]:
    """The view of ``run_id`` (``latest``: the newest run), as ``run_view`` builds it."""
    if run_id == "latest":
        rows = db.execute(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY seq DESC LIMIT 1")
    else:
        rows = db.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
    found = rows.fetchall()
    if not found:
        raise Unsupported("no such run: the full command says so")
    run = run_record(found[0])
    report = _report(run)
    rid = run["run_id"]
    checkpoints = _rebuild(
        rid,
        db.execute(
            "SELECT run_id, seq, event_seq, reason, prev_hash, hash, mac, document, encoding "
            "FROM checkpoints WHERE run_id = ? ORDER BY seq",
            (rid,),
        ).fetchall(),
    )
    heads = db.execute(
        "SELECT run_id, count, last_hash, mac FROM checkpoint_heads WHERE run_id = ?", (rid,)
    ).fetchall()
    if heads and not all(type(v) is t for v, t in zip(heads[0], (str, int, str, str), strict=True)):
        raise Unsupported("a corrupt checkpoint head: the full command names it")
    head = heads[0] if heads else None
    events = _checked_events(
        db.execute(
            "SELECT seq, kind, attempt, phase, payload, meta FROM trace WHERE run_id = ? "
            "ORDER BY seq",
            (rid,),
        ).fetchall()
    )
    chain = "none recorded"
    if checkpoints or head is not None:
        if key is None:
            chain = "unverifiable: no checkpoint key in the state root"
        else:
            problem = _chain_problem(rid, checkpoints, key) or _head_problem(
                rid, checkpoints, head, key
            )
            chain = "verified" if problem is None else f"refused: {problem}"
    recomputed = _replay_hash(events) if events else None
    last = checkpoints[-1] if checkpoints else None
    # Resuming is offered only from a chain that verified, as ``run_view`` does.
    resume = _resume(run, last) if chain == "verified" else None
    phases = db.execute(
        "SELECT seq, attempt, phase, effect, status, duration_ms, detail, error_class, "
        "execution_id FROM phase_events WHERE run_id = ? ORDER BY seq",
        (rid,),
    ).fetchall()
    attempts = db.execute(
        "SELECT execution_id, event_json FROM attempts WHERE run_id = ? ORDER BY attempt",
        (rid,),
    ).fetchall()
    tool_calls = db.execute(
        "SELECT tool_call_id, canonical_tool, input_sha256, status, effects "
        "FROM tool_calls WHERE run_id = ? ORDER BY request_seq",
        (rid,),
    ).fetchall()
    shown = ("run_id", "repo", "task_id", "kind", "mode", "status", "stored_status")
    return {
        "run": {
            **{name: run[name] for name in shown},
            "error_class": run["error_class"],
            "failure_phase": run["failure_phase"],
            "attempts": run["attempts"],
            "acknowledged": run["acknowledged"],
            "execution_id": run["execution_id"],
            "pid": run["pid"],
            "started_ms": run["started_ms"],
            "updated_ms": run["updated_ms"],
        },
        "phases": [
            dict(
                zip(
                    (
                        "seq",
                        "attempt",
                        "phase",
                        "effect",
                        "status",
                        "duration_ms",
                        "detail",
                        "error_class",
                        "execution_id",
                    ),
                    p,
                    strict=True,
                )
            )
            for p in phases
        ],
        "attempts": [{**json.loads(event), "execution_id": ex} for ex, event in attempts],
        "effects": {
            "changed_files": list(report["changed_files"]) if report else [],
            "applied_files": list(report["applied_files"]) if report else [],
            "tool_calls": [
                {
                    "tool_call_id": c[0],
                    "canonical_tool": c[1],
                    "input_sha256": c[2],
                    "status": c[3],
                    "effects": None if c[4] is None else json.loads(c[4]),
                }
                for c in tool_calls
            ],
        },
        "evidence": {
            "trace_events": len(events),
            "checkpoints": len(checkpoints),
            "last_checkpoint": None
            if last is None
            else {"seq": last[1], "reason": last[3], "hash": last[5]},
            "checkpoint_chain": chain,
            "replay_hash": run["replay_hash"],
            "replay_hash_recomputed": recomputed,
            "diff_sha256": report["diff_sha256"] if report else None,
        },
        "resume": resume,
        "report": report,
    }


def _report(run: dict[str, Any]) -> dict[str, Any] | None:
    """The run's report as the model would dump it, with the unacknowledged override."""
    if run["report_json"] is None:
        return None
    from tidegate.cli.quickreport import checked

    report = checked(json.loads(run["report_json"], object_pairs_hook=_unique))
    if run["unacknowledged"]:
        report.update(
            status="failed",
            error_class=run["error_class"],
            message="the final report was written but never acknowledged by the "
            f"store (it said: {report['status']}: {report['message']})",
        )
    return report


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise Unsupported("a repeated key")
    return value


def _resume(run: dict[str, Any], last: tuple[Any, ...] | None) -> dict[str, Any] | None:
    if run["status"] not in RESUMABLE or last is None:
        return None
    saved = json.loads(last[7])["state"]
    if not isinstance(saved, dict):
        raise Unsupported("a checkpoint without a state")
    attempt = saved.get("attempt", {})
    counters = saved.get("counters", {})
    completed = attempt.get("completed") or []
    number, after = attempt.get("number"), completed[-1] if completed else None
    if counters.get("attempt_closed") and not counters.get("stop"):
        number, after = (number or 0) + 1, None
    return {
        "command": f"tidegate resume {run['run_id']}",
        "attempt": number,
        "after": after,
        "checkpoint": last[1],
    }


# -- evidence (tidegate.store.checkpoints, replay, canonical) ----------------------------


_CHECKPOINT_TYPES: tuple[type | tuple[type, ...], ...] = (
    str, int, int, str, (str, type(None)), str, str, str, str,
)  # fmt: skip
"""``tidegate.store.db._CHECKPOINT_TYPES``: a row of other types is the full command's."""


def _rebuild(run_id: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows with each document rebuilt from whole documents and deltas
    (``tidegate.store.chain_rows.rebuild``): a row that cannot be rebuilt keeps its stored
    text, which then fails the hash check."""
    from tidegate.store.delta import patch

    for row in rows:
        if not all(isinstance(v, t) for v, t in zip(row, _CHECKPOINT_TYPES, strict=True)):
            raise Unsupported("a checkpoint row of the wrong types")
    out = []
    state: Any = None
    known = False
    for row in rows:
        stored, encoding = row[7], row[8]
        document = stored
        try:
            if encoding == "full":
                state, known = json.loads(stored)["state"], True
            elif encoding == "delta" and known:
                state = patch(state, json.loads(stored))
                document = _document(run_id, row, state)
            else:
                known = False
        except (ValueError, TypeError, KeyError, RecursionError):  # BadDelta is a ValueError
            known = False
        out.append((*row[:7], document))
    return out


def _document(run_id: str, row: tuple[Any, ...], state: Any) -> str:
    """``chain_rows.document_of``: the canonical document of a row holding ``state``."""
    header = {"format": CHECKPOINT_FORMAT, "run_id": run_id, "seq": row[1]}
    header.update(event_seq=row[2], reason=row[3], prev_hash=row[4], state=state)
    return json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _head_problem(
    run_id: str, checkpoints: list[tuple[Any, ...]], head: tuple[Any, ...] | None, key: bytes
) -> str | None:
    """``checkpoints.verify_committed``'s refusal for the chain's committed head, or None."""
    problem = None
    if head is None:
        if checkpoints:
            problem = (
                f"its {len(checkpoints)} checkpoint(s) have no committed head (removed, or "
                "recorded before tidegate kept one), so a truncated chain cannot be ruled out"
            )
    else:
        head_run, count, last_hash, mac = head
        document = _canonical(
            {"format": HEAD_FORMAT, "run_id": head_run, "count": count, "last_hash": last_hash}
        )
        if head_run != run_id or not _compare_digest(_hmac_sha256(key, document), mac):
            problem = (
                "the committed head of its checkpoint chain has a signature that does not match"
            )
        elif len(checkpoints) < count:
            problem = (
                f"the checkpoint chain is truncated: {len(checkpoints)} of the {count} "
                f"committed checkpoint(s) remain (the last {count - len(checkpoints)} were "
                "removed)"
            )
        elif len(checkpoints) > count or checkpoints[-1][5] != last_hash:
            problem = (
                "the checkpoint chain does not end where its committed head says "
                f"(checkpoint {count})"
            )
    return None if problem is None else f"run {run_id}: {problem}; refusing to resume"


def _chain_problem(run_id: str, checkpoints: list[tuple[Any, ...]], key: bytes) -> str | None:
    """``verify_chain``'s refusal message for the first checkpoint that fails, or None."""
    previous: str | None = None
    for expected_seq, checkpoint in enumerate(checkpoints, start=1):
        problem = _problem(run_id, checkpoint, expected_seq, previous, key)
        if problem:
            return f"checkpoint {checkpoint[1]} of run {run_id} {problem}; refusing to resume"
        previous = checkpoint[5]
    return None


def _problem(
    run_id: str, checkpoint: tuple[Any, ...], expected_seq: int, previous: str | None, key: bytes
) -> str | None:
    _run_id, seq, event_seq, reason, prev_hash, digest, mac, document = checkpoint
    if seq != expected_seq:
        return f"is out of sequence (expected checkpoint {expected_seq}): the chain is broken"
    data = document.encode("ascii", "replace")
    if "sha256:" + sha256(data).hexdigest() != digest:
        return "does not match its hash: it was edited"
    try:
        doc = _integral_json(data)
        canonical = _canonical(doc) == data
    except (ValueError, TypeError):
        return "is not valid canonical JSON: it was edited"
    if not canonical:
        return "is not in canonical form: it was edited"
    header = (doc.get("format"), doc.get("run_id"), doc.get("seq"), doc.get("event_seq"))
    if header != (CHECKPOINT_FORMAT, run_id, seq, event_seq) or doc.get("reason") != reason:
        return "does not belong to this run or position"
    if doc.get("prev_hash") != previous or prev_hash != previous:
        return "does not follow the previous checkpoint: the chain is broken"
    if not _compare_digest(_hmac_sha256(key, data), mac):
        return "has a signature that does not match this state root's key"
    return None


def _hmac_sha256(key: bytes, data: bytes) -> str:
    """``CheckpointKey.sign``: HMAC-SHA256 (RFC 2104) of ``data`` under a 32-byte key."""
    block = key.ljust(64, b"\0")
    inner: bytes = sha256(bytes(b ^ 0x36 for b in block) + data).digest()
    outer: str = sha256(bytes(b ^ 0x5C for b in block) + inner).hexdigest()
    return "hmac-sha256:" + outer


def _compare_digest(a: str, b: Any) -> bool:
    """``hmac.compare_digest`` (the same C function, without importing hashlib)."""
    from _operator import _compare_digest as same

    return same(a, b)  # raises TypeError for a non-str mac, as hmac's does


def _checked_events(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The trace rows without ``meta``, each as ``tidegate.store.trace.check_event``
    accepts it (integer seq, text kind, payload and meta JSON objects in text); any other
    row is for the full command to name."""
    for seq, kind, _attempt, _phase, payload, meta in rows:
        if type(seq) is not int or type(kind) is not str:
            raise Unsupported("a trace row of the wrong types")
        for text in (payload, meta):
            if type(text) is not str or not isinstance(json.loads(text), dict):
                raise Unsupported("a trace row whose payload or meta is not an object")
    return [row[:5] for row in rows]


def _replay_hash(events: list[tuple[Any, ...]]) -> str:
    """``replay_hash`` over the run's events (rows ordered by seq)."""
    projection = []
    for _seq, kind, attempt, phase, payload in events:
        value = _integral_json(payload)
        if not isinstance(value, dict):
            raise Unsupported("an event payload that is not an object")
        projection.append({"kind": kind, "attempt": attempt, "phase": phase, "payload": value})
    digest: str = sha256(_canonical({"format": REPLAY_FORMAT, "events": projection})).hexdigest()
    return "sha256:" + digest


def _canonical(value: object) -> bytes:
    """``tidegate.store.canonical.canonical_json`` of a value ``_integral_json`` parsed."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def _integral_json(text: str | bytes) -> Any:
    """Parsed JSON that holds no float (nor NaN or Infinity): canonical JSON refuses them,
    so a document with one is not canonical (TypeError, as ``canonical_json`` raises)."""
    return json.loads(text, parse_float=_no_float, parse_constant=_no_float)


def _no_float(text: str) -> None:
    raise TypeError(f"{text}: floats are not canonical")
