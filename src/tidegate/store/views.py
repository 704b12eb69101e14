"""Read-only views of recorded runs, in a stable order, for ``tidegate runs`` and ``read``.

Building a view never writes: it reads the store (opened read-only by the CLI), verifies
the checkpoint chain in memory and recomputes the replay hash from the stored trace. A
listing shows a corrupt run as ``corrupt`` with its ``problem``; reading one raises
``CorruptRecord`` naming what is wrong.
"""

from __future__ import annotations

from typing import Any

from tidegate.errors import TidegateError
from tidegate.store.checkpoints import Checkpoint, verify_committed
from tidegate.store.corrupt import CorruptRecord
from tidegate.store.db import RESUMABLE, RunStore, StoredRun
from tidegate.store.replay import replay_hash


def run_row(run: StoredRun) -> dict[str, Any]:
    """One line of ``tidegate runs``."""
    return {
        "run_id": run.run_id,
        "repo": run.repo,
        "task_id": run.task_id,
        "kind": run.kind,
        "mode": run.mode,
        "status": run.status,
        "error_class": run.error_class,
        "attempts": run.attempts,
        "duration_s": run.duration_s,
        "started_ms": run.started_ms,
        "problem": run.problem,
    }


def _resume_hint(run: StoredRun, last: Checkpoint) -> dict[str, Any] | None:
    """Where ``tidegate resume`` would continue a paused or interrupted run from."""
    if run.status not in RESUMABLE:
        return None
    saved = last.state
    attempt = saved.get("attempt", {})
    counters = saved.get("counters", {})
    completed = attempt.get("completed") or []
    number, after = attempt.get("number"), completed[-1] if completed else None
    if counters.get("attempt_closed") and not counters.get("stop"):
        number, after = (number or 0) + 1, None  # the next attempt, from its start
    return {
        "command": f"tidegate resume {run.run_id}",
        "attempt": number,
        "after": after,
        "checkpoint": last.seq,
    }


def run_view(store: RunStore, run_id: str) -> dict[str, Any]:
    """Everything recorded about a run: the run, its phases, attempts, effects and evidence."""
    run = store.get(run_id)
    if run.problem is not None:
        raise CorruptRecord(f"run {run.run_id} is corrupt in the store: {run.problem}")
    report = run.report
    checkpoints = store.checkpoints(run.run_id)
    head = store.checkpoint_head(run.run_id)
    events = store.events(run.run_id)
    chain = "none recorded"
    if checkpoints or head is not None:
        if store.key is None:
            chain = "unverifiable: no checkpoint key in the state root"
        else:
            try:
                verify_committed(run.run_id, checkpoints, head, store.key)
                chain = "verified"
            except TidegateError as exc:
                chain = f"refused: {exc}"
    recomputed = replay_hash(events) if events else None
    last = checkpoints[-1] if checkpoints else None
    # Resuming is offered only from a chain that verified: `resume` refuses any other.
    resume = _resume_hint(run, last) if chain == "verified" and last is not None else None
    phases = store.query(
        "SELECT seq, attempt, phase, effect, status, duration_ms, detail, error_class, "
        "execution_id FROM phase_events WHERE run_id = ? ORDER BY seq",
        [run.run_id],
    )
    return {
        "run": {
            "run_id": run.run_id,
            "repo": run.repo,
            "task_id": run.task_id,
            "kind": run.kind,
            "mode": run.mode,
            "status": run.status,
            "stored_status": run.stored_status,
            "error_class": run.error_class,
            "failure_phase": run.failure_phase,
            "attempts": run.attempts,
            "acknowledged": run.acknowledged,
            "execution_id": run.execution_id,
            "pid": run.holder.pid if run.holder else None,
            "started_ms": run.started_ms,
            "updated_ms": run.updated_ms,
        },
        "phases": [
            {
                "seq": p[0],
                "attempt": p[1],
                "phase": p[2],
                "effect": p[3],
                "status": p[4],
                "duration_ms": p[5],
                "detail": p[6],
                "error_class": p[7],
                "execution_id": p[8],
            }
            for p in phases
        ],
        "attempts": [
            {**a.event, "execution_id": a.execution_id} for a in store.attempts(run.run_id)
        ],
        "effects": {
            "changed_files": [f.model_dump(mode="json") for f in report.changed_files]
            if report
            else [],
            "applied_files": [f.model_dump(mode="json") for f in report.applied_files]
            if report
            else [],
            "tool_calls": [
                {
                    "tool_call_id": c.tool_call_id,
                    "canonical_tool": c.canonical_tool,
                    "input_sha256": c.input_sha256,
                    "status": c.status,
                    "effects": c.effects,
                }
                for c in store.tool_calls(run.run_id)
            ],
        },
        "evidence": {
            "trace_events": len(events),
            "checkpoints": len(checkpoints),
            "last_checkpoint": None
            if last is None
            else {"seq": last.seq, "reason": last.reason, "hash": last.hash},
            "checkpoint_chain": chain,
            "replay_hash": run.replay_hash,
            "replay_hash_recomputed": recomputed,
            "diff_sha256": report.diff_sha256 if report else None,
        },
        "resume": resume,
        "report": None if report is None else report.model_dump(mode="json"),
    }
