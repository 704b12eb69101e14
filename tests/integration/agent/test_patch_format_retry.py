"""A model whose PATCH answer holds no change set (after the loop's own format repairs)
fails the attempt retryably: the next attempt is told the expected format and can succeed;
the same failure twice in a row ends the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import Repo
from tidegate.records.report import FlowReport

CHECK = f"{sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5'"
PROSE = {"text": "I would change the minus into a plus."}
FIX = {
    "text": "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n"
    "    return a + b\n>>>>>>> REPLACE\n"
}
PLAN = {"text": "Plan: make add() add."}


def _run(repo: Repo, tmp_path: Path, turns: list[dict[str, str]]) -> FlowReport:
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"model": "format-model", "turns": turns}))
    return repo.run("Make add() add.", verify=CHECK, model=f"scripted:{script}", containment="none")


def test_a_missing_change_set_is_retried_with_the_format(
    committed_repo: Repo, tmp_path: Path
) -> None:
    # Attempt 1: a plan, then prose three times (the answer and two format repairs).
    # Attempt 2: a plan, then a real change set.
    report = _run(committed_repo, tmp_path, [PLAN, PROSE, PROSE, PROSE, PLAN, FIX])
    assert report.status == "succeeded", report.message
    assert report.attempts == 2
    assert "held no change set" in report.feedback[0]
    assert "SEARCH/REPLACE" in report.feedback[0]
    assert committed_repo.read("calc.py").count("return a + b") == 1


def test_the_same_failure_twice_ends_the_run(committed_repo: Repo, tmp_path: Path) -> None:
    before = committed_repo.tree_state()
    report = _run(committed_repo, tmp_path, [PLAN, PROSE, PROSE, PROSE] * 3)
    assert report.status == "failed" and report.error_class == "LOGIC"
    assert report.attempts == 2  # a retry needs a changed condition
    assert committed_repo.tree_state() == before
