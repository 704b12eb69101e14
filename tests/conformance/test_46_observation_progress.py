"""Matrix 46: repeated observations cannot manufacture progress.

Identical validation and diff observations keep the newest causal sequence, but their
semantic projection (status, diff digest, covered mutations) only moves when the status
changes or a new mutation is covered. A scripted agent that re-runs the same real
validation and re-reads the same real diff turn after turn therefore makes no progress,
and the no-progress guard pauses it; a real edit followed by validation is progress.
"""

from __future__ import annotations

from tests.conftest import Repo
from tests.unit.agent.host import content_hash, diff_hash, run_validation
from tidegate.agent.evidence import EvidenceLedger
from tidegate.agent.guards import NO_PROGRESS, Allow, GuardLimits, LoopGuards, Pause

CHECK = "import calc; assert calc.mul(2, 3) == 6"


def test_identical_observations_keep_the_newest_sequence_but_not_progress(
    committed_repo: Repo,
) -> None:
    root = committed_repo.root
    ledger = EvidenceLedger()
    guards = LoopGuards(GuardLimits(turns_without_progress=4))
    sequence = 0
    decisions = []
    for _turn in range(10):
        sequence += 1
        ledger.record_validation("calc-mul", run_validation(root, CHECK), sequence)
        sequence += 1
        ledger.record_diff(diff_hash(root), sequence)
        decision = guards.record_turn(ledger.progress_version)
        decisions.append(decision)
        if not isinstance(decision, Allow):
            break
    held = ledger.validation("calc-mul")
    assert held is not None and held.sequence == sequence - 1  # newest sequence retained
    assert ledger.state.diffs["workspace"].sequence == sequence
    assert ledger.progress_version == 2  # the first validation and the first diff only
    assert len(decisions) == 5
    assert isinstance(decisions[-1], Pause) and decisions[-1].guard == NO_PROGRESS


def test_a_new_mutation_covered_by_the_same_result_is_progress(committed_repo: Repo) -> None:
    root = committed_repo.root
    ledger = EvidenceLedger()
    ledger.record_validation("calc-mul", run_validation(root, CHECK), 1)
    projection = ledger.semantic_projection()
    before = content_hash(root / "README.md")
    committed_repo.write("README.md", "# calc\n\nMultiplication works.\n")
    ledger.record_write(2, "README.md", before, content_hash(root / "README.md"))
    version = ledger.progress_version
    observed = ledger.record_validation("calc-mul", run_validation(root, CHECK), 3)
    assert observed.advanced
    assert ledger.progress_version == version + 1
    assert ledger.semantic_projection() != projection
