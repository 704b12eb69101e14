"""Meeting and goal objectives: every malformed line is refused by number; goal ranking is
deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidegate.operator.errors import OperatorError
from tidegate.operator.goals import active_top, apply_updates, goal_id
from tidegate.operator.improvement import parse_decisions
from tidegate.operator.meeting import parse_meeting


def test_a_meeting_objective_is_captured_by_field() -> None:
    record = parse_meeting(
        "# minutes\nagenda: a\nupdate: u\ndecision: d\nrisk: r\nnext-step: n\n"
        "open-question: q\ngoal: G | priority=3 | status=active | rationale=why\n"
    )
    assert record["agenda"] == ["a"] and record["open_questions"] == ["q"]
    assert record["goals"] == [
        {"title": "G", "priority": 3, "status": "active", "rationale": "why"}
    ]


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("agenda: a\nsummary: s", 2, "expected one of"),
        ("decision:", 1, "needs text"),
        ("goal: G", 1, "priority=N"),
        ("goal: G | priority=0", 1, "1 to 1000"),
        ("goal: G | priority=1 | status=maybe", 1, "status must be"),
        ("\n\ngoal: | priority=1", 3, "title"),
        ("goal: G | priority=1 | owner=me", 1, "unknown goal field"),
        ("goal: G | priority", 1, "key=value"),
    ],
)
def test_malformed_meeting_lines_are_refused_by_number(text: str, line: int, why: str) -> None:
    with pytest.raises(OperatorError) as err:
        parse_meeting(text)
    assert f"line {line}" in str(err.value) and why in str(err.value)


def test_an_empty_meeting_is_refused() -> None:
    with pytest.raises(OperatorError, match="no structured line"):
        parse_meeting("# nothing\n\n")


def test_active_top_five_by_priority_with_deterministic_ties(tmp_path: Path) -> None:
    names = ["beta", "Alpha", "gamma", "delta", "eps", "zeta", "eta"]
    updates = [
        {
            "title": n,
            "priority": 1 if n in ("beta", "Alpha", "gamma") else 2,
            "status": "active",
            "rationale": "",
        }
        for n in names
    ]
    updates.append({"title": "done one", "priority": 1, "status": "done", "rationale": ""})
    apply_updates(tmp_path, updates, "test")
    assert [g["title"] for g in active_top(tmp_path)] == ["Alpha", "beta", "gamma", "delta", "eps"]
    # The same update again changes nothing and records no change.
    assert apply_updates(tmp_path, updates, "test") == []
    assert goal_id(" ALPHA ") == goal_id("alpha")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("approve: p1", "priority=N"),
        ("approve: p1 | priority=x", "priority=N"),
        ("defer: p1", "reason="),
        ("reject: p1", "expected 'approve"),
        ("approve: p1 | priority=1\ndefer: p1 | reason=r", "decided twice"),
        ("approve:  | priority=1", "needs a proposal id"),
    ],
)
def test_malformed_decisions_are_refused(text: str, why: str) -> None:
    with pytest.raises(OperatorError, match=why):
        parse_decisions(text)
