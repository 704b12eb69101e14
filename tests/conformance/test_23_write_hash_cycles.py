"""Matrix 23: A -> B -> A -> B write-hash cycles pause rather than oscillate indefinitely.

A scripted agent keeps flipping a real file between two versions. Each write is attested
with real before/after SHA-256 digests; the write-cycle guard pauses the run once the file
returns to a state it just left a second time, so the loop ends after three writes instead
of running until the iteration cap.
"""

from __future__ import annotations

from tests.conftest import Repo
from tests.unit.agent.host import content_hash
from tidegate.agent.guards import WRITE_CYCLE, Allow, Finalize, LoopGuards, Pause

VERSION_A = "def add(a, b):\n    return a - b\n"
VERSION_B = "def add(a, b):\n    return a + b\n"


def oscillate(repo: Repo, guards: LoopGuards, evidence_complete: bool) -> tuple[int, object]:
    target = repo.root / "calc.py"
    repo.write("calc.py", VERSION_A)
    for writes in range(1, 101):
        before = content_hash(target)
        repo.write("calc.py", VERSION_B if writes % 2 else VERSION_A)
        decision = guards.record_write(
            "calc.py", before, content_hash(target), evidence_complete=evidence_complete
        )
        if not isinstance(decision, Allow):
            return writes, decision
    return 100, None


def test_oscillating_writes_pause(repo: Repo) -> None:
    writes, decision = oscillate(repo, LoopGuards(), evidence_complete=False)
    assert writes == 3
    assert isinstance(decision, Pause) and decision.guard == WRITE_CYCLE
    assert "calc.py" in decision.reason


def test_oscillation_after_sufficient_evidence_finalizes(repo: Repo) -> None:
    writes, decision = oscillate(repo, LoopGuards(), evidence_complete=True)
    assert writes == 3
    assert isinstance(decision, Finalize)


def test_the_pause_holds_across_a_checkpoint(repo: Repo) -> None:
    guards = LoopGuards()
    target = repo.root / "calc.py"
    repo.write("calc.py", VERSION_A)
    for content in (VERSION_B, VERSION_A):
        before = content_hash(target)
        repo.write("calc.py", content)
        guards.record_write("calc.py", before, content_hash(target))
    restored = LoopGuards.from_json(guards.to_json())
    before = content_hash(target)
    repo.write("calc.py", VERSION_B)
    assert isinstance(restored.record_write("calc.py", before, content_hash(target)), Pause)
