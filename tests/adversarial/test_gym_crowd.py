"""The crowd scenario cannot be passed by a crowd that lost work or landed out of order,
and its runs really meet: each test fails when the mechanism it names is removed.

* The scorer (``gym.crowd.score``): a loser's text written, a lost ``.rej``, one byte of
  the user's untracked file or of ``.git/index`` changed, a run missing from another's
  ``landed_between``: each fails a check. The facts are a real crowd's (seven real runs
  on the seed), then tampered with.
* The gate (the gym holds the landing lock until every run took T0): one run starts three
  seconds late (a loaded machine) and the others have no verify command, so they land
  within a second or two of their start; without the gate the late run's T0 then holds
  the others' changes: its same-lines edit no longer applies, and the same-lines pair
  does not meet in a merge.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from tidegate.exec.runner import CommandResult
from tidegate.gym import crowd as crowd_module
from tidegate.gym.contestants import contestant
from tidegate.gym.crowd import _await_t0, _launch_all, _one, run_crowd, score
from tidegate.gym.scenarios import Lane, load_scenario
from tidegate.gym.seed import build, damage, user_bytes
from tidegate.workspace.lock import RunLock
from tidegate.workspace.prep_slots import QUEUED

SCENARIO = load_scenario("crowd-dirty-tree")


@pytest.fixture(scope="module")
def crowd() -> Any:
    scratch = Path(tempfile.mkdtemp(prefix="tidegate-crowd-test-"))
    repo = scratch / "repo"
    build(SCENARIO.seed, repo)
    before = user_bytes(repo)
    reports, _ = _launch_all(SCENARIO, contestant("local-harness", scratch), repo,
                             scratch / "state", scratch)  # fmt: skip
    yield repo, before, reports
    shutil.rmtree(scratch, ignore_errors=True)


def _failed(repo: Path, before: dict[str, bytes], reports: list[dict[str, Any]],
            after: dict[str, bytes] | None = None) -> list[str]:  # fmt: skip
    after = user_bytes(repo) if after is None else after
    lost = damage(before, after, {lane.path for lane in SCENARIO.crowd})
    checks = score(SCENARIO.crowd, reports, before, after, lost, repo)
    return [c["name"] for c in checks if not c["passed"]]


def _loser(reports: list[dict[str, Any]]) -> tuple[int, Any]:
    i = next(i for i, r in enumerate(reports) if r["status"] == "conflict")
    return i, SCENARIO.crowd[i]


def test_the_real_crowd_passes(crowd: Any) -> None:
    assert _failed(*crowd) == []


def test_the_losers_text_in_the_work_tree_fails(crowd: Any) -> None:
    repo, before, reports = crowd
    _, lane = _loser(reports)
    after = user_bytes(repo)
    after[lane.path] = after[lane.path] + lane.with_.encode() + b"\n"
    target = repo / lane.path
    kept = target.read_bytes()
    target.write_bytes(after[lane.path])
    try:
        failed = _failed(repo, before, reports, after)
    finally:
        target.write_bytes(kept)
    assert f"{lane.name} conflicts (same lines), nothing written" in failed
    assert "changed files are the user's version plus the winners' edits" in failed


def test_a_missing_rej_fails(crowd: Any) -> None:
    repo, before, reports = crowd
    i, lane = _loser(reports)
    tampered = copy.deepcopy(reports)
    tampered[i]["rejects_dir"] = str(repo / "nowhere")
    assert _failed(repo, before, tampered) == [
        f"{lane.name} conflicts (same lines), nothing written"
    ]


@pytest.mark.parametrize("path", ["notes.txt", "<index>", "README.md"])
def test_one_byte_of_user_work_changed_fails(crowd: Any, path: str) -> None:
    repo, before, reports = crowd
    after = user_bytes(repo)
    after[path] = bytes([after[path][0] ^ 1]) + after[path][1:]
    assert _failed(repo, before, reports, after) == [
        "no byte of other user work lost (staged, unstaged, untracked, index)"
    ]


def test_a_run_missing_from_landed_between_fails(crowd: Any) -> None:
    repo, before, reports = crowd
    tampered = copy.deepcopy(reports)
    last = max((r for r in tampered if r["landing"]["seq"]), key=lambda r: r["landing"]["seq"])
    last["landing"]["landed_between"] = last["landing"]["landed_between"][1:]
    assert _failed(repo, before, tampered) == ["landing order consistent (landed_between)"]


def test_a_lane_that_failed_says_why_in_its_check(crowd: Any) -> None:
    """A winner that did not land fails its check, and the detail carries what its run said
    (phase, error class, message): the review needs no artifacts to see why."""
    repo, before, reports = crowd
    tampered = copy.deepcopy(reports)
    tampered[0].update(status="failed", failure_phase="VERIFY", error_class="TIMEOUT",
                       message="verification timed out after 60s\nmore")  # fmt: skip
    after = user_bytes(repo)
    lost = damage(before, after, {lane.path for lane in SCENARIO.crowd})
    checks = score(SCENARIO.crowd, tampered, before, after, lost, repo)
    lane = next(c for c in checks if c["name"] == f"{SCENARIO.crowd[0].name} lands")
    assert not lane["passed"]
    assert lane["detail"] == "status failed (VERIFY: TIMEOUT: verification timed out after 60s)"


def test_the_gate_makes_every_t0_precede_every_landing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    late = "same-b"

    def one_late(lane: Lane, *args: Any) -> CommandResult:
        if lane.name == late:
            time.sleep(3)
        return _one(lane, *args)

    monkeypatch.setattr(crowd_module, "_one", one_late)
    fast = SCENARIO.model_copy(update={"verify": None})
    (tmp_path / "run" / "state").mkdir(parents=True)
    document = run_crowd(fast, None, tmp_path / "run")
    assert document["crowd"]["gate"]["all_t0_before_any_landing"] is True
    failed = [c["name"] for c in document["checks"] if not c["passed"]]
    assert failed == [], document["checks"]


def test_a_lane_queued_for_a_preparation_slot_has_not_taken_t0(tmp_path: Path) -> None:
    """The gate must not open while a lane waits for a slot (``QUEUED``, before its T0): a
    lane taking T0 after the first landing would see the others' changes."""
    runtime = tmp_path / "tidegate"
    lane = RunLock(runtime, "20261206-000000-queued").acquire()
    try:
        pending: Future[CommandResult] = Future()
        for phase in (None, QUEUED, "BOOTSTRAP"):
            if phase is not None:
                lane.describe(phase=phase)
            assert _await_t0(runtime, [pending], time.monotonic() + 0.2) is False, phase
        lane.describe(phase="PREFLIGHT")
        assert _await_t0(runtime, [pending], time.monotonic() + 5) is True
    finally:
        lane.release()
