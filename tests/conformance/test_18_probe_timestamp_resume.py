"""Matrix 18: a fresh capability-probe timestamp does not invalidate a compatible resume.

A model's identity carries the time it was probed (``ModelIdentity.probed_at``, which the
real provider adapters stamp when they are built). A recorded session runs under one probe,
pauses and is checkpointed; a fresh host resumes it through ``resume_session`` with
the same model probed an hour later, and the run completes. A re-probe that finds tool
calling gone is a different capability set: the same checkpoint is refused with the
model-capability hash named. The model here is the shipped scripted double, reporting the
re-probed identity the test gives it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from msgspec.structs import replace

from tests.conformance._agent import Recorded, answer, call, executor, scripted, session, turn
from tests.conftest import Repo
from tidegate.agent import Budget, GuardLimits, run_loop
from tidegate.agent.session_prompt import model_facts
from tidegate.models import ModelIdentity
from tidegate.models.envelope import ModelRequest
from tidegate.models.events import ModelEvent
from tidegate.models.scripted import ScriptedModel
from tidegate.models.tokens import TokenCount
from tidegate.prompt import ResumeIncompatible

FIRST_PROBE = "2026-11-30T10:00:00+00:00"
LATER_PROBE = "2026-11-30T11:00:00+00:00"


class Reprobed:
    """Test double of the model port: one scripted model, reported under ``identity`` (the
    same deployment probed at another time, or found with other capabilities)."""

    def __init__(self, inner: ScriptedModel, identity: ModelIdentity) -> None:
        self.inner = inner
        self._identity = identity

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    def count_tokens(self, text: str) -> TokenCount:
        return self.inner.count_tokens(text)

    def stream(
        self, request: ModelRequest, cancel: threading.Event | None = None
    ) -> Iterator[ModelEvent]:
        return self.inner.stream(request, cancel)

    def close(self) -> None:
        self.inner.close()


def paused_under_first_probe(repo: Repo) -> tuple[Recorded, ScriptedModel]:
    model = scripted(turn(call("workspace_read", "r1", path="calc.py")), answer("after resume"))
    first = Reprobed(model, model.identity.probed(FIRST_PROBE))
    record = Recorded(repo.root)
    with executor(repo.root) as ex:
        limits = GuardLimits(budget=Budget(max_steps=1))
        s = session(first, ex, recorder=record.recorder, limits=limits)  # type: ignore[arg-type]
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused"
    assert model_facts(first)[0]["probed_at"] == FIRST_PROBE
    return record, model


def test_a_later_probe_of_the_same_model_resumes(committed_repo: Repo) -> None:
    record, model = paused_under_first_probe(committed_repo)
    later = Reprobed(model, model.identity.probed(LATER_PROBE))
    assert later.identity != model.identity.probed(FIRST_PROBE)
    assert model_facts(later)[0]["probed_at"] == LATER_PROBE
    with executor(committed_repo.root) as ex:
        resumed = record.resume(
            later,  # type: ignore[arg-type]
            ex,
            limits=GuardLimits(budget=Budget(max_steps=10)),
        )
        outcome = run_loop(resumed)
        record.finish(resumed, outcome)
    assert outcome.status == "completed" and outcome.text == "after resume"
    saved = record.checkpoints()[0].state
    assert saved["hashes"] == resumed.hashes.model_dump()
    assert record.store.get(record.run_id).status == "succeeded"


def test_a_probe_that_lost_tool_calling_is_refused(committed_repo: Repo) -> None:
    record, model = paused_under_first_probe(committed_repo)
    degraded = replace(model.identity.probed(LATER_PROBE), tool_calling=False)
    with executor(committed_repo.root) as ex, pytest.raises(ResumeIncompatible) as refused:
        record.resume(Reprobed(model, degraded), ex)  # type: ignore[arg-type]
    assert "model-capability" in str(refused.value)
    assert refused.value.changed == ["prompt", "model_capability"]
    assert model.turns_left == 1, "no model turn ran"
