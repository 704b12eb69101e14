"""``gym compare``: the latest two completed runs of a scenario, figure by figure.

A figure is better or worse by its direction (checks passed and the evidence assessment:
higher is better; unnecessary actions, retries and workspace damage: lower is better);
wall time and overhead are shown but never decide, since they move with the machine. The
comparison is ``regressed`` when any deciding figure got worse, ``improved`` when some got
better and none worse, else ``unchanged``. A figure one side did not measure keeps
``unmeasured`` as its value and its delta.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tidegate.errors import UsageError
from tidegate.gym.places import write_artifact
from tidegate.gym.scorecard import UNMEASURED, check_report, read_figure

HIGHER_BETTER = ("correctness_checks_passed", "evidence_overall")
LOWER_BETTER = ("unnecessary_action_count", "retry_count", "workspace_damage")
SHOWN = ("wall_time_s", "tidegate_overhead_s")


def completed_runs(gym_root: Path, scenario: str) -> list[dict[str, Any]]:
    """The scenario's completed run reports, oldest first. A report that cannot be read
    or compared is refused (``RecordError``, one line naming it and what is wrong): left
    out, the comparison would silently be of other runs."""
    runs = []
    folder = gym_root / "runs" / scenario
    for report in sorted(folder.glob("*/report.json")) if folder.is_dir() else []:
        document = read_report(report)
        if document.get("completed_at_unix_ms"):
            runs.append(document)
    return sorted(runs, key=lambda d: (d["completed_at_unix_ms"], d.get("run_id", "")))


def read_report(path: Path) -> dict[str, Any]:
    """The gym report at ``path``, checked to be one ``compare`` can read."""
    from tidegate.operator.errors import RecordError
    from tidegate.operator.records import read_json

    try:
        document = read_json(path)
    except RecursionError:  # read_json bounds size, not nesting
        raise RecordError(f"{path}: malformed JSON (nested too deeply)") from None
    problem = check_report(document, str(path))
    if problem is not None:
        raise RecordError(problem)
    assert isinstance(document, dict)
    return document


def _figure(document: dict[str, Any], name: str) -> Any:
    card = document.get("scorecard", {})
    if name == "evidence_overall":
        assessment = card.get("evidence_quality_assessment")
        return read_figure(assessment, "overall") if isinstance(assessment, dict) else UNMEASURED
    return read_figure(card, name)


def compare(gym_root: Path, scenario: str) -> dict[str, Any]:
    runs = completed_runs(gym_root, scenario)
    if len(runs) < 2:
        raise UsageError(f"gym compare {scenario}: needs two completed runs, found {len(runs)}")
    previous, current = runs[-2], runs[-1]
    figures: dict[str, dict[str, Any]] = {}
    better = worse = 0
    for name in (*HIGHER_BETTER, *LOWER_BETTER, *SHOWN):
        now, before = _figure(current, name), _figure(previous, name)
        measured = isinstance(now, int | float) and isinstance(before, int | float)
        delta: Any = round(now - before, 4) if measured else UNMEASURED
        figures[name] = {"current": now, "previous": before, "delta": delta}
        if not measured or name in SHOWN or delta == 0:
            continue
        good = delta > 0 if name in HIGHER_BETTER else delta < 0
        better, worse = better + good, worse + (not good)
    verdict = "regressed" if worse else "improved" if better else "unchanged"
    result = {
        "schema": "tidegate.gym-comparison/1",
        "scenario": scenario,
        "classification": verdict,
        "current": {"run_id": current.get("run_id"), "contestant": current.get("contestant")},
        "previous": {"run_id": previous.get("run_id"), "contestant": previous.get("contestant")},
        "figures": figures,
    }
    stamp = time.time_ns() // 1_000_000
    path = write_artifact(
        gym_root,
        gym_root / "comparisons" / scenario,
        f"{stamp}.json",
        (json.dumps(result, indent=2) + "\n").encode("utf-8"),
    )
    result["artifact"] = str(path)
    return result
