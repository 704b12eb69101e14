"""The gym end to end through the CLI: every command, the scorecard's observed facts and
their ``unmeasured`` gaps, regression detection, workspace damage, and suites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._operator import op
from tidegate.gym.scenarios import load_scenario, names
from tidegate.gym.seed import build

SCENARIOS = [n for n in names("scenarios") if not n.endswith(".script")]
ALONE = [n for n in SCENARIOS if n != "crowd-dirty-tree"]
"""The scenarios run here with the generic checks; the crowd, seven runs at once, runs in
``test_crowd.py``, which checks more of it (running it twice costs the suite time)."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "state"


def run(
    capsys: pytest.CaptureFixture[str], root: Path, scenario: str, *extra: str
) -> dict[str, Any]:
    res = op(capsys, "gym", "run", scenario, "--state-root", str(root), "--json", *extra)
    document = res.json()
    assert res.code == (0 if _all_passed(document) else 1)
    return document


def _all_passed(document: dict[str, Any]) -> bool:
    card = document["scorecard"]
    return bool(card["correctness_checks_passed"] == card["correctness_checks_total"])


def test_list_names_every_scenario_and_suite(capsys: pytest.CaptureFixture[str]) -> None:
    data = op(capsys, "gym", "list", "--json").json()
    assert {s["id"] for s in data["scenarios"]} == set(SCENARIOS)
    assert len(SCENARIOS) >= 7
    assert {"core", "sixteen", "smoke"} <= {s["id"] for s in data["suites"]}


@pytest.mark.parametrize("scenario", ALONE)
def test_every_builtin_scenario_passes_with_its_own_contestant(
    capsys: pytest.CaptureFixture[str], root: Path, scenario: str
) -> None:
    document = run(capsys, root, scenario)
    card = document["scorecard"]
    assert _all_passed(document), document["checks"]
    assert card["workspace_damage"] == 0
    artifacts = Path(document["artifacts"])
    assert artifacts.is_relative_to(root / "gym")
    assert {"report.json", "report.txt", "review.json"} <= {p.name for p in artifacts.iterdir()}
    assert json.loads((artifacts / "report.json").read_text())["scorecard"] == card
    dims = card["evidence_quality_assessment"]["dimensions"]
    assert set(dims) == {
        "factual_accuracy", "specificity", "temporal_awareness", "source_attribution",
        "confidence_calibration",
    }  # fmt: skip
    assert all(0.0 <= v <= 1.0 for v in dims.values())


def test_the_seed_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    seed = load_scenario("safe-change-dirty-tree").seed
    assert build(seed, tmp_path / "a") == build(seed, tmp_path / "b")


def test_the_repair_scenario_counts_the_observed_retry(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    card = run(capsys, root, "failing-first-repair")["scorecard"]
    assert card["retry_count"] == 1
    assert card["unnecessary_action_count"] == 0
    assert card["model_tokens"] == 0 and "no model ran" in " ".join(card["measurement_notes"])


def test_a_worse_contestant_comes_out_regressed(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    run(capsys, root, "safe-change-dirty-tree")
    run(
        capsys,
        root,
        "safe-change-dirty-tree",
        "--contestant",
        "scripted:worse-contestant.script.json",
    )
    res = op(
        capsys, "gym", "compare", "safe-change-dirty-tree", "--state-root", str(root), "--json"
    )
    result = res.json()
    assert result["classification"] == "regressed"
    assert result["figures"]["retry_count"] == {"current": 2, "previous": 0, "delta": 2}
    comparisons = list((root / "gym" / "comparisons" / "safe-change-dirty-tree").glob("*.json"))
    assert len(comparisons) == 1
    # and the better one after it is an improvement
    run(capsys, root, "safe-change-dirty-tree")
    again = op(
        capsys, "gym", "compare", "safe-change-dirty-tree", "--state-root", str(root), "--json"
    )
    assert again.json()["classification"] == "improved"


def test_an_old_artifact_without_a_figure_reads_as_unmeasured(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    first = run(capsys, root, "docs-refresh")
    report = Path(first["artifacts"]) / "report.json"
    old = json.loads(report.read_text())
    for figure in ("unnecessary_action_count", "retry_count"):
        del old["scorecard"][figure]  # an artifact written before these were measured
    report.write_text(json.dumps(old))
    run(capsys, root, "docs-refresh")
    result = op(
        capsys, "gym", "compare", "docs-refresh", "--state-root", str(root), "--json"
    ).json()
    assert result["figures"]["retry_count"] == {
        "current": 0, "previous": "unmeasured", "delta": "unmeasured",
    }  # fmt: skip
    assert result["classification"] == "unchanged"


def test_a_contestant_that_damages_user_work_scores_damage(
    capsys: pytest.CaptureFixture[str], root: Path, tmp_path: Path
) -> None:
    script = tmp_path / "damaging.json"
    script.write_text(json.dumps({"planner": "scripted", "attempts": [{
        "plan": "fix add and tidy the notes",
        "objective": "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n\n"
                     "edit-file: notes.txt\nreplace: my untracked notes\nwith: (deleted)\n",
    }]}))  # fmt: skip
    document = run(capsys, root, "safe-change-dirty-tree", "--contestant", f"scripted:{script}")
    card = document["scorecard"]
    assert card["workspace_damage"] > 0
    assert any("notes.txt" in n for n in card["human_review_notes"])


def test_a_local_suite_runs_every_entry(capsys: pytest.CaptureFixture[str], root: Path) -> None:
    res = op(
        capsys, "gym", "run-suite", "smoke", "--workers", "2", "--state-root", str(root), "--json"
    )
    result = res.json()
    assert res.code == 0, result
    assert [r["scenario"] for r in result["runs"]] == [
        "docs-refresh",
        "safe-change-dirty-tree",
        "multi-file-refactor",
    ]
    assert all(_all_passed(r) for r in result["runs"])


def test_a_suite_shows_each_run_as_it_finishes(
    capsys: pytest.CaptureFixture[str], root: Path
) -> None:
    """One line per run on stderr as it finishes; the scorecard on stdout as before; and
    nothing on stderr with --json (the test above checks the JSON itself)."""
    res = op(capsys, "gym", "run-suite", "smoke", "--workers", "2", "--state-root", str(root))
    assert res.code == 0, res.err
    done = [line.split() for line in res.err.splitlines() if line.startswith("  done ")]
    assert sorted(d[2] for d in done) == [
        "docs-refresh", "multi-file-refactor", "safe-change-dirty-tree",
    ], res.err  # fmt: skip
    for fields in done:
        assert fields[1] and fields[3] in ("succeeded", "failed", "paused", "held"), fields
        assert fields[4].endswith("s") and float(fields[4][:-1]) >= 0
    assert res.out.startswith("suite smoke: 3 runs on local x2")
    assert "docs-refresh" in res.out and " done " not in res.out
    quiet = op(capsys, "gym", "run-suite", "smoke", "--state-root", str(root), "--json")
    assert quiet.code == 0 and quiet.err == "" and quiet.json()["runs"]


@pytest.mark.parametrize(
    "bad", [("run", "nope"), ("run", "../x"), ("compare", "Docs"), ("run-suite", "nope")]
)
def test_unknown_ids_are_one_line(
    capsys: pytest.CaptureFixture[str], root: Path, bad: tuple[str, str]
) -> None:
    res = op(capsys, "gym", *bad, "--state-root", str(root))
    assert res.code == 2 and res.err.count("\n") == 1
