"""Matrix 17: resume rejects a prompt configuration different from the checkpoint's.

A recorded agent session pauses (step budget) with a sealed checkpoint in the run store. A
fresh host reads the verified resume ticket and calls ``resume_session`` with the
prompt configuration it would use now. A stricter approval profile, another network or
write policy, a dirty-state summary, another complexity or another goal each make the
reassembled hashes differ, and the resume is refused with ``ResumeIncompatible`` naming
the hashes that changed, before any model turn. Under the recorded configuration the same
checkpoint resumes and the run completes.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance._agent import (
    Recorded,
    answer,
    call,
    configuration,
    executor,
    scripted,
    session,
    task,
    turn,
)
from tests.conftest import Repo
from tidegate.agent import (
    AgentSession,
    Budget,
    GuardLimits,
    SessionOptions,
    default_prompt_configuration,
    resume_session,
    run_loop,
)
from tidegate.models.scripted import ScriptedModel
from tidegate.prompt import PromptConfiguration, ResumeIncompatible
from tidegate.store import open_run_store, resume_ticket
from tidegate.tools.executor import ToolExecutor


def paused_run(repo: Repo) -> tuple[Recorded, ScriptedModel]:
    record = Recorded(repo.root)
    model = scripted(turn(call("workspace_read", "r1", path="calc.py")), answer("after resume"))
    with executor(repo.root) as ex:
        limits = GuardLimits(budget=Budget(max_steps=1))
        s = session(model, ex, recorder=record.recorder, limits=limits)
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "budget"
    assert record.store.get(record.run_id).status == "paused"
    return record, model


def resume_under(
    record: Recorded,
    model: ScriptedModel,
    ex: ToolExecutor,
    config: PromptConfiguration,
    goal: str = "Fix add() so that it adds.",
) -> AgentSession:
    """What a fresh host does, with the configuration it states now."""
    store = open_run_store(record.root, None)
    ticket = resume_ticket(store, record.run_id)
    return resume_session(
        ticket.state,
        model=model,
        executor=ex,
        config=config,
        task=task(ex.context.root, goal),
        options=SessionOptions(),
    )


def test_a_stricter_approval_profile_is_refused(committed_repo: Repo) -> None:
    record, model = paused_run(committed_repo)
    strict = default_prompt_configuration(write=True, commands=True, approval="strict")
    with (
        executor(committed_repo.root) as ex,
        pytest.raises(ResumeIncompatible, match="prompt") as refused,
    ):
        resume_under(record, model, ex, strict)
    assert refused.value.changed == ["prompt", "system_prompt"]
    assert model.turns_left == 1, "no model turn ran"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"network_access": "allowed"}, ["prompt", "system_prompt"]),
        ({"write_access": "policy_gated"}, ["prompt", "system_prompt"]),
        ({"dirty_state_summary": "modified: other.py"}, ["prompt", "system_prompt"]),
        ({"complexity": "complex"}, ["prompt", "system_prompt", "task_contract"]),
    ],
)
def test_another_policy_or_host_statement_is_refused(
    committed_repo: Repo, change: dict[str, Any], expected: list[str]
) -> None:
    record, model = paused_run(committed_repo)
    with executor(committed_repo.root) as ex:
        changed = configuration(ex).model_copy(update=change)
        with pytest.raises(ResumeIncompatible, match="cannot resume") as refused:
            resume_under(record, model, ex, changed)
    assert refused.value.changed == expected


def test_another_goal_is_refused(committed_repo: Repo) -> None:
    record, model = paused_run(committed_repo)
    with executor(committed_repo.root) as ex, pytest.raises(ResumeIncompatible) as refused:
        resume_under(record, model, ex, configuration(ex), goal="Rewrite the parser.")
    assert refused.value.changed == ["task_contract"]


def test_the_recorded_configuration_resumes(committed_repo: Repo) -> None:
    record, model = paused_run(committed_repo)
    with executor(committed_repo.root) as ex:
        resumed = record.resume(model, ex, limits=GuardLimits(budget=Budget(max_steps=10)))
        outcome = run_loop(resumed)
        record.finish(resumed, outcome)
    assert outcome.status == "completed" and outcome.text == "after resume"
    assert record.store.get(record.run_id).status == "succeeded"
