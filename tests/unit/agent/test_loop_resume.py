"""Resuming a session: what is refused (another model, a changed workspace, a foreign
checkpoint) and what is restored (counters, active tools, completed calls)."""

from __future__ import annotations

import pytest

from tests.conformance._agent import (
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
    ResumeRefused,
    SessionOptions,
    resume_session,
    run_loop,
)
from tidegate.prompt import ResumeIncompatible


def paused(
    committed_repo: Repo, *turns: dict[str, object]
) -> tuple[AgentSession, dict[str, object]]:
    model = scripted(*turns, answer("after resume"))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, limits=GuardLimits(budget=Budget(max_steps=len(turns))))
        outcome = run_loop(s)
    assert outcome.status == "paused"
    assert s.last_checkpoint is not None
    return s, s.last_checkpoint


def resume(
    s: AgentSession, saved: dict[str, object], model: object = None, **kw: object
) -> AgentSession:
    ex = executor(s.executor.context.root)
    return resume_session(
        saved,
        model=model or s.model,
        executor=ex,
        config=configuration(ex),
        task=task(ex.context.root),
        options=SessionOptions(),
        **kw,
    )


def test_another_model_is_refused(committed_repo: Repo) -> None:
    s, saved = paused(committed_repo, turn(call("workspace_read", path="calc.py")))
    with pytest.raises(ResumeIncompatible, match="model-identity"):
        resume(s, saved, model=scripted(answer("a different script")))


def test_a_changed_workspace_is_refused(committed_repo: Repo) -> None:
    s, saved = paused(committed_repo, turn(call("workspace_read", path="calc.py")))
    committed_repo.write("calc.py", "changed = True\n")
    with pytest.raises(ResumeRefused, match="workspace changed"):
        resume(s, saved)


def test_a_foreign_checkpoint_is_refused(committed_repo: Repo) -> None:
    s, saved = paused(committed_repo, turn(call("workspace_read", path="calc.py")))
    with pytest.raises(ResumeRefused, match="not an agent checkpoint"):
        resume(s, {**saved, "format": "tidegate.engine/1"})


def test_counters_tools_and_completed_calls_come_back(committed_repo: Repo) -> None:
    s, saved = paused(
        committed_repo,
        turn(call("catalog_search", "s1", query="session")),
        turn(call("workspace_read", "r1", path="calc.py")),
    )
    bigger = GuardLimits(budget=Budget(max_steps=10))
    resumed = resume(s, saved, limits=bigger)
    assert "command.session" in resumed.executor.registry.active
    assert resumed.hashes == s.hashes
    assert resumed.guards.state.usage.steps == 2
    assert resumed.seq == s.seq and resumed.completed == {"s1"}
    assert resumed.workspace_state() == s.workspace_state()
    outcome = run_loop(resumed)
    assert outcome.status == "completed" and outcome.text == "after resume"
    assert resumed.guards.limits.budget.max_steps == 10
