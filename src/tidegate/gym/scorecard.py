"""The scorecard: every figure derived from facts the runner observed; a figure it could
not observe is never 0 but unmeasured: ``null`` in JSON, with its reason under
``unmeasured`` (``{"model_cost_usd": "no price for ..."}``), and ``unmeasured`` in text.
An older artifact's string ``unmeasured``, or a field it lacks, reads as unmeasured too.

``model_tokens`` is the sum of the input and output tokens every model response reported;
when any response reported none (tidegate's count would be an estimate) it is unmeasured.
``model_cost_usd`` is the sum of the responses' costs at the model's known price; with no
known price it is unmeasured. With no model, both are an observed 0.

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

import json
import math
from decimal import Decimal
from typing import Any

import msgspec

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


class Unmeasured(msgspec.Struct, frozen=True):
    """A figure the runner could not observe, and why."""

    reason: str


def seal(card: dict[str, Any]) -> dict[str, Any]:
    """``card`` as stored: each :class:`Unmeasured` figure ``None``, its reason under
    ``unmeasured``."""
    why = {k: v.reason for k, v in card.items() if isinstance(v, Unmeasured)}
    return {**{k: None if k in why else v for k, v in card.items()}, "unmeasured": why}


def shown(value: Any) -> str:
    """A stored figure as text: ``unmeasured`` for ``None`` (or an old artifact's string)."""
    return UNMEASURED if value is None else str(value)


def model_spend(turns: list[Any] | None, price_source: str) -> tuple[Any, Any]:
    """(tokens, cost in USD) from the model turns the agent loop recorded (``TurnRecord``:
    ``input_tokens``, ``output_tokens``, ``usage_exact``, ``cost_usd``); ``turns`` None when
    nothing was recorded. Each is a number or :class:`Unmeasured`."""
    if turns is None:
        gone = Unmeasured("the model's responses were not recorded")
        return gone, gone
    estimated = sum(1 for t in turns if not t.usage_exact)
    tokens: Any = sum(t.input_tokens + t.output_tokens for t in turns)
    if estimated:
        tokens = Unmeasured(
            f"{estimated} of {len(turns)} model responses reported no token usage "
            "(tidegate's own count would be an estimate)"
        )
    cost: Any = float(sum((Decimal(t.cost_usd) for t in turns if t.cost_usd), Decimal(0)))
    if any(t.cost_usd is None for t in turns):
        cost = Unmeasured(f"the model's price is unknown ({price_source})")
    return tokens, cost


def observed_counts(report: Any, tool_calls: list[dict[str, Any]] | None) -> tuple[Any, Any]:
    """(unnecessary actions, retries) from the report's attempt events and tool calls."""
    if not report.attempt_events:
        gone = Unmeasured("no attempt events were observed")
        return gone, gone
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
    """A figure of a stored scorecard; ``unmeasured`` when it is ``null`` or an old
    artifact lacks it."""
    value = scorecard.get(name, UNMEASURED)
    return UNMEASURED if value is None else value


def check_report(document: Any, where: str) -> str | None:
    """Why the stored gym report ``document`` cannot be compared, or None. A completed
    report needs a scorecard whose figures are numbers or unmeasured (``null``, or an old
    artifact's ``unmeasured``)."""
    if not isinstance(document, dict):
        return f"{where}: not a gym report object: {_kind(document)}"
    done = document.get("completed_at_unix_ms")
    if done is not None and (type(done) is not int or done < 0):
        return f"{where}: completed_at_unix_ms is {_kind(done)}; expected a time in ms"
    if not done:
        return None  # not completed: never compared
    if not isinstance(document.get("run_id", ""), str):
        return f"{where}: run_id is {_kind(document['run_id'])}; expected a string"
    card = document.get("scorecard")
    if not isinstance(card, dict):
        return f"{where}: scorecard is {_kind(card)}; expected an object"
    assessment = card.get("evidence_quality_assessment")
    figures = [(f"scorecard.{name}", card.get(name)) for name in FIGURES]
    if isinstance(assessment, dict):
        figures.append(("scorecard.evidence_quality_assessment.overall", assessment.get("overall")))
    elif assessment not in (None, UNMEASURED):
        return f"{where}: scorecard.evidence_quality_assessment is {_kind(assessment)}; expected an object"
    for name, value in figures:
        if value not in (None, UNMEASURED) and not _number(value):
            return f"{where}: {name} is {_kind(value)}; expected a number or unmeasured"
    return None


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _kind(value: Any) -> str:
    """What the report holds, as JSON names it (a container by its kind alone)."""
    if isinstance(value, list | dict):
        return "a list" if isinstance(value, list) else "an object"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
