"""Conformance 44: a round with duplicate call IDs, a reused call ID, an inactive tool
(including one a catalog search in the same round would activate) or more calls than the
budget allows is refused as a whole before its first side effect: nothing is dispatched,
every call is reported skipped, and the workspace is byte-identical."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import call, executor
from tidegate.tools.calls import ToolCall
from tidegate.tools.context import ToolLimits
from tidegate.tools.executor import ToolExecutor

WRITE = {"path": "a.txt", "content": "x\n", "expect": "must_not_exist"}


def _assert_refused(ex: ToolExecutor, calls: list[ToolCall], repo: Repo, reason: str) -> None:
    before, calls_before = repo.tree_state(), ex.calls_made
    batch = ex.execute_batch(calls)
    assert batch.rejected is not None and reason in batch.rejected
    assert [r.status for r in batch.results] == ["skipped"] * len(calls)
    assert all(r.effects.present() == [] for r in batch.results)
    assert repo.tree_state() == before
    assert ex.calls_made == calls_before, "a refused round dispatches nothing"


def test_duplicate_ids(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        calls = [
            call("workspace_write", "same", **WRITE),
            call("workspace_read", "same", path="a.txt"),
        ]
        _assert_refused(ex, calls, committed_repo, "duplicate call ids")


def test_reused_id_from_an_earlier_round(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        first = ex.execute_batch([call("workspace_read", "r1", path="calc.py")])
        assert first.results[0].ok
        calls = [call("workspace_write", "w1", **WRITE), call("workspace_read", "r1", path="a.txt")]
        _assert_refused(ex, calls, committed_repo, "call ids already used: r1")


@pytest.mark.parametrize("doubles", [False, True])
def test_inactive_tool_in_the_same_round(committed_repo: Repo, doubles: bool) -> None:
    with executor(committed_repo.root, doubles=doubles) as ex:
        calls = [
            call("workspace_write", **WRITE),
            call("catalog_search", query="research"),
            call("research_search", query="json"),
        ]
        _assert_refused(ex, calls, committed_repo, "research_search is not active")
        assert not ex.registry.is_active("research.search")


def test_unknown_tool_in_the_round(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        calls = [call("workspace_write", **WRITE), call("delete_everything")]
        _assert_refused(ex, calls, committed_repo, "no tool named 'delete_everything'")


def test_budget_overflow(committed_repo: Repo) -> None:
    with executor(committed_repo.root, limits=ToolLimits(max_batch_calls=2)) as ex:
        calls = [call("workspace_write", **WRITE)] + [
            call("workspace_read", path="calc.py") for _ in range(2)
        ]
        _assert_refused(ex, calls, committed_repo, "exceed the limit of 2 per round")
    with executor(committed_repo.root, limits=ToolLimits(max_calls=3)) as ex:
        assert ex.execute_batch([call("workspace_read", path="calc.py")]).results[0].ok
        calls = [
            call("workspace_write", **WRITE),
            call("workspace_read", path="a.txt"),
            call("workspace_read", path="a.txt"),
        ]
        before = committed_repo.tree_state()
        batch = ex.execute_batch(calls)
        assert batch.rejected is not None and "remaining budget of 2" in batch.rejected
        assert committed_repo.tree_state() == before
