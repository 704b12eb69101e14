"""The scripted contract double: replay, expectations, injected failures, labelling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tidegate.models import (
    ContextOverflow,
    MalformedModelOutput,
    ModelAuthError,
    ModelConfigError,
    ModelRequest,
    ModelRequestRejected,
    ModelUnavailable,
    ScriptedModel,
    ScriptMismatch,
    StopReason,
    TextDelta,
    ToolCallDelta,
    ToolResult,
    UserMessage,
    check_order,
    complete,
    resolve_model,
)
from tidegate.models.scripted import Script

ASK = ModelRequest(system=("sys",), messages=(UserMessage("fix calc.py"),))


def scripted(*turns: dict[str, object], **top: object) -> ScriptedModel:
    return ScriptedModel(Script.model_validate({"turns": list(turns), **top}))


def test_a_tool_turn_then_an_answer_that_checks_the_tool_result() -> None:
    model = scripted(
        {
            "text": ["Let me ", "read it."],
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "workspace.read",
                    "arguments_fragments": ['{"path":', '"calc.py"}'],
                }
            ],
        },
        {
            "expect_tool_results": [{"id": "c1", "contains": "def add", "is_error": False}],
            "text": "Fixed.",
        },
    )
    events = list(check_order(model.stream(ASK)))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me ", "read it."]
    assert [e.fragment for e in events if isinstance(e, ToolCallDelta)] == [
        '{"path":',
        '"calc.py"}',
    ]
    first = events[-1].response  # type: ignore[union-attr]
    assert first.stop_reason is StopReason.TOOL_USE
    follow_up = ModelRequest(
        system=("sys",),
        messages=(*ASK.messages, first.as_message(), ToolResult("c1", "def add(a, b): ...")),
    )
    answer = complete(model, follow_up)
    assert answer.text == "Fixed." and answer.stop_reason is StopReason.END_TURN
    assert answer.usage.exact is False and model.turns_left == 0


def test_a_failed_expectation_is_a_script_mismatch() -> None:
    model = scripted({"expect_user_contains": "parser", "text": "x"})
    with pytest.raises(ScriptMismatch, match="parser"):
        complete(model, ASK)
    model = scripted({"expect_tool_results": [{"id": "c1"}], "text": "x"})
    with pytest.raises(ScriptMismatch, match="c1"):
        complete(model, ASK)


def test_running_out_of_turns_is_a_script_mismatch() -> None:
    model = scripted({"text": "only"})
    complete(model, ASK)
    with pytest.raises(ScriptMismatch, match="all were used"):
        complete(model, ASK)


def test_injected_overflow_then_the_next_turn_answers_the_retry() -> None:
    model = scripted({"error": "overflow"}, {"text": "after compaction"})
    with pytest.raises(ContextOverflow):
        complete(model, ASK)
    assert complete(model, ASK).text == "after compaction"


def test_injected_rate_limits_go_through_the_shared_retry_policy() -> None:
    model = scripted(
        {"error": "rate_limit", "retry_after_s": 0.01}, {"error": "server_error"}, {"text": "ok"}
    )
    assert complete(model, ASK).text == "ok"
    assert model.turns_left == 0
    persistent = scripted(*[{"error": "rate_limit"} for _ in range(10)])
    with pytest.raises(ModelUnavailable) as caught:
        complete(persistent, ASK)
    assert caught.value.attempts == 6 and caught.value.status == 429


@pytest.mark.parametrize(
    ("turn", "error"),
    [
        ({"error": "auth"}, ModelAuthError),
        ({"error": "rejected"}, ModelRequestRejected),
        ({"tool_calls": [{"name": "x", "raw_arguments": "{oops"}]}, MalformedModelOutput),
        ({"text": "hi", "stop": "exploded"}, MalformedModelOutput),
    ],
)
def test_injected_failures_are_typed(turn: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        complete(scripted(turn), ASK)


def test_the_identity_says_it_is_a_contract_double() -> None:
    model = scripted({"text": "hi"}, model="demo", context_window=4096)
    identity = model.identity
    assert (identity.provider, identity.model, identity.endpoint) == ("scripted", "demo", "")
    assert identity.contract_double and identity.capability_source == "script"
    assert identity.context_window == 4096 and len(identity.revision) == 16
    other = scripted({"text": "bye"}, model="demo", context_window=4096)
    assert other.identity.identity_hash != identity.identity_hash


def test_declared_usage_is_reported_as_given() -> None:
    model = scripted(
        {
            "text": "hi",
            "usage": {"input_tokens": 900, "output_tokens": 12, "cached_input_tokens": 800},
        }
    )
    usage = complete(model, ASK).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.exact) == (
        900,
        12,
        800,
        True,
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "Invalid JSON"),
        ('{"turns": []}', "turns"),
        ('{"turns": [{"txet": "typo"}]}', "turns.0.txet"),
        (
            '{"turns": [{"tool_calls": [{"name": "x", "arguments": {}, "raw_arguments": "{}"}]}]}',
            "one of",
        ),
    ],
)
def test_bad_script_files_are_usage_errors(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "script.json"
    path.write_text(content)
    with pytest.raises(ModelConfigError, match=expected):
        resolve_model(f"scripted:{path}", None, {})


def test_a_script_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"model": "file", "turns": [{"text": "from disk"}]}))
    model = resolve_model(f"scripted:{path}", {"retry": {"max_attempts": 2}}, {})
    assert complete(model, ASK).text == "from disk"
    assert "file" in repr(model)
