"""Numbers that are not ASCII digits, in every place tidegate reads a number from text a
person, a file or a model wrote: ``²`` (``str.isdigit`` says yes, ``int`` then raises),
``٣`` (Arabic-Indic three: ``isdigit``, ``\\d`` and ``int`` all accept it) and more digits
than ``int`` converts. Each is refused in one line (``tidegate.text.numbers``), nothing is
written, and no spelling of a number is read as another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adversarial.test_operator_refusals import LH, SP, one_line, snapshot
from tests.conftest import Repo, tidegate_cli
from tests.e2e._operator import EDIT, op

BAD = ["²", "٣", "1" * 5000]
DECIMAL = BAD[1:]  # what ``\d`` matches: a pattern's number (``²`` makes the text not one)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.mark.parametrize("number", BAD)
def test_a_terminal_timeout_must_be_ascii_seconds(
    capsys: pytest.CaptureFixture[str], root: Path, number: str
) -> None:
    objective = f"timeout: {number}\ncommand: echo hi\n"
    res = op(capsys, "engineer", "terminal", SP, objective, str(root))
    assert res.code == 2
    one_line(res.err)
    assert "timeout takes whole seconds" in res.err
    assert not root.exists()


@pytest.mark.parametrize("number", BAD)
@pytest.mark.parametrize(
    ("command", "objective"),
    [
        ("meeting", "goal: Ship it | priority={}"),
        ("goal-curation", "goal: Ship it | priority={}"),
        ("improvement-curation", "approve: p-1 | priority={}"),
    ],
)
def test_a_priority_must_be_ascii(
    capsys: pytest.CaptureFixture[str], root: Path, command: str, objective: str, number: str
) -> None:
    res = op(capsys, command, "run", LH, SP, objective.format(number), str(root))
    assert res.code == 2, res.out
    one_line(res.err)
    assert "priority" in res.err
    assert not root.exists()


@pytest.fixture
def task(tmp_path: Path) -> Path:
    task = tmp_path / "tasks" / "calc"
    res = tidegate_cli(
        "ledger", "init", str(task), "--route", "medium", "--brief", "Fix calc", "--item", "Fix"
    )
    assert res.returncode == 0, res.stderr
    return task


def _ledger_status_refuses(task: Path, *words: str) -> None:
    before = snapshot(task)
    res = tidegate_cli("ledger", "status", str(task))
    assert res.returncode == 2, res.stdout
    one_line(res.stderr)
    for word in words:
        assert word in res.stderr
    assert snapshot(task) == before


@pytest.mark.parametrize("number", BAD)
def test_a_ledger_retries_cell_must_be_ascii(task: Path, number: str) -> None:
    ledger = task / "ledger.md"
    ledger.write_text(ledger.read_text().replace("| 0 |", f"| {number} |"))
    _ledger_status_refuses(task, "ledger.md", "retries of T1 must be a whole number")


@pytest.mark.parametrize("number", BAD)
def test_a_ledger_evidence_attempt_must_be_ascii(task: Path, number: str) -> None:
    notes = task / "implementation-notes.md"
    row = f"| E-1 | T1 | {number} | command | pass | pytest (exit 0) | 0123abcd |\n"
    notes.write_text(notes.read_text().replace("| --- | --- | --- | --- | --- | --- | --- |\n",
                                               "| --- | --- | --- | --- | --- | --- | --- |\n" + row))  # fmt: skip
    _ledger_status_refuses(task, "attempt must be a number from 1")


@pytest.mark.parametrize("number", DECIMAL)
def test_a_ledger_log_entry_number_must_be_ascii(task: Path, number: str) -> None:
    notes = task / "implementation-notes.md"
    entry = f"- D-{number} route_change from=small to=medium reason=x\n"
    notes.write_text(notes.read_text().replace("## Decisions\n", "## Decisions\n\n" + entry))
    _ledger_status_refuses(task, f"D-{number[:10]}", "must be a whole number")


def test_an_evidence_id_must_be_ascii(task: Path) -> None:
    """``E-1٣`` was read as an evidence id (``\\d`` matches ``٣``)."""
    checkpoint = task / "checkpoint.md"
    text = checkpoint.read_text()
    checkpoint.write_text(text.replace("- Latest Evidence: none", "- Latest Evidence: E-1٣"))
    _ledger_status_refuses(task, "checkpoint.md", "is not E-N")


@pytest.mark.parametrize("number", DECIMAL)
def test_an_evidence_exit_code_must_be_ascii(task: Path, number: str) -> None:
    assert tidegate_cli("ledger", "claim", str(task), "T1", "--as", "me").returncode == 0
    before = snapshot(task)
    res = tidegate_cli(
        "ledger", "record", str(task), "T1", "--evidence", f"command: pytest (exit {number})"
    )
    assert res.returncode == 2, res.stdout
    one_line(res.stderr)
    assert "exit code must be a whole number" in res.stderr
    assert snapshot(task) == before


@pytest.mark.parametrize("number", DECIMAL)
def test_handoff_metadata_counts_must_be_ascii(
    capsys: pytest.CaptureFixture[str], committed_repo: Repo, root: Path, number: str
) -> None:
    res = op(capsys, "engineer", "run", SP, str(committed_repo.root), EDIT, str(root))
    assert res.code == 0, res.err
    own = root / "latest_engineer_handoff.json"
    body = json.loads(own.read_text())
    body["objective_metadata"] = f"objective-metadata(chars={number}, words=1, lines=1)"
    own.write_text(json.dumps(body))
    before = snapshot(root)
    res = op(capsys, "engineer", "read", SP, str(root))
    assert res.code == 1
    one_line(res.err)
    assert "objective metadata is malformed" in res.err
    assert snapshot(root) == before


def test_a_runs_limit_must_be_ascii_on_the_fast_path_too(tmp_path: Path) -> None:
    """The fast path read ``٣`` as 3 where the full command refuses it."""
    res = tidegate_cli("runs", "--limit", "٣", "--state-root", str(tmp_path / "state"))
    assert res.returncode == 2, res.stdout
    one_line(res.stderr)
    assert "--limit" in res.stderr


@pytest.mark.parametrize("schema", ["tidegate.operator.goals/²", "tidegate.operator.goals/٣"])
def test_an_operator_record_schema_version_must_be_ascii(tmp_path: Path, schema: str) -> None:
    from tidegate.operator.records import RecordError, load_document

    path = tmp_path / "goals.json"
    path.write_text(json.dumps({"schema": schema, "goals": []}))
    with pytest.raises(RecordError, match="is not a goals document"):
        load_document(path, "goals")


def test_an_operator_record_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    from tidegate.operator.records import RecordError, load_document

    path = tmp_path / "goals.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RecordError):
        load_document(path, "goals")


@pytest.mark.parametrize("name", ["tidegate-sandbox-²-1-x", "tidegate-sandbox-1-٣-x"])
def test_a_planted_sandbox_name_with_unicode_digits_owns_nothing(name: str) -> None:
    from tidegate.disk.owners import owner_in_name

    assert owner_in_name(name, "tidegate-sandbox-") is None
