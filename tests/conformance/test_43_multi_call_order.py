"""Conformance 43: a round of several calls runs in the order the model emitted them, and
each result carries its own call ID and the name it was called by - also when the same
tool is called several times in one round and when model names and canonical IDs mix."""

from __future__ import annotations

from tests.conftest import Repo
from tests.integration.tools.support import call, executor


def test_order_and_correlation(committed_repo: Repo) -> None:
    committed_repo.write("b.txt", "bee\n")
    calls = [
        call("workspace_read", "r-1", path="calc.py"),
        call("workspace_write", "w-1", path="a.txt", content="one\n", expect="must_not_exist"),
        call("workspace.read", "r-2", path="a.txt"),
        call("workspace_read", "r-3", path="b.txt"),
        call("workspace_read", "r-4", path="missing.txt"),
        call("workspace_read", "r-5", path="README.md"),
    ]
    with executor(committed_repo.root) as ex:
        batch = ex.execute_batch(calls)
    assert batch.rejected is None and batch.stopped is None
    assert [r.call_id for r in batch.results] == ["r-1", "w-1", "r-2", "r-3", "r-4", "r-5"]
    assert [r.name for r in batch.results] == [c.name for c in calls]
    assert {r.tool for r in batch.results} == {"workspace.read", "workspace.write"}
    contents = {r.call_id: (r.output or {}).get("content") for r in batch.results}
    # r-2 ran after w-1, so it sees the file w-1 created
    assert contents["r-2"] == "one\n" and contents["r-3"] == "bee\n"
    assert contents["r-5"] == "# calc\n"
    assert batch.results[4].error is not None and batch.results[4].error.code == "not_found"
    assert [r.effects.state_version for r in batch.results] == [None, 1, None, None, None, None]
