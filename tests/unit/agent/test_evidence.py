"""The evidence ledger: newest wins, repetition is not progress, evidence follows writes."""

from __future__ import annotations

import pytest

from tidegate.agent.evidence import EvidenceLedger, ValidationStatus


def test_newest_sequence_wins_and_older_observations_are_ignored() -> None:
    ledger = EvidenceLedger()
    ledger.record_validation("unit", passed=True, sequence=1)
    ledger.record_validation("unit", passed=False, sequence=2)
    ledger.record_validation("unit", passed=True, sequence=3)
    held = ledger.validation("unit")
    assert held is not None and held.status is ValidationStatus.PASSED and held.sequence == 3
    late = ledger.record_validation("unit", passed=False, sequence=2)
    assert late.stale and not late.advanced
    assert ledger.validation("unit").status is ValidationStatus.PASSED  # type: ignore[union-attr]


def test_two_results_at_one_sequence_are_a_contradiction() -> None:
    ledger = EvidenceLedger()
    ledger.record_validation("unit", passed=True, sequence=4)
    assert not ledger.record_validation("unit", passed=True, sequence=4).advanced
    with pytest.raises(ValueError, match="two results"):
        ledger.record_validation("unit", passed=False, sequence=4)


def test_identical_observations_keep_the_newest_sequence_without_progress() -> None:
    ledger = EvidenceLedger()
    assert ledger.record_validation("unit", passed=False, sequence=1).advanced
    version = ledger.progress_version
    projection = ledger.semantic_projection()
    for seq in (2, 3, 4):
        assert not ledger.record_validation("unit", passed=False, sequence=seq).advanced
    assert ledger.validation("unit").sequence == 4  # type: ignore[union-attr]
    assert ledger.progress_version == version
    assert ledger.semantic_projection() == projection


def test_status_changes_and_newly_covered_writes_are_progress() -> None:
    ledger = EvidenceLedger()
    ledger.record_validation("unit", passed=False, sequence=1)
    assert ledger.record_validation("unit", passed=True, sequence=2).advanced  # status
    ledger.record_write(3, "a.py", "h0", "h1")
    assert ledger.record_validation("unit", passed=True, sequence=4).advanced  # covers a write
    assert ledger.validation("unit").covered_writes == 1  # type: ignore[union-attr]


def test_diffs_follow_the_same_rules() -> None:
    ledger = EvidenceLedger()
    ledger.record_write(1, "a.py", None, "h1")
    assert ledger.record_diff("sha256:d1", 2).advanced
    assert not ledger.record_diff("sha256:d1", 3).advanced
    assert ledger.record_diff("sha256:d1", 1).stale
    assert ledger.record_diff("sha256:d1", 4, complete=False).advanced
    assert ledger.state.diffs["workspace"].sequence == 4


def test_completion_needs_a_pass_and_a_complete_diff_after_the_last_write() -> None:
    ledger = EvidenceLedger()
    assert ledger.completion_gaps() == ["no workspace change has been recorded"]
    assert ledger.is_complete(expect_changes=False)
    ledger.record_validation("unit", passed=True, sequence=1)
    ledger.record_write(2, "a.py", "h0", "h1")
    gaps = ledger.completion_gaps()
    assert any("no passing validation after the last write" in g for g in gaps)
    assert any("no complete diff" in g for g in gaps)
    ledger.record_validation("unit", passed=True, sequence=3)
    ledger.record_diff("sha256:d", 4, complete=False)
    assert ledger.completion_gaps() == [
        "no complete diff observed after the last write (sequence 2)"
    ]
    ledger.record_diff("sha256:d", 5)
    assert ledger.is_complete()
    ledger.record_write(6, "a.py", "h1", "h2")
    assert not ledger.is_complete()


def test_a_failing_validation_blocks_completion_until_the_same_id_passes() -> None:
    ledger = EvidenceLedger()
    ledger.record_write(1, "a.py", "h0", "h1")
    ledger.record_validation("lint", passed=False, sequence=2)
    ledger.record_validation("unit", passed=True, sequence=3)
    ledger.record_diff("sha256:d", 4)
    assert ledger.completion_gaps() == ["newest result is a failure for validation lint"]
    ledger.record_validation("lint", passed=True, sequence=5)
    assert ledger.is_complete()


def test_a_write_in_the_validating_call_needs_a_later_pass() -> None:
    ledger = EvidenceLedger()
    ledger.record_write(1, "a.py", "h0", "h1")
    ledger.record_validation("unit", passed=True, sequence=2)
    ledger.record_write(2, ".pytest_cache/x", "c1", None)  # cleanup inside the same call
    ledger.record_diff("sha256:d", 3)
    assert not ledger.is_complete()
    assert ledger.record_validation("unit", passed=True, sequence=4).advanced
    assert ledger.is_complete()


def test_writes_must_change_something_and_arrive_in_order() -> None:
    ledger = EvidenceLedger()
    with pytest.raises(ValueError, match="must change"):
        ledger.record_write(1, "a.py", "h", "h")
    ledger.record_write(5, "a.py", "h", "h2")
    with pytest.raises(ValueError, match="arrives after"):
        ledger.record_write(4, "b.py", None, "h")


def test_ledger_round_trips_through_json_and_keeps_working() -> None:
    ledger = EvidenceLedger()
    ledger.record_write(1, "a.py", "h0", "h1")
    ledger.record_validation("unit", passed=False, sequence=2)
    ledger.record_diff("sha256:d", 3)
    restored = EvidenceLedger.from_json(ledger.to_json())
    assert restored.to_json() == ledger.to_json()
    assert restored.semantic_projection() == ledger.semantic_projection()
    assert restored.last_write_sequence == 1
    restored.record_write(4, "a.py", "h1", "h2")
    assert restored.record_validation("unit", passed=True, sequence=5).advanced
    assert restored.validation("unit").covered_writes == 2  # type: ignore[union-attr]
