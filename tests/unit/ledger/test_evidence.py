"""Which references are evidence, which are refused, and what a fingerprint covers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidegate.ledger.errors import EvidenceRejected
from tidegate.ledger.evidence import attested_command, parse_ref
from tidegate.ledger.model import EvidenceKind


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "report.xml").write_text("<testsuite failures='0'/>\n")
    (tmp_path / "shot.png").write_bytes(b"\x89PNG\r\n")
    return tmp_path


@pytest.mark.parametrize(
    ("ref", "kind", "passed"),
    [
        ("command: pytest -q (exit 0)", EvidenceKind.COMMAND, True),
        ("command: make test (exit code 2)", EvidenceKind.COMMAND, False),
        ("artifact: report.xml", EvidenceKind.ARTIFACT, True),
        ("artifact: shot.png -- the dialog shows the new label", EvidenceKind.ARTIFACT, True),
        ("ci: https://ci.example.com/runs/42", EvidenceKind.CI, True),
        ("https://github.com/o/r/actions/runs/1", EvidenceKind.CI, True),
        ("review: approved E-1 https://ci.example.com/runs/42", EvidenceKind.REVIEW, True),
        ("review: changes_requested calc.py", EvidenceKind.REVIEW, False),
        ("file: calc.py -- add() returns the sum", EvidenceKind.FILE, True),
    ],
)
def test_accepted(base: Path, ref: str, kind: EvidenceKind, passed: bool) -> None:
    draft = parse_ref(ref, base, {"E-1"})
    assert (draft.kind, draft.passed) == (kind, passed)
    assert len(draft.fingerprint) == 16


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("agent says done", "is a claim, not evidence"),
        ("The assistant reported that all tests pass", "is a claim, not evidence"),
        ("done", "is a claim, not evidence"),
        ("LGTM", "is a claim, not evidence"),
        ("as discussed in chat", "chat-only claim"),
        ("pytest -q", "names a command but not its result"),
        ("command: pytest -q", "unrun command name"),
        ("Refactored the module and everything is fine now", "summary with no path"),
        ("artifact: shot.png", "screenshot without a stated claim"),
        ("artifact: missing.txt", "no such file"),
        ("file: calc.py", "needs the claim"),
        ("file: calc.py -- done", "needs the claim"),
        ("ci: not a url", "http(s) URL"),
        ("review: approved", "needs normalised evidence refs"),
        ("review: approved E-7", "not: E-7"),
        ("review: great", "starts with its verdict"),
        ("run: 20250101-000000-abcdef succeeded", "recorded by `tidegate ledger run`"),
        ("   ", "empty"),
    ],
)
def test_rejected(base: Path, ref: str, why: str) -> None:
    with pytest.raises(EvidenceRejected) as rejected:
        parse_ref(ref, base, {"E-1"})
    assert why in str(rejected.value)


def test_file_fingerprint_changes_with_the_file(base: Path) -> None:
    first = parse_ref("file: calc.py -- add() returns the sum", base, set())
    assert parse_ref("file: calc.py -- add() returns the sum", base, set()) == first
    (base / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    assert parse_ref("file: calc.py -- add() returns the sum", base, set()).fingerprint != (
        first.fingerprint
    )


def test_attested_command_ignores_durations_but_not_results() -> None:
    one = attested_command("pytest", 1, b"1 failed in 0.31s at 0x7f3a2c\n", "")
    two = attested_command("pytest", 1, b"1 failed in 0.52s at 0x7f11aa\n", "")
    other = attested_command("pytest", 1, b"2 failed in 0.52s\n", "")
    assert one.fingerprint == two.fingerprint
    assert other.fingerprint != one.fingerprint
    assert "[attested, output sha256" in one.ref
    assert not one.passed and attested_command("pytest", 0, b"ok", "ok").passed


def test_attested_output_tail_is_fenced_safely() -> None:
    draft = attested_command("cat notes", 0, b"```\nx\n", "```\nx\n")
    fences = [line for line in draft.detail if line.startswith("````")]
    assert fences == ["````text", "````"]
