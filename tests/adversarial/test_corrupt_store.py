"""Someone edits the run store by hand (or the disk damages it): a report that is not JSON,
a status tidegate never writes, a trace row, an attempt record or a tool call's effects
that do not parse, a checkpoint holding bytes instead of text. SQLite keeps any value in
any column, so every reader must expect them.

``tidegate runs`` keeps listing every run and shows the bad one as ``corrupt`` with what
is wrong; ``tidegate read`` and ``tidegate resume`` print one line naming the run and the
corrupt record and exit non-zero. Never a traceback, never "still running", never a
PERSISTENCE_ERROR (nothing failed to persist), and the workspace is left alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Repo, tidegate_cli
from tests.integration._store import FIX, cli, state_root


def _tree(repo: Repo) -> dict[str, bytes]:
    files = {
        str(p.relative_to(repo.root)): p.read_bytes()
        for p in sorted(repo.root.rglob("*"))
        if p.is_file() and p.relative_to(repo.root).parts[0] != ".git"
    }
    files[".git/index"] = (repo.root / ".git" / "index").read_bytes()
    return files


def _edit(sql: str, *params: object) -> None:
    path = next(state_root().glob("*/runs.sqlite3"))
    with sqlite3.connect(path) as db:
        assert db.execute(sql, params).rowcount >= 1, sql
    db.close()


def _one_line(err: str, *words: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "PERSISTENCE_ERROR" not in err and "still running" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def runs(committed_repo: Repo) -> tuple[Repo, str, str]:
    """A finished run and, after it, an interrupted one (killed as VERIFY starts)."""
    repo = committed_repo
    code, done, err = cli("run", "--objective", FIX, "--verify", "true", cwd=repo.root)
    assert code == 0 and isinstance(done, dict), err
    repo.git("checkout", "--", "calc.py")
    killed = {"TIDEGATE_FAULT": "phase.VERIFY"}
    code, _, _ = cli("run", "--objective", FIX, "--verify", "true", cwd=repo.root, env=killed)
    assert code == -9
    code, listed, err = cli("runs", cwd=repo.root)
    assert isinstance(listed, list) and [r["status"] for r in listed] == [
        "interrupted",
        "succeeded",
    ]
    return repo, done["run_id"], listed[0]["run_id"]


def _listed_as_corrupt(repo: Repo, run_id: str, words: str) -> None:
    code, listed, err = cli("runs", cwd=repo.root)
    assert code == 0 and isinstance(listed, list), err
    (row,) = [r for r in listed if r["run_id"] == run_id]
    assert row["status"] == "corrupt" and words in row["problem"], row
    assert len(listed) == 2  # the other run is still listed
    human = tidegate_cli("runs", cwd=repo.root)
    assert human.returncode == 0 and "Traceback" not in human.stderr
    assert any(
        run_id in line and "corrupt" in line and words in line for line in human.stdout.splitlines()
    )


def test_a_report_that_is_not_json(runs: tuple[Repo, str, str]) -> None:
    repo, done, _ = runs
    _edit("UPDATE runs SET report_json = '{\"status\": ' WHERE run_id = ?", done)
    _listed_as_corrupt(repo, done, "stored report is not a valid report")
    for args in (("read", done), ("read", done, "--json", "--detail")):
        proc = tidegate_cli(*args, cwd=repo.root)
        assert proc.returncode == 1 and proc.stdout == ""
        _one_line(proc.stderr, done, "corrupt", "stored report")


def test_a_report_with_a_bogus_field(runs: tuple[Repo, str, str]) -> None:
    repo, done, _ = runs
    _edit(
        "UPDATE runs SET report_json = json_set(report_json, '$.status', 'exploded') "
        "WHERE run_id = ?",
        done,
    )
    proc = tidegate_cli("read", done, cwd=repo.root)
    assert proc.returncode == 1
    _one_line(proc.stderr, done, "stored report", "status")


@pytest.mark.parametrize("status", ["exploded", "", "RUNNING", "running; DROP TABLE runs"])
def test_a_status_tidegate_never_writes(runs: tuple[Repo, str, str], status: str) -> None:
    repo, _, interrupted = runs
    _edit("UPDATE runs SET status = ? WHERE run_id = ?", status, interrupted)
    _listed_as_corrupt(repo, interrupted, "stored status")
    before = _tree(repo)
    for verb in ("read", "resume"):
        proc = tidegate_cli(verb, interrupted, cwd=repo.root)
        assert proc.returncode == 1, (verb, proc.stderr)
        _one_line(proc.stderr, interrupted, repr(status))
    assert _tree(repo) == before


def test_a_row_with_a_number_where_text_belongs(runs: tuple[Repo, str, str]) -> None:
    repo, _, interrupted = runs
    _edit("UPDATE runs SET attempts = 'many' WHERE run_id = ?", interrupted)
    _listed_as_corrupt(repo, interrupted, "malformed field")
    proc = tidegate_cli("resume", interrupted, cwd=repo.root)
    assert proc.returncode == 1
    _one_line(proc.stderr, interrupted, "malformed field")


TRACE_EDITS: dict[str, tuple[str, str]] = {
    "payload not JSON": (
        "UPDATE trace SET payload = '{not json' WHERE run_id = ? AND seq = 3",
        "trace event 3 has a payload",
    ),
    "meta an array": (
        "UPDATE trace SET meta = '[1, 2]' WHERE run_id = ? AND seq = 2",
        "trace event 2 has a meta",
    ),
    "payload a blob": (
        "UPDATE trace SET payload = x'ff00' WHERE run_id = ? AND seq = 1",
        "trace event 1 has a payload",
    ),
}


@pytest.mark.parametrize("edit", sorted(TRACE_EDITS))
def test_a_corrupt_trace_row(runs: tuple[Repo, str, str], edit: str) -> None:
    repo, _, interrupted = runs
    sql, words = TRACE_EDITS[edit]
    _edit(sql, interrupted)
    before = _tree(repo)
    for verb in ("read", "resume"):
        proc = tidegate_cli(verb, interrupted, cwd=repo.root)
        assert proc.returncode == 1, (verb, proc.stderr)
        _one_line(proc.stderr, interrupted, words)
    assert _tree(repo) == before


RECORD_EDITS: dict[str, tuple[str, str]] = {
    "attempt record": ("UPDATE attempts SET event_json = '{' WHERE run_id = ?", "attempt 1"),
    "tool call effects": (
        "UPDATE tool_calls SET effects = 'nope' WHERE run_id = ?",
        "effects of tool call",
    ),
}


@pytest.mark.parametrize("edit", sorted(RECORD_EDITS))
def test_a_corrupt_projection(runs: tuple[Repo, str, str], edit: str) -> None:
    repo, done, _ = runs
    sql, words = RECORD_EDITS[edit]
    if edit == "tool call effects":
        # A tools run has tool-call rows; record one to corrupt.
        call = tidegate_cli(
            "tools", "call", "workspace.read", "--args", '{"path": "calc.py"}', cwd=repo.root
        )
        assert call.returncode == 0, call.stderr
        done = cli("runs", cwd=repo.root)[1][0]["run_id"]  # type: ignore[index]
    _edit(sql, done)
    proc = tidegate_cli("read", done, "--json", "--detail", cwd=repo.root)
    assert proc.returncode == 1 and proc.stdout == ""
    _one_line(proc.stderr, done, words, "JSON")


@pytest.mark.parametrize("value", ["[1, 2]", '"succeeded"', "42", "null"])
def test_an_attempt_record_that_is_json_but_not_an_object(
    runs: tuple[Repo, str, str], value: str
) -> None:
    repo, done, _ = runs
    _edit("UPDATE attempts SET event_json = ? WHERE run_id = ?", value, done)
    proc = tidegate_cli("read", done, "--json", "--detail", cwd=repo.root)
    assert proc.returncode == 1 and proc.stdout == ""
    _one_line(proc.stderr, done, "attempt 1", "not an object")


@pytest.mark.parametrize("value", ["[]", '"succeeded"', "null", "7"])
def test_a_report_that_is_json_but_not_an_object(runs: tuple[Repo, str, str], value: str) -> None:
    """The listing reads no report model (stdlib JSON only), and still names it."""
    repo, done, _ = runs
    _edit("UPDATE runs SET report_json = ? WHERE run_id = ?", value, done)
    _listed_as_corrupt(repo, done, "not a JSON object")
    proc = tidegate_cli("read", done, cwd=repo.root)
    assert proc.returncode == 1 and proc.stdout == ""
    _one_line(proc.stderr, done, "stored report")


CHECKPOINT_EDITS: dict[str, Callable[[str], None]] = {
    "document not JSON": lambda run: _edit(
        "UPDATE checkpoints SET document = '{\"format\":' WHERE run_id = ? AND seq = 2", run
    ),
    "document a blob": lambda run: _edit(
        "UPDATE checkpoints SET document = x'00ff' WHERE run_id = ? AND seq = 2", run
    ),
    "seq as text": lambda run: _edit(
        "UPDATE checkpoints SET seq = 'two' WHERE run_id = ? AND seq = 2", run
    ),
    "head count as text": lambda run: _edit(
        "UPDATE checkpoint_heads SET count = 'all' WHERE run_id = ?", run
    ),
}


@pytest.mark.parametrize("edit", sorted(CHECKPOINT_EDITS))
def test_a_corrupt_checkpoint_is_refused_in_one_line(
    runs: tuple[Repo, str, str], edit: str
) -> None:
    repo, _, interrupted = runs
    CHECKPOINT_EDITS[edit](interrupted)
    before = _tree(repo)
    proc = tidegate_cli("resume", interrupted, cwd=repo.root)
    assert proc.returncode in (1, 2), proc.stderr
    _one_line(proc.stderr, interrupted, "checkpoint")
    read = tidegate_cli("read", interrupted, "--json", "--detail", cwd=repo.root)
    assert "Traceback" not in read.stderr
    assert read.returncode in (0, 1)
    if read.returncode == 0:
        assert '"resume": null' in read.stdout and "refused" in read.stdout
    else:
        _one_line(read.stderr, interrupted, "checkpoint")
    assert _tree(repo) == before


def test_the_untouched_store_reads_and_resumes(runs: tuple[Repo, str, str], tmp_path: Path) -> None:
    """The control: without an edit every command works on the same runs."""
    repo, done, interrupted = runs
    assert tidegate_cli("read", done, cwd=repo.root).returncode == 0
    assert tidegate_cli("read", interrupted, cwd=repo.root).returncode == 0
    code, report, err = cli("resume", interrupted, cwd=repo.root)
    assert code == 0 and isinstance(report, dict) and report["status"] == "succeeded", err
