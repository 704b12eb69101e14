"""The stream assembler and the order check: the protocol every adapter shares."""

from __future__ import annotations

import pytest

from tidegate.models import (
    Finished,
    MalformedModelOutput,
    Stopped,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallCompleted,
    ToolCallDelta,
    ToolCallStarted,
    Usage,
    UsageReported,
    check_order,
)
from tidegate.models.events import ModelEvent, StreamAssembler

STOPS = {"done": StopReason.END_TURN, "tools": StopReason.TOOL_USE}


def assembler(seed: str = "seed") -> StreamAssembler:
    return StreamAssembler(
        stop_reasons=STOPS,
        id_seed=seed,
        estimate_usage=lambda text, calls: Usage(7, len(text), exact=False),
        map_tool_name=lambda wire: wire.replace("_", "."),
    )


def test_a_full_response_comes_out_in_protocol_order() -> None:
    a = assembler()
    events: list[ModelEvent] = []
    events += a.text("Hel")
    events += a.tool_call(0, id="c0", name="workspace_read")
    events += a.text("lo")
    events += a.tool_call(0, fragment='{"path"')
    events += a.tool_call(0, fragment=': "a"}')
    a.usage(Usage(100, 20, cached_input_tokens=60))
    a.stop("tools")
    events += a.finish()
    assert list(check_order(events)) == events
    assert [e.kind for e in events] == [
        "text_delta",
        "tool_call_started",
        "text_delta",
        "tool_call_delta",
        "tool_call_delta",
        "tool_call_completed",
        "usage",
        "stopped",
        "finished",
    ]
    final = events[-1]
    assert isinstance(final, Finished)
    assert final.response.text == "Hello"
    assert final.response.tool_calls == (ToolCall("c0", "workspace.read", {"path": "a"}),)
    assert final.response.usage == Usage(100, 20, cached_input_tokens=60)
    assert final.response.as_message().tool_calls == final.response.tool_calls


def test_fragments_before_the_name_are_held_back_until_the_start() -> None:
    a = assembler()
    assert a.tool_call(0, id="c0", fragment='{"a":') == []
    events = a.tool_call(0, name="grep", fragment="1}")
    assert events == [
        ToolCallStarted(0, "c0", "grep"),
        ToolCallDelta(0, "c0", '{"a":'),
        ToolCallDelta(0, "c0", "1}"),
    ]


def test_missing_ids_are_synthesised_deterministically_per_request() -> None:
    first = assembler("request-1").tool_call(0, name="grep")
    again = assembler("request-1").tool_call(0, name="grep")
    other = assembler("request-2").tool_call(0, name="grep")
    assert first == again
    assert isinstance(first[0], ToolCallStarted) and isinstance(other[0], ToolCallStarted)
    assert first[0].id.startswith("call_tg") and first[0].id != other[0].id


def test_missing_usage_falls_back_to_a_labelled_estimate() -> None:
    a = assembler()
    a.text("four")
    a.stop("done")
    usage = next(e for e in a.finish() if isinstance(e, UsageReported)).usage
    assert usage == Usage(7, 4, exact=False)


@pytest.mark.parametrize(
    ("feed", "expected"),
    [
        (lambda a: a.tool_call(0, id="c", name="x", fragment="{nope"), "not valid JSON"),
        (lambda a: a.tool_call(0, id="c", name="x", fragment="[1, 2]"), "not a JSON object"),
        (lambda a: a.tool_call(0, id="c", fragment="{}"), "has no name"),
    ],
    ids=["bad-json", "not-object", "no-name"],
)
def test_bad_tool_calls_are_malformed_output(feed, expected: str) -> None:  # type: ignore[no-untyped-def]
    a = assembler()
    feed(a)
    a.stop("tools")
    with pytest.raises(MalformedModelOutput, match=expected) as caught:
        a.finish()
    assert caught.value.retry_turn


def test_unknown_stop_reason_and_missing_stop_are_malformed() -> None:
    with pytest.raises(MalformedModelOutput, match="unknown reason 'eos'") as caught:
        assembler().stop("eos")
    assert caught.value.raw == "eos"
    with pytest.raises(MalformedModelOutput, match="without a stop reason"):
        assembler().finish()


def test_nothing_may_follow_the_end() -> None:
    a = assembler()
    a.stop("done")
    a.finish()
    with pytest.raises(MalformedModelOutput, match="after the response ended"):
        a.text("late")


def test_empty_arguments_mean_no_arguments() -> None:
    a = assembler()
    a.tool_call(0, id="c", name="list")
    a.stop("tools")
    done = [e for e in a.finish() if isinstance(e, ToolCallCompleted)]
    assert done[0].call.arguments == {}


USAGE = UsageReported(Usage(1, 1))
STOP = Stopped(StopReason.END_TURN, "done")


@pytest.mark.parametrize(
    "events",
    [
        [TextDelta("a"), STOP, USAGE],
        [USAGE, TextDelta("late"), STOP],
        [ToolCallDelta(0, "c", "{}"), USAGE, STOP],
        [ToolCallStarted(0, "c", "x"), ToolCallStarted(0, "c", "x"), USAGE, STOP],
        [TextDelta("no end")],
    ],
    ids=[
        "stop-before-usage",
        "delta-after-usage",
        "delta-before-start",
        "double-start",
        "no-finished",
    ],
)
def test_check_order_rejects_out_of_order_streams(events: list[ModelEvent]) -> None:
    with pytest.raises(MalformedModelOutput):
        list(check_order(events))
