"""``tidegate status``: the runs alive in a repository right now, and the landing lock.

Read from the runs' own registrations (``workspace.lock``), not the run store: a run shows
here from its first step to its last, whatever store it records to. Nothing is written but
the removal of registrations whose process is gone.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tidegate.cli.output import dump_json
from tidegate.text.sanitize import sanitize
from tidegate.workspace.lock import ApplyLock, live_runs
from tidegate.workspace.repo import discover


def live_status(repo_path: Path) -> dict[str, Any]:
    """The live runs (oldest first) and who is landing a change now, if anyone."""
    repo = discover(repo_path)
    now = time.time()
    runs = []
    for record in live_runs(repo.runtime_dir):
        since = float(record.get("since", now))
        runs.append(
            {
                "run_id": str(record.get("run_id", "?")),
                "mode": record.get("mode"),
                "phase": record.get("phase"),
                "attempt": record.get("attempt"),
                "planner": record.get("planner"),
                "pid": record.get("pid"),
                "elapsed_s": round(max(0.0, now - since), 2),
            }
        )
    return {"repo": str(repo.root), "runs": runs, "landing": _landing(repo.runtime_dir, now)}


def _landing(runtime_dir: Path, now: float) -> dict[str, Any] | None:
    lock = ApplyLock(runtime_dir, "status")
    if lock.try_acquire():
        lock.release()
        return None
    holder = getattr(lock, "busy_holder", {})
    return {
        "by": holder.get("run_id"),
        "pid": holder.get("pid"),
        "for_s": round(max(0.0, now - float(holder.get("since", now))), 3),
    }


def status_output(repo_path: Path, as_json: bool) -> str:
    status = live_status(repo_path)
    if as_json:
        return dump_json(status) + "\n"
    if not status["runs"]:
        lines = [f"no tidegate run is running in {status['repo']}"]
    else:
        lines = [f"{'RUN':<22} {'MODE':<8} {'PHASE':<11} {'ELAPSED':>8}  {'PID':>7}  PLANNER"]
        for run in status["runs"]:
            phase = str(run["phase"] or "-")
            if run["attempt"]:
                phase = f"{phase}#{run['attempt']}"
            lines.append(
                f"{run['run_id']:<22} {run['mode'] or '-':<8} {phase:<11} "
                f"{_elapsed(run['elapsed_s']):>8}  {run['pid'] or '-':>7}  {run['planner'] or '-'}"
            )
    if landing := status["landing"]:
        lines.append(
            f"landing now: {landing['by']} (pid {landing['pid']}), for {landing['for_s']}s"
        )
    return "".join(sanitize(line) + "\n" for line in lines)


def _elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


__all__ = ["live_status", "status_output"]
