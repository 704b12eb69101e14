"""Conformance 22: edits that keep failing on one path in one state reach a bounded pause
even when every attempt uses different arguments (other old text, other stale hashes,
whole-file writes). The count is kept per (path, observed state), the file is never
touched (same bytes, same inode), and once the file's state changes the path is editable
again. The counts survive serialisation for resume."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration.tools.support import call, executor, inode_and_bytes, sha
from tidegate.tools.context import ToolLimits
from tidegate.tools.guards import StaleEditGuard
from tidegate.workspace.states import sha256_bytes


def test_varied_failing_edits_pause_then_recover(committed_repo: Repo) -> None:
    root = committed_repo.root
    target = root / "calc.py"
    with executor(root, limits=ToolLimits(stale_edit_limit=3)) as ex:
        current = sha(ex, "calc.py")
        attempts = [
            call(
                "workspace_edit",
                path="calc.py",
                old="a - b",
                new="a + b",
                expect=sha256_bytes(b"old view 1"),
            ),
            call("workspace_edit", path="calc.py", old="no such text", new="x", expect=current),
            call(
                "workspace_write",
                path="calc.py",
                content="rewritten\n",
                expect=sha256_bytes(b"old view 2"),
            ),
        ]
        pinned = inode_and_bytes(target)
        codes = []
        for attempt in attempts:
            result = ex.execute(attempt)
            assert result.status == "error" and result.error is not None
            codes.append(result.error.code)
            assert result.effects.present() == []
        assert codes == ["stale_precondition", "edit_not_applicable", "stale_precondition"]

        paused = ex.execute(
            call("workspace_edit", path="calc.py", old="a * b", new="b * a", expect=current)
        )
        assert paused.status == "paused" and paused.error is not None
        assert paused.error.code == "stale_edit_limit" and not paused.error.retryable
        assert inode_and_bytes(target) == pinned
        saved = ex.guard.to_json()

        # other paths are not affected
        other = ex.execute(
            call("workspace_write", path="README.md", content="# c\n", expect=sha(ex, "README.md"))
        )
        assert other.ok

        # the user changes the file: a new state, a fresh count
        committed_repo.write("calc.py", "def add(a, b):\n    return a - b\n")
        fresh = ex.execute(
            call(
                "workspace_edit",
                path="calc.py",
                old="a - b",
                new="a + b",
                expect=sha(ex, "calc.py"),
            )
        )
        assert fresh.ok and "a + b" in target.read_text()

    restored = StaleEditGuard.from_json(saved)
    assert restored.blocked("calc.py", f"file:{current}")
