"""The file examples in docs/ledger.md parse with the real parsers (the docs stay true)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from tidegate.ledger.markdown import TextFile
from tidegate.ledger.model import ItemStatus, Route, Verdict
from tidegate.ledger.parse import parse_checkpoint, parse_ledger
from tidegate.ledger.parse_notes import parse_notes
from tidegate.ledger.parse_plan import parse_plan, parse_review, parse_roadmap

DOC = (ROOT / "docs" / "ledger.md").read_text()


def example(heading: str) -> TextFile:
    after = DOC[DOC.index(f"### {heading}\n") :]
    m = re.search(r"^(`{3,4})markdown\n(.*?)^\1$", after, re.M | re.S)
    assert m is not None, heading
    return TextFile.from_text(heading.split()[0], m.group(2))


def test_checkpoint_example() -> None:
    cp = parse_checkpoint(example("checkpoint.md"))
    assert (cp.route, cp.stage, cp.resume_pointer) == (Route.MEDIUM, "execute", "T2")
    assert [c.closed for c in cp.conditions + cp.triggers] == [False, True]


def test_ledger_example() -> None:
    items, optional = parse_ledger(example("ledger.md"))
    assert [i.status for i in items] == [ItemStatus.DONE, ItemStatus.BLOCKED, ItemStatus.PENDING]
    assert optional == {"required", "gate"}


def test_notes_example() -> None:
    evidence, decisions, failures = parse_notes(example("implementation-notes.md"))
    assert [e.id for e in evidence] == ["E-1", "E-2"]
    assert [d.kind for d in decisions] == ["route_change", "user_decision"]
    assert failures[0].get("plan") == "f566858566cd"


@pytest.mark.parametrize("heading", ["plan.md and brief.md"])
def test_plan_example(heading: str) -> None:
    section = parse_plan(example(heading), {"T1"}, None)["T1"]
    assert section.verify == "python -m pytest -q tests/test_calc.py"
    assert section.edit_blocks[0][1].startswith("edit-file: calc.py\n")


def test_review_and_roadmap_examples() -> None:
    assert parse_review(example("review-report.md")).verdict is Verdict.APPROVED
    assert parse_roadmap(example("roadmap.md (epic)")) == ("M1", "M2")
