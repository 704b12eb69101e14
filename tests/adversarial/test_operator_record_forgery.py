"""Attacks on the operator's durable records between commands, beyond damage: a record
file that is valid JSON but not one tidegate writes -- non-finite numbers, a document of
another kind put in the place of this one, a record list holding something other than
records, a file grown past the size bound -- and an objective file that is not a plain
UTF-8 file. Each read fails in one line naming the file, and nothing is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.e2e._operator import EDIT, op
from tidegate.operator.records import MAX_BYTES

SP = "single-process"


@pytest.fixture
def recorded(capsys: pytest.CaptureFixture[str], committed_repo: Repo, tmp_path: Path) -> Path:
    root = tmp_path / "state"
    res = op(capsys, "engineer", "run", SP, str(committed_repo.root), EDIT, str(root))
    assert res.code == 0, res.err
    return root


def one_line(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("tidegate: error: "), err
    assert "Traceback" not in err


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}


def _swap_kind(root: Path) -> str:
    """The evidence document, put where the memory document belongs."""
    (root / "memory_records.json").write_bytes((root / "evidence_records.json").read_bytes())
    return "memory_records.json"


def _not_a_record(root: Path) -> str:
    doc = json.loads((root / "evidence_records.json").read_text())
    doc["records"].append("an injected line, not a record")
    (root / "evidence_records.json").write_text(json.dumps(doc))
    return "evidence_records.json"


def _non_finite(root: Path) -> str:
    text = (root / "evidence_records.json").read_text()
    text = text.replace('"created_at_unix_ms": ', '"created_at_unix_ms": NaN, "x": ', 1)
    (root / "evidence_records.json").write_text(text)
    return "evidence_records.json"


def _too_large(root: Path) -> str:
    with (root / "evidence_records.json").open("r+b") as handle:
        handle.truncate(MAX_BYTES + 1)  # sparse: the size is what is checked first
    return "evidence_records.json"


FORGERIES = {
    "another kind's document": (_swap_kind, "is not a memory document"),
    "a record that is not an object": (_not_a_record, "must be a list of objects"),
    "a non-finite number": (_non_finite, "non-finite number NaN"),
    "larger than the bound": (_too_large, f"larger than {MAX_BYTES} bytes"),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_record_file_fails_the_read_in_one_line(
    capsys: pytest.CaptureFixture[str], recorded: Path, forgery: str
) -> None:
    forge, why = FORGERIES[forgery]
    name = forge(recorded)
    before = files(recorded)
    res = op(capsys, "engineer", "read", SP, str(recorded))
    assert res.code == 1, res.out
    one_line(res.err)
    assert name in res.err and why in res.err, res.err
    assert files(recorded) == before


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _latin1(path: Path) -> None:
    path.write_bytes(b"command: echo caf\xe9\n")


def _huge(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(MAX_BYTES + 1)


OBJECTIVE_FILES = {
    "a fifo": (_fifo, "not a regular file"),
    "a directory": (_directory, "not a regular file"),
    "not UTF-8": (_latin1, "not UTF-8 text"),
    "larger than the bound": (_huge, f"larger than {MAX_BYTES} bytes"),
}


@pytest.mark.parametrize("shape", list(OBJECTIVE_FILES))
def test_an_objective_file_that_is_not_plain_text_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, shape: str
) -> None:
    make, why = OBJECTIVE_FILES[shape]
    objective = tmp_path / "objective"
    make(objective)
    root = tmp_path / "state"
    res = op(capsys, "engineer", "terminal-file", SP, str(objective), str(root))
    assert res.code == 2, res.err
    one_line(res.err)
    assert why in res.err, res.err
    assert not root.exists() or not any(root.iterdir())
