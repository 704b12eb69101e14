"""An agent (or a person copying its chat) records its own account as evidence.

The attacker phrases "the agent says it is done" every way but the one the old rule knew:
several words, the speaker in the middle, inside a ``command:`` line with an exit code, or
as the claim an artifact is said to support. None of it may become evidence, while real
evidence that merely mentions a model (a test file named after one) still counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tidegate_cli
from tidegate import ledger
from tidegate.ledger.errors import EvidenceRejected
from tidegate.ledger.evidence import parse_ref
from tidegate.ledger.model import EvidenceKind

HEARSAY = [
    "the agent reported that it is done",
    "model claims all tests pass",
    "According to the assistant, everything passes now",
    "I was told by the model that the bug is fixed",
    "Claude: done",
    "the AI assistant confirmed the migration works",
    "GPT-4 said the tests are green",
    "the agent's final message says all checks passed",
    "command: agent says done (exit 0)",
    "command: the model reported that pytest passes (exit 0)",
    "artifact: notes.txt -- the agent says this proves the fix",
    "file: calc.py -- according to the model add() is fixed",
]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "notes.txt").write_text("notes\n")
    (tmp_path / "test_model.py").write_text("def test_model():\n    pass\n")
    return tmp_path


@pytest.mark.parametrize("ref", HEARSAY)
def test_a_quoted_agent_claim_is_never_evidence(base: Path, ref: str) -> None:
    with pytest.raises(EvidenceRejected, match="is a claim, not evidence"):
        parse_ref(ref, base, set())


@pytest.mark.parametrize(
    ("ref", "kind"),
    [
        ("command: pytest -q test_model.py (exit 0)", EvidenceKind.COMMAND),
        ("command: python -m pytest -k model (exit 0)", EvidenceKind.COMMAND),
        ("file: test_model.py -- test_model covers the model loader", EvidenceKind.FILE),
        ("artifact: notes.txt -- the release notes name the new flag", EvidenceKind.ARTIFACT),
    ],
)
def test_evidence_that_mentions_a_model_still_counts(
    base: Path, ref: str, kind: EvidenceKind
) -> None:
    assert parse_ref(ref, base, set()).kind is kind


def test_cli_refuses_hearsay_and_leaves_the_task_alone(tmp_path: Path) -> None:
    task = tmp_path / "task"
    ledger.init(task, ledger.Route.SMALL, "Fix add", [])
    ledger.claim(task, "T1", "ana")
    before = {p.name: p.read_bytes() for p in task.glob("*.md")}
    res = tidegate_cli(
        "ledger",
        "record",
        str(task),
        "T1",
        "--evidence",
        "command: the agent reported that it is done (exit 0)",
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.count("\n") == 1 and "is a claim, not evidence" in res.stderr
    assert {p.name: p.read_bytes() for p in task.glob("*.md")} == before
