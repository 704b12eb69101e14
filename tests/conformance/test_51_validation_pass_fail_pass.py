"""Matrix 51: pass -> fail -> pass selects the newest status; a later identical pass can
certify a same-call artifact cleanup without weakening mutation-after-validation rejection.

All validations are real subprocesses in a real repository. The validating call of step 3
also deletes a stale artifact (a host-attested write at the call's own sequence), so its
pass cannot certify that write; the next identical pass does. A write after that pass voids
completion again.
"""

from __future__ import annotations

from tests.conftest import Repo
from tests.unit.agent.host import content_hash, diff_hash, run_validation
from tidegate.agent.evidence import EvidenceLedger, ValidationStatus

CHECK = "import calc; assert calc.add(2, 3) == 5"
GOOD = "def add(a, b):\n    return a + b\n"
BAD = "def add(a, b):\n    return a - b\n"
CLEANUP = "import pathlib; pathlib.Path('build/stale.txt').unlink(); " + CHECK


def write(repo: Repo, ledger: EvidenceLedger, sequence: int, path: str, text: str) -> None:
    before = content_hash(repo.root / path)
    repo.write(path, text)
    ledger.record_write(sequence, path, before, content_hash(repo.root / path))


def test_pass_fail_pass_and_same_call_cleanup(committed_repo: Repo) -> None:
    repo, ledger = committed_repo, EvidenceLedger()
    write(repo, ledger, 1, "calc.py", GOOD)
    assert run_validation(repo.root, CHECK)
    ledger.record_validation("calc-unit", True, 2)
    write(repo, ledger, 3, "calc.py", BAD)
    assert not run_validation(repo.root, CHECK)
    ledger.record_validation("calc-unit", False, 4)
    write(repo, ledger, 5, "calc.py", GOOD)
    repo.write("build/stale.txt", "left over\n")  # ignored by git: not part of the diff
    stale_hash = content_hash(repo.root / "build/stale.txt")

    # the validating call at sequence 6 also removes the stale artifact
    assert run_validation(repo.root, CLEANUP)
    assert not (repo.root / "build/stale.txt").exists()
    ledger.record_validation("calc-unit", True, 6)
    ledger.record_write(6, "build/stale.txt", stale_hash, None)
    ledger.record_diff(diff_hash(repo.root), 7)
    held = ledger.validation("calc-unit")
    assert held is not None and held.status is ValidationStatus.PASSED  # newest of p/f/p
    assert ledger.completion_gaps() == ["no passing validation after the last write (sequence 6)"]

    # a later identical pass certifies the cleanup
    assert run_validation(repo.root, CHECK)
    assert ledger.record_validation("calc-unit", True, 8).advanced
    assert ledger.is_complete()

    # a mutation after validation is still rejected
    write(repo, ledger, 9, "README.md", "# calc\n\nchanged\n")
    assert not ledger.is_complete()
    assert "no passing validation after the last write (sequence 9)" in ledger.completion_gaps()
