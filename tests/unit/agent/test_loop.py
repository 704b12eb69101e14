"""The agent loop over the shipped scripted model and a real executor on a real repository:
ordering and correlation, budgets, the hard cost cap, malformed output, cancellation,
answer repair, approval and unknown outcomes, phase tool sets, lazy activation, and what
the transcript keeps."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from tests.conformance._agent import (
    PRICE,
    answer,
    call,
    digest,
    executor,
    scripted,
    session,
    turn,
)
from tests.conftest import CALC, Repo, requires_containment
from tests.integration.tools.support import TEST_LABEL, ThrowingReader
from tidegate.agent import Budget, GuardLimits, LoopSettings, run_loop
from tidegate.errors import ErrorClass, UsageError
from tidegate.models.events import ModelEvent, TextDelta, ToolCallCompleted, ToolCallDelta
from tidegate.models.messages import AssistantMessage, ToolResult
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.tools.policy import ApprovalProfile
from tidegate.workspace.port import WorkspacePort


def fix_turns() -> list[dict[str, Any]]:
    return [
        turn(call("workspace_read", "r1", path="calc.py"), text="I will read calc.py first."),
        turn(
            call(
                "workspace_edit",
                "e1",
                path="calc.py",
                old="a - b",
                new="a + b",
                expect=digest(CALC),
            ),
            expect_tool_results=[{"id": "r1", "contains": "a - b"}],
        ),
        turn(call("project_validate", "v1")),
        turn(
            call("git_exec", "d1", args=["diff"]),
            expect_tool_results=[{"id": "v1", "contains": "passed"}],
        ),
        answer("add() now adds; validation passed; the diff is reviewed."),
    ]


@requires_containment
def test_a_fix_session_runs_in_order_and_finalizes_without_tools(committed_repo: Repo) -> None:
    model = scripted(*fix_turns())
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "completed" and outcome.finalized
    assert outcome.text.startswith("add() now adds")
    assert s.transcript.tool_sequence == [
        "workspace.read",
        "workspace.edit",
        "project.validate",
        "git.exec",
    ]
    offered = [t.tools_offered for t in s.transcript.turns]
    assert offered[:4] == [offered[0]] * 4 and offered[0] > 5
    assert offered[4] == 0, "the evidence-ready turn offers no tools"
    assert "return a + b" in committed_repo.read("calc.py")
    assert s.ledger.is_complete()
    assert model.turns_left == 0


def test_the_transcript_keeps_no_model_prose(committed_repo: Repo) -> None:
    with executor(committed_repo.root) as ex:
        s = session(scripted(*fix_turns()), ex)
        run_loop(s)
    stored = json.dumps(s.transcript.to_json()) + json.dumps(s.checkpoint_state("t"))
    assert "I will read calc.py first" not in stored
    assert "add() now adds" not in stored
    first = s.transcript.turns[0]
    assert first.text_chars == len("I will read calc.py first.")
    assert first.text_sha256.startswith("sha256:")


def test_a_multi_call_round_keeps_emitted_order_and_correlation(committed_repo: Repo) -> None:
    model = scripted(
        turn(
            call("workspace_list", "x3", path="."),
            call("workspace_read", "x1", path="calc.py"),
            call("workspace_grep", "x2", pattern="def mul"),
        ),
        answer(
            expect_tool_results=[
                {"id": "x1", "contains": "def add"},
                {"id": "x2", "contains": "calc.py"},
                {"id": "x3", "contains": "README.md"},
            ]
        ),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        assert run_loop(s).status == "completed"
    assistant = next(m for m in s.messages if isinstance(m, AssistantMessage) and m.tool_calls)
    index = s.messages.index(assistant)
    results = s.messages[index + 1 : index + 4]
    assert [c.id for c in assistant.tool_calls] == ["x3", "x1", "x2"]
    assert [r.tool_call_id for r in results if isinstance(r, ToolResult)] == ["x3", "x1", "x2"]
    assert s.transcript.tool_sequence == ["workspace.list", "workspace.read", "workspace.grep"]
    assert [r.seq for r in s.transcript.tools] == [1, 2, 3]


def test_streamed_fragments_reach_the_loop_in_protocol_order(committed_repo: Repo) -> None:
    model = scripted(
        {
            "text": ["Reading ", "the file."],
            "tool_calls": [
                {
                    "id": "f1",
                    "name": "workspace_read",
                    "arguments_fragments": ['{"pa', 'th": "cal', 'c.py"}'],
                }
            ],
        },
        answer("ok"),
    )
    seen: list[ModelEvent] = []
    with executor(committed_repo.root) as ex:
        outcome = run_loop(session(model, ex), on_event=seen.append)
    assert outcome.status == "completed"
    kinds = [type(e) for e in seen[:6]]
    assert kinds[:2] == [TextDelta, TextDelta]
    fragments = [e.fragment for e in seen if isinstance(e, ToolCallDelta)]
    assert "".join(fragments) == '{"path": "calc.py"}'
    completed = [e for e in seen if isinstance(e, ToolCallCompleted)]
    assert completed[0].call.arguments == {"path": "calc.py"}


def test_the_step_budget_pauses_before_the_next_request(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_read", path="calc.py")),
        turn(call("workspace_read", path="README.md")),
        answer("never sent"),
    )
    limits = GuardLimits(budget=Budget(max_steps=2))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, limits=limits)
        outcome = run_loop(s)
    assert outcome.status == "paused" and outcome.guard == "budget"
    assert "steps" in outcome.reason and outcome.resumable
    assert model.turns_left == 1, "the third request was never sent"
    assert s.guards.state.usage.steps == 2


def test_the_hard_cost_cap_stops_before_a_request_that_could_cross_it(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_read", path="calc.py")),
        turn(call("workspace_read", path="README.md")),
        answer("never sent"),
    )
    limits = GuardLimits(budget=Budget(hard_dollar_cap=5.0))
    settings = LoopSettings(max_output_tokens=100)
    with executor(committed_repo.root) as ex:
        s = session(model, ex, limits=limits, pricing=PRICE, settings=settings)
        outcome = run_loop(s)
    assert outcome.status == "stopped" and outcome.guard == "hard-dollar-cap"
    spent = s.guards.state.usage.dollars
    assert 0 < spent <= 5.0
    assert model.turns_left == 2, "only the first request fitted under the cap"
    assert s.transcript.cost_known and float(s.transcript.cost_usd) == pytest.approx(spent)


def test_a_cost_limit_without_a_price_is_refused_up_front(committed_repo: Repo) -> None:
    limits = GuardLimits(budget=Budget(hard_dollar_cap=1.0))
    with executor(committed_repo.root) as ex, pytest.raises(UsageError, match="needs a price"):
        session(scripted(answer()), ex, limits=limits)


def test_malformed_output_is_retried_then_ends_the_session(committed_repo: Repo) -> None:
    bad = {"tool_calls": [{"id": "m", "name": "workspace_read", "raw_arguments": "{nope"}]}
    with executor(committed_repo.root) as ex:
        outcome = run_loop(session(scripted(bad, answer("fine")), ex))
        assert outcome.status == "completed" and outcome.text == "fine"
        failing = session(scripted(bad, bad, bad), ex)
        outcome = run_loop(failing)
    assert outcome.status == "failed" and "protocol" in outcome.reason
    assert failing.transcript.tool_sequence == []


def test_cancellation_cuts_the_request_and_ends_resumably(committed_repo: Repo) -> None:
    model = scripted({"text": "thinking", "stall_s": 10.0}, answer())
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        timer = threading.Timer(0.2, ex.context.cancel.set)
        timer.start()
        started = time.monotonic()
        outcome = run_loop(s)
        timer.cancel()
    assert outcome.status == "cancelled" and outcome.error_class is ErrorClass.CANCELLED
    assert outcome.resumable
    assert time.monotonic() - started < 5


def test_an_answer_in_the_wrong_form_is_sent_back_for_repair(committed_repo: Repo) -> None:
    model = scripted(
        answer("no diff here"),
        answer("DIFF: fixed", expect_user_contains="needs DIFF:"),
    )

    def check(text: str) -> str | None:
        return None if text.startswith("DIFF:") else "Your answer needs DIFF: first."

    with executor(committed_repo.root) as ex:
        outcome = run_loop(session(model, ex), answer_check=check)
    assert outcome.status == "completed" and outcome.text == "DIFF: fixed"


def test_an_unknown_tool_outcome_ends_the_session_and_skips_the_rest(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("workspace_read", "u1", path="calc.py"), call("workspace_list", "u2", path=".")),
        answer("never"),
    )
    context = ToolContext(workspace=WorkspacePort(committed_repo.root))
    with ToolExecutor(context, overrides={"workspace.read": ThrowingReader()}) as ex:
        s = session(model, ex)
        outcome = run_loop(s)
    assert outcome.status == "failed" and outcome.error_class is ErrorClass.UNKNOWN_OUTCOME
    assert not outcome.resumable
    assert [(r.tool, r.dispatched, r.status) for r in s.transcript.tools] == [
        ("workspace.read", True, "unknown_outcome"),
        ("workspace.list", False, "skipped"),
    ]
    # the model is told which result came from a labelled (non-host) adapter
    (reply,) = [m for m in s.messages if isinstance(m, ToolResult) and m.tool_call_id == "u1"]
    assert reply.is_error and json.loads(reply.content)["label"] == TEST_LABEL


def test_a_call_needing_approval_pauses_the_session(committed_repo: Repo) -> None:
    model = scripted(
        turn(
            call(
                "workspace_edit",
                "p1",
                path="calc.py",
                old="a - b",
                new="a + b",
                expect=digest(CALC),
            )
        ),
        answer("never"),
    )
    context = ToolContext(
        workspace=WorkspacePort(committed_repo.root), approval_profile=ApprovalProfile.STRICT
    )
    with ToolExecutor(context) as ex:
        outcome = run_loop(session(model, ex))
    assert outcome.status == "paused" and outcome.guard == "approval"
    assert "apr_" in outcome.reason
    assert committed_repo.read("calc.py") == CALC


def test_a_read_only_phase_shows_and_runs_only_read_only_tools(committed_repo: Repo) -> None:
    write = call("workspace_write", "w1", path="new.txt", content="x", expect="must_not_exist")
    model = scripted(
        turn(write, call("workspace_read", "w2", path="calc.py")),
        answer("plan", expect_tool_results=[{"id": "w1", "contains": "PLAN phase"}]),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex, phase="PLAN")
        names = {t.name for t in s.tool_specs()}
        outcome = run_loop(s)
    assert names == {
        "workspace_read",
        "workspace_list",
        "workspace_glob",
        "workspace_grep",
        "git_exec",
        "project_detect",
    }
    assert outcome.status == "completed"
    assert not (committed_repo.root / "new.txt").exists()
    assert s.transcript.tool_sequence == [], "the whole round was refused before dispatch"
    assert "workspace.write" not in {line.canonical_id for line in s.prompt.tools}


def test_lazy_activation_reassembles_the_prompt(committed_repo: Repo) -> None:
    model = scripted(
        turn(call("catalog_search", "s1", query="session")),
        answer("ok"),
    )
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        before = s.prompt
        outcome = run_loop(s)
    assert outcome.status == "completed"
    assert s.prompt.prompt_hash != before.prompt_hash
    assert s.prompt.registry_hash != before.registry_hash
    assert "command.session" in {line.canonical_id for line in s.prompt.tools}
    first, second = s.transcript.turns
    assert second.tools_offered == first.tools_offered + 1


@requires_containment
def test_repeated_validation_failure_on_one_state_is_bounded(committed_repo: Repo) -> None:
    model = scripted(*[turn(call("project_validate", validation_id=f"v{n}")) for n in range(5)])
    with executor(committed_repo.root) as ex:
        s = session(model, ex, limits=GuardLimits(validation_failures_per_state=3))
        outcome = run_loop(s)
    assert outcome.status == "paused" and outcome.guard == "repeated-validation-failure"
    assert s.transcript.tool_sequence == ["project.validate"] * 3
    assert model.turns_left == 2, "the third failure on one workspace state paused the session"


def test_the_wall_time_budget_pauses(committed_repo: Repo) -> None:
    model = scripted(
        {"text": "slow", "stall_s": 0.2, "tool_calls": [call("workspace_read", path="calc.py")]},
        answer("never"),
    )
    limits = GuardLimits(budget=Budget(max_wall_seconds=0.1))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, limits=limits)
        outcome = run_loop(s)
    assert outcome.status == "paused" and "wall_seconds" in outcome.reason
    assert s.guards.state.usage.wall_seconds >= 0.2
