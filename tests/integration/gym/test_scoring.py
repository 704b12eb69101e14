"""The gym's arithmetic, figure by figure: the evidence assessment's five dimensions and
their caps, the observed counts of unnecessary actions and retries, and ``gym compare``'s
verdict over real report artifacts (direction per figure, machine-dependent figures never
deciding, an unmeasured figure never deciding, the latest two completed runs by their
completion time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo
from tidegate.gym.compare import compare
from tidegate.gym.scorecard import UNMEASURED, Unmeasured, assessment, observed_counts
from tidegate.records.report import AttemptEvent, FlowReport

FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


def checks(passed: int, failed: int) -> list[dict[str, Any]]:
    return [{"passed": True}] * passed + [{"passed": False}] * failed


def test_each_dimension_and_the_overall_mean() -> None:
    evidence = [
        {"detail": "x" * 40, "source": "local-harness::structured"},  # half a unit, ours
        {"detail": "x" * 200, "source": "runtime::gym-runner"},  # one unit (capped), generic
    ]
    memory = [{"created_at_unix_ms": 1}, {"created_at_unix_ms": "yesterday"}, {}]
    got = assessment(checks(3, 1), evidence, memory, "local-harness", 2, 1)
    assert got["dimensions"] == {
        "factual_accuracy": 0.75,
        "specificity": round(1.5 / 4, 4),
        "temporal_awareness": round(1 / 3, 4),
        "source_attribution": 0.75,
        "confidence_calibration": round(1 - 0.2 - 0.1, 4),
    }
    assert got["overall"] == round(sum(got["dimensions"].values()) / 5, 4)
    assert got["category"] == "moderate"


def test_caps_and_the_unmeasured_counts() -> None:
    evidence = [{"detail": "y" * 500, "source": "local-harness::x"}] * 9  # 9 units -> 4
    memory = [{"created_at_unix_ms": 5}]
    got = assessment(checks(2, 0), evidence, memory, "local-harness", 40, 9)
    assert got["dimensions"]["specificity"] == 1.0
    assert got["dimensions"]["confidence_calibration"] == 0.0  # 0.5 + 0.5
    many = assessment(checks(2, 0), evidence, memory, "local-harness", 7, 0)
    assert many["dimensions"]["confidence_calibration"] == 0.5  # 7 actions cost 0.5, not 0.7
    unmeasured = assessment(checks(2, 0), evidence, memory, "local-harness", UNMEASURED, UNMEASURED)
    assert unmeasured["dimensions"]["confidence_calibration"] == 1.0
    assert unmeasured["overall"] == 1.0 and unmeasured["category"] == "strong"
    assert assessment([], [], [], "x", 0, 0)["dimensions"]["factual_accuracy"] == 0.0


@pytest.mark.parametrize(
    ("passed", "total", "source", "retries", "overall", "category"),
    [
        (3, 4, "b::x", 0, 0.75, "strong"),  # (0.75 + 1 + 0 + 1 + 1) / 5
        (74, 100, "b::x", 0, 0.748, "moderate"),
        (0, 4, "runtime::gym", 0, 0.5, "moderate"),  # (0 + 1 + 0 + 0.5 + 1) / 5
        (0, 4, "runtime::gym", 1, 0.48, "weak"),
    ],
)
def test_category_thresholds(
    passed: int, total: int, source: str, retries: int, overall: float, category: str
) -> None:
    evidence = [{"detail": "z" * 80, "source": source}] * 4  # specificity 1
    memory = [{}]  # no timestamp: temporal awareness 0
    got = assessment(checks(passed, total - passed), evidence, memory, "b", 0, retries)
    assert (got["overall"], got["category"]) == (overall, category)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> FlowReport:
    root = tmp_path_factory.mktemp("run") / "repo"
    root.mkdir()
    repo = Repo(root)
    repo.git("init", "-q")
    repo.write("calc.py", "def add(a, b):\n    return a - b\n")
    repo.commit_all()
    done = repo.run(FIX)
    assert done.status == "succeeded"
    return done


def attempt(n: int, status: str, phase: str | None = None) -> AttemptEvent:
    return AttemptEvent(attempt=n, status=status, failure_phase=phase, duration_ms=1.0)  # type: ignore[arg-type]


def test_observed_counts(report: FlowReport) -> None:
    events = [
        attempt(1, "failed", "VALIDATE"),  # refused before VERIFY: unnecessary
        attempt(2, "failed", "VERIFY"),  # a real try that failed: a retry, not unnecessary
        attempt(3, "failed", "APPLY"),
        attempt(4, "succeeded"),
    ]
    seen = report.model_copy(update={"attempt_events": events})
    calls = [
        {"canonical_tool": "workspace.read", "arguments_sha256": "a", "status": "succeeded"},
        {"canonical_tool": "workspace.read", "arguments_sha256": "a", "status": "succeeded"},
        {"canonical_tool": "workspace.read", "arguments_sha256": "b", "status": "failed"},
        {"canonical_tool": "workspace.grep", "arguments_sha256": "a", "status": "succeeded"},
    ]
    assert observed_counts(seen, calls) == (2 + 2, 3)
    assert observed_counts(seen, None) == (2, 3)
    none = report.model_copy(update={"attempt_events": []})
    unseen = observed_counts(none, calls)
    assert all(isinstance(figure, Unmeasured) for figure in unseen), unseen


# -- gym compare over real artifacts ---------------------------------------------------------


BASE = {
    "correctness_checks_passed": 3,
    "unnecessary_action_count": 1,
    "retry_count": 1,
    "workspace_damage": 0,
    "wall_time_s": 2.0,
    "tidegate_overhead_s": 0.5,
    "evidence_quality_assessment": {"overall": 0.8},
}


def artifact(root: Path, name: str, completed: int | None, **figures: Any) -> None:
    folder = root / "runs" / "scn" / name
    folder.mkdir(parents=True)
    document = {
        "run_id": name,
        "contestant": "c",
        "completed_at_unix_ms": completed,
        "scorecard": {**BASE, **figures},
    }
    (folder / "report.json").write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("change", "verdict"),
    [
        ({}, "unchanged"),
        ({"workspace_damage": 5}, "regressed"),
        ({"retry_count": 2}, "regressed"),
        ({"unnecessary_action_count": 0}, "improved"),
        ({"correctness_checks_passed": 2}, "regressed"),
        ({"correctness_checks_passed": 4}, "improved"),
        ({"evidence_quality_assessment": {"overall": 0.7}}, "regressed"),
        ({"correctness_checks_passed": 4, "workspace_damage": 1}, "regressed"),
        ({"wall_time_s": 20.0, "tidegate_overhead_s": 9.0}, "unchanged"),
        ({"retry_count": UNMEASURED}, "unchanged"),
        ({"evidence_quality_assessment": None}, "unchanged"),
    ],
)
def test_compare_decides_by_each_figures_direction(
    tmp_path: Path, change: dict[str, Any], verdict: str
) -> None:
    artifact(tmp_path, "1-old", 1000)
    artifact(tmp_path, "2-new", 2000, **change)
    result = compare(tmp_path, "scn")
    assert result["classification"] == verdict, result["figures"]


def test_compare_takes_the_latest_two_completed_runs_by_completion(tmp_path: Path) -> None:
    artifact(tmp_path, "9-finished-first", 1000, workspace_damage=7)
    artifact(tmp_path, "1-finished-last", 3000)
    artifact(tmp_path, "5-in-between", 2000, workspace_damage=9)
    artifact(tmp_path, "8-never-completed", None, workspace_damage=0)
    result = compare(tmp_path, "scn")
    assert result["previous"]["run_id"] == "5-in-between"
    assert result["current"]["run_id"] == "1-finished-last"
    assert result["figures"]["workspace_damage"] == {"current": 0, "previous": 9, "delta": -9}
    assert result["classification"] == "improved"
