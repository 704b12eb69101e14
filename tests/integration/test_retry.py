"""Retries: a failed verification becomes feedback the next attempt's planner receives;
terminal errors and repeated proposals stop at once; ``--max-attempts`` is honoured; debug
mode reviews first, then runs the patch cycle."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, tidegate_cli
from tidegate.records.modes import Mode

PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider -p no:hypothesispytest"
FAILING_TEST = "test_calc.py::test_add"
TESTS = (
    "from calc import add, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
WRONG_FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a * b\n"
RIGHT_FIX = "edit-file: calc.py\nreplace: return a - b\nwith: return a + b\n"
WRONG_DIFF = (
    "--- a/calc.py\n"
    "+++ b/calc.py\n"
    "@@ -1,5 +1,5 @@\n"
    " def add(a, b):\n"
    "-    return a - b\n"
    "+    return b - a\n"
    " \n"
    " \n"
    " def mul(a, b):\n"
)
PATCH_CYCLE = [
    "PLAN",
    "PATCH",
    "VALIDATE",
    "AST_VALIDATE",
    "APPLY",
    "VERIFY",
]


@pytest.fixture
def project(committed_repo: Repo) -> Repo:
    committed_repo.write("test_calc.py", TESTS)
    committed_repo.commit_all("tests")
    return committed_repo


def _script(tmp_path: Path, attempts: list[dict[str, Any]], **extra: Any) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"planner": "scripted", "attempts": attempts, **extra}))
    return f"scripted:{path}"


def _phases(report: Any, attempt: int) -> list[tuple[str, str]]:
    return [(e.phase, e.status) for e in report.phases if e.attempt == attempt]


@pytest.mark.parametrize(
    "first", [{"objective": WRONG_FIX}, {"diff": WRONG_DIFF}], ids=["obj", "diff"]
)
def test_failed_verify_feeds_the_next_attempt(
    project: Repo, tmp_path: Path, first: dict[str, str]
) -> None:
    index = project.index_bytes()
    planner = _script(
        tmp_path,
        [
            {"plan": "first try", **first},
            {"plan": "second try", "objective": RIGHT_FIX, "expect_feedback": FAILING_TEST},
        ],
    )
    report = project.run("Fix add()", verify=PYTEST, planner=planner, max_attempts=3)
    assert report.status == "succeeded", report.message
    assert report.attempts == 2
    assert report.error_class is None and report.failure_phase is None
    assert len(report.feedback) == 1
    assert FAILING_TEST in report.feedback[0]
    assert "TEST" in report.feedback[0]
    assert "test_mul" not in report.feedback[0]
    assert _phases(report, 1) == [
        ("PREFLIGHT", "ok"),
        ("CONTEXT", "ok"),
        ("EXPLORE", "ok"),
        *[(p, "ok") for p in PATCH_CYCLE[:-1]],
        ("VERIFY", "failed"),
        ("ROLLBACK", "ok"),
        ("SHRINK", "ok"),
    ]
    assert _phases(report, 2)[-1] == ("APPLY_BACK", "ok")
    assert project.read("calc.py").startswith("def add(a, b):\n    return a + b\n")
    assert project.index_bytes() == index
    assert project.status() == " M calc.py\n"


def test_expect_feedback_really_checks_what_the_planner_received(
    project: Repo, tmp_path: Path
) -> None:
    """The control for the test above: feedback that does not name test_mul fails PLAN."""
    before = project.tree_state()
    planner = _script(
        tmp_path,
        [
            {"objective": WRONG_FIX},
            {"objective": RIGHT_FIX, "expect_feedback": "test_mul"},
        ],
    )
    report = project.run("Fix add()", verify=PYTEST, planner=planner, max_attempts=3)
    assert report.status == "failed"
    assert report.attempts == 2
    assert report.failure_phase == "PLAN"
    assert "test_mul" in report.message
    assert project.tree_state() == before


def test_command_not_found_is_not_retried(project: Repo) -> None:
    before = project.tree_state()
    report = project.run(RIGHT_FIX, verify="definitely-not-a-command-xyz", max_attempts=3)
    assert report.status == "failed"
    assert report.error_class == "DEPENDENCY_ERROR"
    assert report.attempts == 1
    assert report.failure_phase == "VERIFY"
    assert "definitely-not-a-command-xyz" in report.message
    assert {e.attempt for e in report.phases} == {1}
    assert project.tree_state() == before


def test_command_not_found_through_the_cli(project: Repo) -> None:
    before = project.tree_state()
    res = tidegate_cli(
        "run",
        "--objective",
        RIGHT_FIX,
        "--verify",
        "definitely-not-a-command-xyz",
        "--json",
        cwd=project.root,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["error_class"] == "DEPENDENCY_ERROR"
    assert report["attempts"] == 1
    assert project.tree_state() == before


def test_repeated_proposal_stops(project: Repo) -> None:
    """The structured planner proposes the same change every time: after it failed once,
    repeating it is refused instead of burning the remaining attempts."""
    before = project.tree_state()
    report = project.run(
        "edit-file: README.md\nreplace: # calc\nwith: # calc, documented\n",
        verify=PYTEST,
        max_attempts=5,
    )
    assert report.status == "failed"
    assert report.attempts == 2
    # The failure that decided the run is attempt 1's, not the stop on the repeat.
    assert (report.failure_phase, report.error_class) == ("VERIFY", "TEST")
    assert report.message.startswith(f"1 failing test (pytest): {FAILING_TEST}")
    assert "attempt 2 proposed the same change again" in report.message
    assert [e.failure_phase for e in report.attempt_events] == ["VERIFY", "PATCH"]
    assert len(report.feedback) == 2
    assert FAILING_TEST in report.feedback[0]
    assert project.tree_state() == before


def test_a_repeated_failing_proposal_is_headed_by_its_failure_on_the_terminal(
    project: Repo, tmp_path: Path
) -> None:
    """A scripted planner proposes the same wrong fix twice: the headline names the
    failing test, the failure line says VERIFY (TEST), and the change and verification
    shown are the ones that failed; the stop on the repeat comes after."""
    planner = _script(tmp_path, [{"objective": WRONG_FIX}, {"objective": WRONG_FIX}])
    before = project.tree_state(with_mtimes=True)

    res = tidegate_cli("run", "--planner", planner, "--objective", "x", "--verify", PYTEST,
                       cwd=project.root)  # fmt: skip

    assert res.returncode == 1, res.stderr
    headline, failure = res.stdout.splitlines()[:2]
    assert headline.startswith("failed patch run ")
    assert f"after 2 attempt(s): 1 failing test (pytest): {FAILING_TEST} (attempt 2" in headline
    assert failure == "  failed in VERIFY (TEST)"
    assert "modify  calc.py" in res.stdout  # the change that failed
    assert project.tree_state(with_mtimes=True) == before

    shown = tidegate_cli("read", "latest", cwd=project.root).stdout.splitlines()[0]
    assert " failed TEST in VERIFY " in shown, shown
    report = json.loads(tidegate_cli("read", "latest", "--json", cwd=project.root).stdout)
    assert (report["failure_phase"], report["error_class"]) == ("VERIFY", "TEST")
    assert report["verify"]["exit_code"] == 1
    assert "return a * b" in report["diff"]


def test_a_repeated_refused_proposal_is_headed_by_the_refusal(
    project: Repo, tmp_path: Path
) -> None:
    refused = "edit-file: calc.py\nreplace: return a - b\nwith: return (a +\n"
    planner = _script(tmp_path, [{"objective": refused}, {"objective": refused}])
    before = project.tree_state(with_mtimes=True)

    report = project.run("x", verify=PYTEST, planner=planner)

    assert report.status == "failed" and report.attempts == 2
    assert (report.failure_phase, report.error_class) == ("AST_VALIDATE", "AST_VALIDATION_ERROR")
    assert report.message.startswith("the change breaks a file: calc.py")
    assert report.message.endswith(
        "(attempt 2 proposed the same change again; stopped instead of retrying)"
    )
    assert project.tree_state(with_mtimes=True) == before


def test_max_attempts_one_makes_a_single_attempt(project: Repo, tmp_path: Path) -> None:
    before = project.tree_state()
    planner = _script(
        tmp_path,
        [{"objective": WRONG_FIX}, {"objective": RIGHT_FIX, "expect_feedback": FAILING_TEST}],
    )
    res = tidegate_cli(
        "run",
        "--objective",
        "Fix add()",
        "--planner",
        planner,
        "--verify",
        PYTEST,
        "--max-attempts",
        "1",
        "--json",
        cwd=project.root,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["status"] == "failed"
    assert report["attempts"] == 1
    assert report["max_attempts"] == 1
    assert report["error_class"] == "TEST"
    assert report["failure_phase"] == "VERIFY"
    assert {e["attempt"] for e in report["phases"]} == {1}
    assert FAILING_TEST in report["feedback"][0]
    assert project.tree_state() == before


def test_debug_mode_reviews_then_patches(project: Repo) -> None:
    index = project.index_bytes()
    report = project.run(RIGHT_FIX, verify=PYTEST, mode=Mode.DEBUG)
    assert report.status == "succeeded", report.message
    assert report.mode == "debug"
    assert report.fs_mode == "read-write"
    assert report.attempts == 1
    assert [e.phase for e in report.phases] == [
        "PREFLIGHT",
        "CONTEXT",
        "EXPLORE",
        "REVIEW",
        "ANALYZE_ISSUES",
        *PATCH_CYCLE,
        "APPLY_BACK",
    ]
    assert all(e.status == "ok" for e in report.phases)
    # REVIEW ran the checks at T0 and found the bug the patch then fixed.
    assert any(FAILING_TEST in f.message for f in report.findings), report.findings
    assert project.read("calc.py").startswith("def add(a, b):\n    return a + b\n")
    assert project.index_bytes() == index
    assert project.status() == " M calc.py\n"


def test_debug_mode_retries_with_findings_and_feedback(project: Repo, tmp_path: Path) -> None:
    planner = _script(
        tmp_path,
        [
            {"objective": WRONG_FIX},
            {"objective": RIGHT_FIX, "expect_feedback": FAILING_TEST},
        ],
        findings=[{"message": "add() subtracts", "path": "calc.py", "line": 2}],
    )
    report = project.run("Fix add()", verify=PYTEST, mode=Mode.DEBUG, planner=planner)
    assert report.status == "succeeded", report.message
    assert report.attempts == 2
    assert [p for p, _ in _phases(report, 1)][3:5] == ["REVIEW", "ANALYZE_ISSUES"]
    assert ("VERIFY", "failed") in _phases(report, 1)
    assert any(f.message == "add() subtracts" for f in report.findings)
    assert project.read("calc.py").startswith("def add(a, b):\n    return a + b\n")


def test_report_has_one_attempt_event_per_attempt(project: Repo, tmp_path: Path) -> None:
    """README: ``attempt_events`` holds one audit event per attempt."""
    planner = _script(
        tmp_path,
        [{"objective": WRONG_FIX}, {"objective": RIGHT_FIX, "expect_feedback": FAILING_TEST}],
    )
    report = project.run("Fix add()", verify=PYTEST, planner=planner, max_attempts=3)
    assert report.status == "succeeded", report.message
    events = report.attempt_events
    assert [e.attempt for e in events] == [1, 2], events
    first, second = events
    assert (first.status, first.failure_phase, first.error_class, first.retryable) == (
        "failed",
        "VERIFY",
        "TEST",
        True,
    )
    assert (second.status, second.failure_phase, second.error_class) == ("succeeded", None, None)
    assert first.proposal_sha256 and second.proposal_sha256
    assert first.proposal_sha256 != second.proposal_sha256
    assert first.candidate_tree and second.candidate_tree
    assert first.candidate_tree != second.candidate_tree
    assert all(e.duration_ms > 0 for e in events)
