"""Every form a proposal can take reaches one canonical change set: exact diffs through git,
diffs git refuses through tolerant hunks (with the relaxation reported), SEARCH/REPLACE
blocks, and malformed input refused with feedback precise enough to fix it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Repo


def _script(tmp_path: Path, *attempts: dict[str, str]) -> str:
    script = tmp_path / "plan.json"
    script.write_text(json.dumps({"attempts": list(attempts)}))
    return f"scripted:{script}"


def test_search_replace_blocks_apply_and_merge_back(committed_repo: Repo, tmp_path: Path) -> None:
    blocks = (
        "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
        "NOTES.md\n<<<<<<< SEARCH\n=======\nfixed add\n>>>>>>> REPLACE\n"
    )
    report = committed_repo.run("fix add", planner=_script(tmp_path, {"search_replace": blocks}))
    assert report.status == "succeeded", report.message
    assert "return a + b" in committed_repo.read("calc.py")
    assert committed_repo.read("NOTES.md") == "fixed add\n"
    assert {f.path for f in report.changed_files} == {"calc.py", "NOTES.md"}


def test_a_diff_with_wrong_line_numbers_and_whitespace_applies_tolerantly(
    committed_repo: Repo, tmp_path: Path
) -> None:
    # Hunk header says line 40, context has trailing spaces: git apply refuses it.
    diff = (
        "--- a/calc.py\n+++ b/calc.py\n@@ -40,2 +40,2 @@\n"
        " def mul(a, b):   \n-    return a * b\n+    return b * a\n"
    )
    report = committed_repo.run("swap", planner=_script(tmp_path, {"diff": diff}))
    assert report.status == "succeeded", report.message
    assert "    return b * a\n" in committed_repo.read("calc.py")
    assert "def mul(a, b):\n" in committed_repo.read("calc.py")  # the file's own context kept
    assert any("relaxed" not in n and "trailing whitespace ignored" in n for n in report.notes)
    validate = next(p for p in report.phases if p.phase == "VALIDATE")
    assert "relaxed match" in validate.detail


def test_a_diff_whose_context_is_nowhere_is_refused_with_the_closest_lines(
    committed_repo: Repo, tmp_path: Path
) -> None:
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(x, y):\n-    return x - y\n+    return x + y\n"
    report = committed_repo.run("fix", planner=_script(tmp_path, {"diff": diff}), max_attempts=1)
    assert report.status == "failed"
    assert (report.failure_phase, report.error_class) == ("VALIDATE", "AST_VALIDATION_ERROR")
    feedback = report.feedback[0]
    assert "calc.py: hunk 1 (@@ -1,2 @@): expected these lines:" in feedback
    assert "closest lines are 1-2" in feedback
    assert "1 | def add(a, b):" in feedback
    assert "git apply said" in feedback


def test_malformed_search_replace_is_retryable_with_the_line(
    committed_repo: Repo, tmp_path: Path
) -> None:
    bad = "calc.py\n<<<<<<< SEARCH\n    return a - b\n"
    good = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    report = committed_repo.run(
        "fix",
        planner=_script(
            tmp_path,
            {"search_replace": bad},
            {"search_replace": good, "expect_feedback": "line 2: SEARCH block is not closed"},
        ),
    )
    assert report.status == "succeeded", report.message
    assert report.attempts == 2
    assert report.attempt_events[0].failure_phase == "VALIDATE"
