"""Conformance 3: a write, then a scoped validation whose evidence names the workspace
fingerprint it ran against, then a complete diff whose digest is the hash of git's own
bytes. A summary or truncated diff is not diff-review evidence."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import Repo, requires_containment
from tests.integration.tools.support import call, executor, sha
from tidegate.workspace.fingerprint import workspace_fingerprint
from tidegate.workspace.states import sha256_bytes

TEST_FILE = """\
import unittest

from calc import add


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


@requires_containment
def test_write_validate_then_hashed_diff(committed_repo: Repo) -> None:
    root = committed_repo.root
    committed_repo.write("test_calc.py", TEST_FILE)
    committed_repo.write("notes.txt", "".join(f"line {i}\n" for i in range(200)))
    committed_repo.commit_all("tests")
    validation = f"{sys.executable} -m unittest -q"
    with executor(root, validation_command=validation) as ex:
        failing = ex.execute(call("project_validate", paths=["test_calc.py"]))
        assert failing.ok and failing.output is not None
        assert failing.output["status"] == "failed"
        assert failing.output["error_class"] == "TEST"
        assert "test_calc.TestAdd.test_add" in failing.output["failing_tests"]
        assert failing.effects.validate_ is not None
        assert failing.effects.validate_.status == "failed"
        assert failing.effects.write == ()

        edited = ex.execute(
            call(
                "workspace_edit",
                path="calc.py",
                old="return a - b",
                new="return a + b",
                expect=sha(ex, "calc.py"),
            )
        )
        assert edited.ok

        notes = "".join(f"line {i} changed\n" for i in range(200))
        rewritten = ex.execute(
            call("workspace_write", path="notes.txt", content=notes, expect=sha(ex, "notes.txt"))
        )
        assert rewritten.ok

        fingerprint = workspace_fingerprint(root)
        passed = ex.execute(call("project_validate", validation_id="unit", paths=["test_calc.py"]))
        assert passed.ok and passed.output is not None
        assert passed.output["status"] == "passed", passed.output
        evidence = passed.effects.validate_
        assert evidence is not None
        assert evidence.validation_id == "unit"
        assert evidence.status == "passed" and evidence.exit_code == 0
        assert evidence.fingerprint == fingerprint == passed.output["fingerprint"]
        assert evidence.command.endswith("test_calc.py")
        assert passed.effects.state_version is not None

        diff = ex.execute(call("git_exec", args=["diff"]))
        assert diff.ok and diff.output is not None and diff.output["complete_diff"]
        raw = subprocess.run(
            ["git", "diff", "--no-ext-diff", "--no-textconv"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
        review = diff.effects.diff_review
        assert review is not None
        assert review.diff_sha256 == sha256_bytes(raw)
        assert review.paths == ("calc.py", "notes.txt")

        stat = ex.execute(call("git_exec", args=["diff", "--stat"]))
        assert stat.ok and stat.effects.diff_review is None
        assert len(raw) > 1000
        cut = ex.execute(call("git_exec", args=["diff"], max_bytes=1000))
        assert cut.ok and cut.output is not None and cut.output["truncated"]
        assert not cut.output["complete_diff"]
        assert cut.effects.diff_review is None
