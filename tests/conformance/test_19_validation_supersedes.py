"""Matrix 19: a passing validation supersedes older failed evidence with the same ID.

In a real repository a real validation fails, the agent fixes the file, and the same
validation (same stable ID) passes: the ledger keeps only the newest result and completion
evidence is sufficient. A pass under a *different* ID does not clear the failure.
"""

from __future__ import annotations

from tests.conftest import Repo
from tests.unit.agent.host import content_hash, diff_hash, run_validation
from tidegate.agent.evidence import EvidenceLedger, ValidationStatus

CHECK = "import calc; assert calc.add(2, 3) == 5"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"


def fix(repo: Repo, ledger: EvidenceLedger, sequence: int) -> None:
    target = repo.root / "calc.py"
    before = content_hash(target)
    repo.write("calc.py", FIXED)
    ledger.record_write(sequence, "calc.py", before, content_hash(target))


def test_pass_supersedes_the_failure_with_the_same_id(committed_repo: Repo) -> None:
    ledger = EvidenceLedger()
    assert not run_validation(committed_repo.root, CHECK)
    ledger.record_validation("calc-unit", passed=False, sequence=1)
    fix(committed_repo, ledger, sequence=2)
    ledger.record_diff(diff_hash(committed_repo.root), sequence=3)
    assert not ledger.is_complete()  # the failure still stands

    assert run_validation(committed_repo.root, CHECK)
    ledger.record_validation("calc-unit", passed=True, sequence=4)
    held = ledger.validation("calc-unit")
    assert held is not None and held.status is ValidationStatus.PASSED
    assert ledger.completion_gaps() == []


def test_a_pass_under_another_id_does_not_clear_the_failure(committed_repo: Repo) -> None:
    ledger = EvidenceLedger()
    assert not run_validation(committed_repo.root, CHECK)
    ledger.record_validation("calc-unit", passed=False, sequence=1)
    fix(committed_repo, ledger, sequence=2)
    assert run_validation(committed_repo.root, "import calc")
    ledger.record_validation("calc-import", passed=True, sequence=3)
    ledger.record_diff(diff_hash(committed_repo.root), sequence=4)
    assert ledger.completion_gaps() == ["newest result is a failure for validation calc-unit"]
