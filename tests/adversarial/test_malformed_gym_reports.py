"""A gym run report (``<gym>/runs/<scenario>/<run>/report.json``) edited by hand or damaged
between runs: fields of the wrong type, non-finite numbers, a document that is not a
report, not JSON, or nested 100,000 deep. ``gym compare`` read these with a TypeError or
a RecursionError, skipped them without a word, or compared garbage (``true`` as 1, a list
as ``unmeasured``). Now it checks every report it reads and refuses the first bad one in
one line naming the file and the field (exit 1), writing no comparison."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._operator import op

SCENARIO = "docs-refresh"
Report = dict[str, Any]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tidegate.cli.app import main

    root = tmp_path_factory.mktemp("gym") / "state"
    for _ in range(2):
        assert main(["gym", "run", SCENARIO, "--state-root", str(root), "--json"]) == 0
    return root


@pytest.fixture
def root(two_runs: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "state"
    shutil.copytree(two_runs, copy)
    return copy


def _reports(root: Path) -> list[Path]:
    return sorted((root / "gym" / "runs" / SCENARIO).glob("*/report.json"))


def _set(path: str, value: Any) -> Callable[[Report, Report], str]:
    """The latest report with the field at dotted ``path`` set to ``value`` (``INF``: a
    number too large for a float)."""

    def edit(latest: Report, other: Report) -> str:
        *parents, last = path.split(".")
        target = latest
        for key in parents:
            target = target[key]
        target[last] = value
        return json.dumps(latest).replace('"INF"', "1e400")

    return edit


def _text(text: str) -> Callable[[Report, Report], str]:
    return lambda latest, other: text


BOMB = "[" * 100_000 + "]" * 100_000
EDITS: dict[str, tuple[Callable[[Report, Report], str], str]] = {
    "scorecard a list": (_set("scorecard", []), "scorecard is a list; expected an object"),
    "figure a list": (_set("scorecard.retry_count", [1]), "scorecard.retry_count is a list"),
    "figure a boolean": (_set("scorecard.workspace_damage", True), "scorecard.workspace_damage is true"),
    "figure infinite": (_set("scorecard.wall_time_s", "INF"), "scorecard.wall_time_s is Infinity"),
    "assessment a string": (
        _set("scorecard.evidence_quality_assessment", "great"),
        'scorecard.evidence_quality_assessment is "great"',
    ),
    "overall an object": (
        _set("scorecard.evidence_quality_assessment.overall", {"v": 1}),
        "evidence_quality_assessment.overall is an object",
    ),
    "completed_at text": (_set("completed_at_unix_ms", "yesterday"), 'completed_at_unix_ms is "yesterday"'),
    "run_id a number, same time": (
        lambda latest, other: json.dumps(
            {**latest, "run_id": 7, "completed_at_unix_ms": other["completed_at_unix_ms"]}
        ),
        "run_id is 7; expected a string",
    ),
    "not a report": (lambda latest, other: json.dumps([latest]), "not a gym report object: a list"),
    "not JSON": (_text("{"), "malformed JSON"),
    "nested 100,000 deep": (_text('{"scorecard": ' + BOMB + "}"), "malformed JSON"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EDITS))
def test_compare_refuses_a_malformed_report_in_one_line(
    capsys: pytest.CaptureFixture[str], root: Path, name: str
) -> None:
    edit, words = EDITS[name]
    first, latest = _reports(root)
    latest.write_text(edit(json.loads(latest.read_text()), json.loads(first.read_text())))
    res = op(capsys, "gym", "compare", SCENARIO, "--state-root", str(root))
    assert res.code == 1, res.out
    assert res.err.count("\n") == 1 and res.err.startswith("tidegate: error: "), res.err
    assert "Traceback" not in res.err
    assert str(latest) in res.err and words in res.err, res.err
    assert not (root / "gym" / "comparisons").exists()


def test_a_report_in_the_current_form_with_unmeasured_figures_compares(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    """``null`` (the scorecard's unmeasured) and an old artifact's ``"unmeasured"`` string
    both read as unmeasured."""
    first, latest = _reports(root)
    for path, value in ((first, "unmeasured"), (latest, None)):
        document = json.loads(path.read_text())
        document["scorecard"]["retry_count"] = value
        path.write_text(json.dumps(document))
    res = op(capsys, "gym", "compare", SCENARIO, "--state-root", str(root), "--json")
    assert res.code == 0, res.err
    assert res.json()["figures"]["retry_count"] == {
        "current": "unmeasured", "previous": "unmeasured", "delta": "unmeasured",
    }  # fmt: skip
