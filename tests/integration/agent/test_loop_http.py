"""The loop through the real provider SDKs, against loopback servers.

Streaming and non-streaming answers take the same path through the loop: the same session
over the OpenAI SDK with ``streaming`` on and off dispatches the same calls, in the same
order, with the same correlation ids, and records the same transcript. Over the Anthropic
SDK, usage comes from the provider and the cost from the built-in price table; the
hard cap stops the session before a request that could cross it.
"""

from __future__ import annotations

import json
from typing import Any

from tests.conformance._agent import (
    Loopback,
    digest,
    executor,
    loopback_fixture,  # noqa: F401
    session,
)
from tests.conftest import CALC, Repo, requires_containment
from tests.integration.models.servers import (
    Reply,
    an_stream,
    an_usage,
    oa_completion,
    oa_text_stream,
    oa_tool_stream,
)
from tidegate.agent import Budget, GuardLimits, LoopSettings, run_loop
from tidegate.models import resolve_pricing

EDIT = {"path": "calc.py", "old": "a - b", "new": "a + b", "expect": digest(CALC)}
ROUNDS: list[list[tuple[str, str, dict[str, Any]]]] = [
    [("c1", "workspace_read", {"path": "calc.py"}), ("c2", "workspace_grep", {"pattern": "add"})],
    [("c3", "workspace_edit", EDIT)],
    [("c4", "project_validate", {})],
    [("c5", "git_exec", {"args": ["diff"]})],
]


def replies(streaming: bool) -> list[Reply]:
    out = []
    for calls in ROUNDS:
        if streaming:
            frags = [
                (cid, name, [json.dumps(args)[:5], json.dumps(args)[5:]])
                for cid, name, args in calls
            ]
            out.append(Reply(sse=oa_tool_stream(frags)))
        else:
            wire = [(cid, name, json.dumps(args)) for cid, name, args in calls]
            out.append(Reply(body=oa_completion(tool_calls=wire, finish="tool_calls")))
    final = "add() fixed."
    out.append(Reply(sse=oa_text_stream(final)) if streaming else Reply(body=oa_completion(final)))
    return out


@requires_containment
def test_streaming_and_non_streaming_share_one_path(
    committed_repo: Repo, loopback: Loopback
) -> None:
    results = {}
    for streaming in (True, False):
        committed_repo.write("calc.py", CALC)
        server, model = loopback("openai", *replies(streaming), streaming=streaming)
        with executor(committed_repo.root) as ex:
            s = session(model, ex)
            outcome = run_loop(s)
        assert outcome.status == "completed" and outcome.text == "add() fixed."
        bodies = [r.json() for r in server.received]
        assert [b.get("stream", False) for b in bodies] == [streaming] * 5
        tool_messages = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
        turns = [
            {k: v for k, v in t.to_json().items() if k != "duration_ms"} for t in s.transcript.turns
        ]
        tools = [
            {
                k: v
                for k, v in r.to_json().items()
                if k not in ("effects", "summary", "result_sha256", "duration_us")
            }
            for r in s.transcript.tools
        ]
        results[streaming] = (turns, tools, s.transcript.tool_sequence)
    assert results[True] == results[False]
    assert results[True][2] == [
        "workspace.read",
        "workspace.grep",
        "workspace.edit",
        "project.validate",
        "git.exec",
    ]


def test_provider_usage_prices_the_session_and_the_cap_holds(
    committed_repo: Repo, loopback: Loopback
) -> None:
    usage = an_usage(inp=200_000, out=1_000)
    server, model = loopback(
        "anthropic",
        Reply(
            sse=an_stream(
                tools=[("t1", "workspace_read", ['{"path": "calc.py"}'])],
                stop="tool_use",
                usage=usage,
            )
        ),
        Reply(sse=an_stream(text=["never sent"])),
    )
    pricing = resolve_pricing(model.identity)
    assert pricing.price is not None
    limits = GuardLimits(budget=Budget(hard_dollar_cap=0.21))
    with executor(committed_repo.root) as ex:
        s = session(
            model, ex, pricing=pricing, limits=limits, settings=LoopSettings(max_output_tokens=1000)
        )
        outcome = run_loop(s)
    assert outcome.status == "stopped" and outcome.guard == "hard-dollar-cap"
    assert len(server.received) == 1
    (first,) = s.transcript.turns
    assert first.input_tokens == 200_000 and first.usage_exact
    assert first.cost_usd is not None and float(first.cost_usd) == float(
        pricing.cost(model_usage(usage))
    )  # type: ignore[arg-type]
    assert s.guards.state.usage.dollars <= 0.21


def model_usage(raw: dict[str, int]) -> Any:
    from tidegate.models import Usage

    return Usage(
        input_tokens=raw["input_tokens"]
        + raw["cache_read_input_tokens"]
        + raw["cache_creation_input_tokens"],
        output_tokens=raw["output_tokens"],
        cached_input_tokens=raw["cache_read_input_tokens"],
        cache_write_tokens=raw["cache_creation_input_tokens"],
    )
