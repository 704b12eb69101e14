"""The scorecard: every figure derived from facts the runner observed; a figure it could
not observe is the string ``unmeasured``, never 0 (and an old artifact lacking a field
reads as ``unmeasured``).

``unnecessary_action_count`` counts the observed actions that did not advance the run:
attempts refused before VERIFY (VALIDATE / AST_VALIDATE / APPLY failures) and, for model
contestants, tool calls that failed or repeated an identical earlier call. ``retry_count``
is the observed attempts after the first. ``evidence_quality_assessment`` scores five
dimensions in [0, 1] from the run's evidence and memory records:

- factual_accuracy: the correctness-check pass rate;
- specificity: each evidence record contributes up to one unit by the length of its
  detail (saturating at 80 characters), the sum saturating at four units;
- temporal_awareness: the fraction of memory records with a creation timestamp;
- source_attribution: 1 for a record attributed to the contestant's base type, 0.5 for a
  generic runtime source, averaged;
- confidence_calibration: 1 minus capped penalties for unnecessary actions and retries
  (0.1 each, each capped at 0.5); an unmeasured count costs nothing.

``overall`` is their mean; ``category`` strong (>= 0.75), moderate (>= 0.5) or weak.
"""

from __future__ import annotations

from typing import Any

UNMEASURED = "unmeasured"
FIGURES = (
    "correctness_checks_passed",
    "correctness_checks_total",
    "unnecessary_action_count",
    "retry_count",
    "workspace_damage",
    "wall_time_s",
    "tidegate_overhead_s",
    "model_tokens",
    "model_cost_usd",
)
_PRE_VERIFY = {"VALIDATE", "AST_VALIDATE", "APPLY", "PATCH"}


def observed_counts(report: Any, tool_calls: list[dict[str, Any]] | None) -> tuple[Any, Any]:
    """(unnecessary actions, retries) from the report's attempt events and tool calls."""
    if not report.attempt_events:
        return UNMEASURED, UNMEASURED
    refused = sum(
        1 for e in report.attempt_events if e.status == "failed" and e.failure_phase in _PRE_VERIFY
    )
    wasted = 0
    if tool_calls is not None:
        seen: set[str] = set()
        for call in tool_calls:
            key = f"{call.get('canonical_tool')}:{call.get('arguments_sha256')}"
            if call.get("status") != "succeeded" or key in seen:
                wasted += 1
            seen.add(key)
    return refused + wasted, len(report.attempt_events) - 1


def assessment(
    checks: list[dict[str, Any]],
    evidence: list[dict[str, Any]],
    memory: list[dict[str, Any]],
    base_type: str,
    unnecessary: Any,
    retries: Any,
) -> dict[str, Any]:
    total = len(checks)
    accuracy = sum(1 for c in checks if c["passed"]) / total if total else 0.0
    units = min(4.0, sum(min(1.0, len(e.get("detail", "")) / 80) for e in evidence))
    timed = sum(1 for m in memory if isinstance(m.get("created_at_unix_ms"), int))
    sources = [1.0 if str(e.get("source", "")).startswith(base_type) else 0.5 for e in evidence]
    penalty = 0.0
    for count in (unnecessary, retries):
        if isinstance(count, int):
            penalty += min(0.5, 0.1 * count)
    dims = {
        "factual_accuracy": round(accuracy, 4),
        "specificity": round(units / 4.0, 4),
        "temporal_awareness": round(timed / len(memory), 4) if memory else 0.0,
        "source_attribution": round(sum(sources) / len(sources), 4) if sources else 0.0,
        "confidence_calibration": round(max(0.0, 1.0 - penalty), 4),
    }
    overall = round(sum(dims.values()) / len(dims), 4)
    category = "strong" if overall >= 0.75 else "moderate" if overall >= 0.5 else "weak"
    return {"dimensions": dims, "overall": overall, "category": category}


def read_figure(scorecard: dict[str, Any], name: str) -> Any:
    """A figure of a stored scorecard; ``unmeasured`` when an old artifact lacks it."""
    value = scorecard.get(name, UNMEASURED)
    return UNMEASURED if value is None else value
