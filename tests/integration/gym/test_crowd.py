"""The crowd scenario end to end: seven real ``tidegate run`` processes at once on one
seeded dirty repository (three on disjoint files, two on different hunks of one file, two
on the same lines), scored for what landed, the loser's ``.rej``, the user's bytes and the
landing order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e._operator import op
from tidegate.gym.scenarios import load_scenario, load_suite

SCENARIO = "crowd-dirty-tree"


def test_seven_runs_at_once_land_or_conflict_as_designed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    res = op(capsys, "gym", "run", SCENARIO, "--state-root", str(tmp_path / "s"), "--json")
    document: dict[str, Any] = res.json()
    assert res.code == 0, document["checks"]
    card = document["scorecard"]
    assert card["correctness_checks_passed"] == card["correctness_checks_total"] == 13
    assert card["workspace_damage"] == 0
    crowd = document["crowd"]
    lanes = {lane["lane"]: lane for lane in crowd["lanes"]}
    assert len(lanes) == 7
    same = sorted(lanes[n]["status"] for n in ("same-a", "same-b"))
    assert same == ["conflict", "succeeded"]
    others = [lane for name, lane in lanes.items() if not name.startswith("same-")]
    assert {lane["status"] for lane in others} == {"succeeded"}
    # Six landed, one after another, each naming exactly those before it: every T0 was
    # taken before the first landing (the gym held the landing lock until then).
    assert crowd["gate"]["all_t0_before_any_landing"] is True
    order = crowd["landing_order"]
    assert len(order) == 6
    for lane in lanes.values():
        if lane["seq"] is not None:
            assert lane["landed_between"] == order[: order.index(lane["run_id"])]
        assert lane["held_s"] >= 0 and lane["waited_s"] >= 0
    assert card["tidegate_overhead_s"] is None and card["unmeasured"]["tidegate_overhead_s"]
    assert Path(document["artifacts"], "report.json").is_file()


def test_the_crowd_is_in_core_and_not_in_smoke() -> None:
    assert SCENARIO in load_suite("core").scenarios
    assert SCENARIO not in load_suite("smoke").scenarios
    assert len(load_scenario(SCENARIO).crowd) == 7


def test_a_scripted_contestant_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    res = op(
        capsys, "gym", "run", SCENARIO, "--state-root", str(tmp_path / "s"),
        "--contestant", "scripted:worse-contestant.script.json",
    )  # fmt: skip
    assert res.code != 0
    assert len(res.err.strip().splitlines()) == 1, res.err
    assert "one script cannot play every lane" in res.err
