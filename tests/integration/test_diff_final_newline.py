"""A unified diff whose text stops without a final newline (models send those): its last
line is still a whole line. Applied tolerantly (git refuses such a diff), it must not join
the file's next line to it, and a diff that would join two lines is refused, naming the
line, with nothing written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import CALC, Repo

# No trailing context, so git anchors the hunk at the end of the file and refuses it; the
# diff text ends without a newline after the added line.
UNTERMINATED = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n"
    "-    return a - b\n+    total = a + b\n+    return total"
)
FIXED = CALC.replace("    return a - b\n", "    total = a + b\n    return total\n")
CHECK = (
    f"{sys.executable} -B -c 'from calc import add, mul; assert add(2, 3) == 5 == mul(2, 3) - 1'"
)


def _script(tmp_path: Path, *attempts: dict[str, str]) -> str:
    script = tmp_path / "plan.json"
    script.write_text(json.dumps({"attempts": list(attempts)}))
    return f"scripted:{script}"


def test_the_last_line_of_an_unterminated_diff_is_a_whole_line(
    committed_repo: Repo, tmp_path: Path
) -> None:
    report = committed_repo.run(
        "fix add", verify=CHECK, planner=_script(tmp_path, {"diff": UNTERMINATED})
    )
    assert report.status == "succeeded", report.message
    # Every line the diff did not touch is still there: the blank line after the added
    # one was joined to it before (the file lost a line and the run said it succeeded).
    assert committed_repo.read("calc.py") == FIXED


def test_a_diff_that_would_join_two_lines_is_refused_and_nothing_is_written(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write("notes.txt", "alpha\nbeta")  # the file ends without a newline
    repo.commit_all()
    repo.write("other.txt", "mine\n")  # untracked, and kept
    before = repo.tree_state(with_mtimes=True)
    # Adds a line after "beta" without marking "beta" as ending without a newline: taken
    # as written, "beta" and "gamma" would become one line "betagamma".
    diff = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,3 @@\n alpha\n beta\n+gamma\n"
    report = repo.run("add gamma", planner=_script(tmp_path, {"diff": diff}), max_attempts=1)
    assert report.status == "failed"
    assert (report.failure_phase, report.error_class) == ("VALIDATE", "AST_VALIDATION_ERROR")
    assert "notes.txt: line 2 would lose its newline and join line 3" in report.message
    assert repo.tree_state(with_mtimes=True) == before  # index bytes included
