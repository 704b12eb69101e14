"""Every phase keeps to its declared effect: only APPLY_BACK (``Effect.WORKSPACE``) may change
the main work tree or the index. Checked around every phase of real patch, review and debug
runs, failing attempts included; and the mode -> phase mapping is the specified one."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo
from tidegate.records.modes import EFFECTS, MODE_PHASES, Effect, Mode, Phase, When, phases_of
from tidegate.records.report import PhaseEvent

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider -p no:hypothesispytest"
TESTS = (
    "from calc import add, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
SYNTAX_ERROR = "edit-file: calc.py\nreplace: return a - b\nwith: return a - (b\n"
WRONG_FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"
RIGHT_FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"


@dataclass
class Snapshotter:
    """A PhaseObserver that records the main tree (with mtimes) and the index around every
    phase."""

    repo: Repo
    started: list[tuple[int, Phase]] = field(default_factory=list)
    changes: list[tuple[PhaseEvent, bool]] = field(default_factory=list)
    _before: dict[str, object] | None = None
    _index: bytes = b""

    def phase_started(self, attempt: int, phase: Phase) -> None:
        self.started.append((attempt, phase))
        self._before = self.repo.tree_state(with_mtimes=True)
        self._index = self.repo.index_bytes()

    def phase_finished(self, event: PhaseEvent) -> None:
        assert self._before is not None
        unchanged = (
            self.repo.tree_state(with_mtimes=True) == self._before
            and self.repo.index_bytes() == self._index
        )
        self.changes.append((event, unchanged))
        self._before = None

    def assert_effects_respected(self) -> None:
        assert self.changes, "the observer saw no phase"
        assert [(e.attempt, e.phase) for e, _ in self.changes] == [
            (a, p.value) for a, p in self.started
        ]
        offenders = [
            (e.attempt, e.phase)
            for e, unchanged in self.changes
            if EFFECTS[Phase(e.phase)] is not Effect.WORKSPACE and not unchanged
        ]
        assert offenders == [], f"phases that changed the main tree or index: {offenders}"

    def seen(self) -> list[tuple[int, str, str]]:
        return [(e.attempt, e.phase, e.status) for e, _ in self.changes]


@pytest.fixture
def project(committed_repo: Repo) -> Repo:
    """A project whose test catches the bug in add(), in a dirty state of every kind."""
    repo = committed_repo
    repo.write("test_calc.py", TESTS)
    repo.commit_all("tests")
    repo.write("calc.py", repo.read("calc.py") + "\n\n# unstaged note\n")
    repo.write("README.md", "# calc, staged\n")
    repo.git("add", "README.md")
    repo.write("notes/todo.txt", "untracked\n")
    repo.write(".env", "ignored\n")
    return repo


def _script(tmp_path: Path, attempts: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"planner": "scripted", "attempts": attempts}))
    return f"scripted:{path}"


@pytest.mark.parametrize("mode", [Mode.PATCH, Mode.DEBUG])
def test_patch_and_debug_phases_keep_to_their_effects(
    project: Repo, tmp_path: Path, mode: Mode
) -> None:
    """Attempt 1 breaks the syntax (AST_VALIDATE fails), attempt 2 fails VERIFY, attempt 3
    succeeds: ROLLBACK and SHRINK run twice, APPLY_BACK once."""
    planner = _script(
        tmp_path,
        [{"objective": SYNTAX_ERROR}, {"objective": WRONG_FIX}, {"objective": RIGHT_FIX}],
    )
    index = project.index_bytes()
    obs = Snapshotter(project)
    report = project.run(
        "Fix add()", verify=PYTEST, mode=mode, planner=planner, max_attempts=3, observer=obs
    )
    assert report.status == "succeeded", report.message
    assert report.attempts == 3
    seen = obs.seen()
    assert (1, "AST_VALIDATE", "failed") in seen
    assert (2, "VERIFY", "failed") in seen
    for attempt in (1, 2):
        assert (attempt, "ROLLBACK", "ok") in seen
        assert (attempt, "SHRINK", "ok") in seen
    assert seen[-1] == (3, "APPLY_BACK", "ok")
    if mode is Mode.DEBUG:
        assert (1, "REVIEW", "ok") in seen and (1, "ANALYZE_ISSUES", "ok") in seen
    obs.assert_effects_respected()
    # The observer can see a change: APPLY_BACK did change the main tree, and only it.
    ((apply_back, unchanged),) = [(e, u) for e, u in obs.changes if e.phase == "APPLY_BACK"]
    assert apply_back.status == "ok" and not unchanged
    assert project.read("calc.py").startswith("def add(a, b):\n    return a + b\n")
    assert project.read("calc.py").endswith("# unstaged note\n")
    assert project.index_bytes() == index


def test_failed_patch_run_changes_nothing_in_any_phase(project: Repo) -> None:
    before = project.tree_state(with_mtimes=True)
    obs = Snapshotter(project)
    report = project.run(WRONG_FIX, verify=PYTEST, max_attempts=3, observer=obs)
    assert report.status == "failed"
    assert "APPLY_BACK" not in [e.phase for e, _ in obs.changes]
    assert all(unchanged for _, unchanged in obs.changes), obs.seen()
    assert project.tree_state(with_mtimes=True) == before


def test_review_phases_keep_to_their_effects(project: Repo) -> None:
    before = project.tree_state(with_mtimes=True)
    obs = Snapshotter(project)
    report = project.run("Review calc.py", verify=PYTEST, mode=Mode.REVIEW, observer=obs)
    assert report.status == "succeeded", report.message
    assert [p for _, p, _ in obs.seen()] == [p.value for p in phases_of(Mode.REVIEW)]
    obs.assert_effects_respected()
    assert all(unchanged for _, unchanged in obs.changes)
    assert project.tree_state(with_mtimes=True) == before


BASE = ["PREFLIGHT", "CONTEXT", "EXPLORE"]
CYCLE = ["PLAN", "PATCH", "VALIDATE", "AST_VALIDATE", "APPLY", "VERIFY", "ROLLBACK", "SHRINK"]
SPEC: dict[Mode, list[str]] = {
    Mode.PATCH: [*BASE, *CYCLE, "APPLY_BACK"],
    Mode.REVIEW: [*BASE, "REVIEW", "REPORT", "SHRINK"],
    Mode.DEBUG: [*BASE, "REVIEW", "ANALYZE_ISSUES", *CYCLE, "APPLY_BACK"],
}


@pytest.mark.parametrize("mode", list(Mode))
def test_mode_phases_match_the_spec(mode: Mode) -> None:
    assert [p.value for p in phases_of(mode)] == SPEC[mode]
    assert [p.value for p, _ in MODE_PHASES[mode]] == SPEC[mode]


def test_modes_are_exactly_patch_review_debug() -> None:
    assert set(MODE_PHASES) == {Mode.PATCH, Mode.REVIEW, Mode.DEBUG}


@pytest.mark.parametrize("mode", [Mode.PATCH, Mode.DEBUG])
def test_recovery_and_apply_back_conditions(mode: Mode) -> None:
    when = dict(MODE_PHASES[mode])
    assert when[Phase.ROLLBACK] is When.ON_FAILURE
    assert when[Phase.SHRINK] is When.ON_FAILURE
    assert when[Phase.APPLY_BACK] is When.ON_SUCCESS
    others = set(when) - {Phase.ROLLBACK, Phase.SHRINK, Phase.APPLY_BACK}
    assert {when[p] for p in others} == {When.ALWAYS}


def test_only_apply_back_may_touch_the_workspace() -> None:
    assert set(EFFECTS) == set(Phase)
    assert [p for p, e in EFFECTS.items() if e is Effect.WORKSPACE] == [Phase.APPLY_BACK]
    assert {p for p, e in EFFECTS.items() if e is Effect.SHADOW} == {Phase.APPLY, Phase.ROLLBACK}
    review_effects = {EFFECTS[p] for p in phases_of(Mode.REVIEW)}
    assert review_effects == {Effect.READ_ONLY}
