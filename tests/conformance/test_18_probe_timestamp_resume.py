"""Matrix 18: a fresh capability-probe timestamp does not invalidate a compatible resume.

The model's capability evidence keeps its semantic state (supported, source, verified) in
the prompt snapshot and its hash; probe timestamps are diagnostics and are dropped before
hashing. Two probes taken at different real times resume each other; a probe whose
verification state changed does not.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from tests.unit.prompt.helpers import capabilities, config, snapshot
from tidegate.prompt import RunTask, TaskContract, check_resume

TASK = RunTask(task_id="t-18", workspace_root="/workspace/project", goal="Fix the parser.")


def probe(verified: bool = True) -> dict[str, object]:
    return capabilities(probed_at=datetime.now(UTC).isoformat(), verified=verified)


def test_a_later_probe_with_the_same_evidence_resumes() -> None:
    contract = TaskContract.from_task(TASK, config())
    first_probe = probe()
    time.sleep(0.01)
    second_probe = probe()
    assert first_probe != second_probe  # the timestamps really differ
    first = snapshot(caps=first_probe)
    second = snapshot(caps=second_probe)
    assert check_resume(first.hashes(contract), second.hashes(contract)) == []
    assert second.model_capabilities["toolCalling"]["verified"] is True
    assert "probedAt" not in second.model_capabilities["toolCalling"]


def test_a_change_in_verification_state_is_not_compatible() -> None:
    contract = TaskContract.from_task(TASK, config())
    first = snapshot(caps=probe(verified=True))
    second = snapshot(caps=probe(verified=False))
    assert check_resume(first.hashes(contract), second.hashes(contract)) == [
        "prompt",
        "model_capability",
    ]
