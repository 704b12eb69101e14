"""The loop converges: a syntax error is stopped before VERIFY, a failing test comes back as
feedback naming the test and the line, and the third attempt passes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import Repo

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
VERIFY = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:hypothesispytest"


def _diff(new_line: str) -> str:
    return (
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        f"-    return a - b\n+{new_line}\n"
    )


def test_syntax_error_then_failing_test_then_success(repo: Repo, tmp_path: Path) -> None:
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TEST)
    repo.commit_all()
    script = tmp_path / "plan.json"
    script.write_text(
        json.dumps(
            {
                "attempts": [
                    {"diff": _diff("    return a +")},
                    {"diff": _diff("    return a * b"), "expect_feedback": "calc.py:2"},
                    {"diff": _diff("    return a + b"), "expect_feedback": "test_add"},
                ]
            }
        )
    )
    report = repo.run("fix add", verify=VERIFY, planner=f"scripted:{script}")

    assert report.status == "succeeded", report.message
    assert report.attempts == 3
    first, second, third = report.attempt_events
    assert (first.failure_phase, first.error_class) == ("AST_VALIDATE", "AST_VALIDATION_ERROR")
    assert not any(p.phase == "VERIFY" and p.attempt == 1 for p in report.phases)
    assert (second.failure_phase, second.error_class) == ("VERIFY", "TEST")
    assert second.diagnostics >= 1 and second.feedback_chars > 0
    assert third.status == "succeeded"
    feedback = report.feedback[1]
    assert "tests/test_calc.py::test_add" in feedback
    assert "tests/test_calc.py:5" in feedback  # the failing assert's line
    assert "calc.py" in feedback
    assert repo.read("calc.py") == "def add(a, b):\n    return a + b\n"
