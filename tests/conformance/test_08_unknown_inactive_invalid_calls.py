"""Conformance 8: calls to unknown tools, to tools that are not active (lazy, or excluded
by a read-only mode), and with arguments that fail the schema (missing or extra keys, bad
types, non-JSON text) are structured failures: nothing is dispatched, no effect is
reported, and the workspace is untouched."""

from __future__ import annotations

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import call, executor
from tidegate.tools.calls import ToolCall
from tidegate.tools.policy import TaskMode


def test_unknown_tool(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        result = ex.execute(call("shell_exec", command="rm -rf ."))
    assert result.status == "error" and result.tool is None
    assert result.error is not None and result.error.code == "unknown_tool"
    assert result.effects.present() == []


def test_inactive_lazy_tool_until_catalog_search(committed_repo: Repo) -> None:
    with executor(committed_repo.root, doubles=True, network="allowed") as ex:
        before = ex.registry.active_hash
        result = ex.execute(call("research_search", query="git diff"))
        assert result.error is not None and result.error.code == "inactive_tool"
        assert "catalog_search" in result.error.message
        found = ex.execute(call("catalog_search", query="research"))
        assert found.ok and found.output is not None
        assert "research_search" in found.output["activated"]
        assert found.effects.state_version == 1
        assert ex.registry.active_hash != before
        assert found.output["registry_hash"] == ex.registry.active_hash
        now = ex.execute(call("research_search", query="git diff"))
        assert now.ok and now.label is not None and now.label.startswith("double:")


def test_absent_tools_cannot_be_activated(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:  # no doubles: research has no adapter
        found = ex.execute(call("catalog_search", query="research"))
        assert found.ok and found.output is not None
        assert found.output["activated"] == []
        assert all(not m["available"] for m in found.output["matches"])
        result = ex.execute(call("research_fetch", url="https://example.org/"))
    assert result.error is not None and result.error.code == "inactive_tool"
    assert "not available" in result.error.message


def test_writer_in_read_only_mode(committed_repo: Repo) -> None:
    with executor(committed_repo.root, mode=TaskMode.REVIEW, activate_all=True) as ex:
        assert "workspace_write" not in {d.name for d in ex.definitions()}
        result = ex.execute(call("workspace_write", path="x", content="", expect="must_not_exist"))
    assert result.error is not None and result.error.code == "inactive_tool"
    assert "read-only" in result.error.message
    assert not (committed_repo.root / "x").exists()


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "x.txt", "content": "y"},  # missing expect
        {"path": "x.txt", "content": "y", "expect": "must_not_exist", "mode": "0777"},  # extra
        {"path": "x.txt", "content": 5, "expect": "must_not_exist"},  # wrong type
        {"path": "x.txt", "content": "y", "expect": "yes"},  # bad precondition
        '{"path": "x.txt", "content": ',  # not JSON
        "[1, 2]",  # not an object
    ],
)
def test_schema_invalid_arguments(committed_repo: Repo, arguments: object) -> None:
    before = committed_repo.tree_state()
    with executor(committed_repo.root) as ex:
        result = ex.execute(
            ToolCall(call_id="bad", name="workspace_write", arguments=arguments)  # type: ignore[arg-type]
        )
    assert result.status == "error" and result.tool == "workspace.write"
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.effects.present() == []
    assert committed_repo.tree_state() == before
