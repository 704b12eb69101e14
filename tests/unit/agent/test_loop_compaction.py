"""Compaction: bounded tool results, the host-written summary, the kept rounds, and the
loop compacting on its own before a request would outgrow the window."""

from __future__ import annotations

import json

from tests.conformance._agent import answer, call, executor, scripted, session, turn
from tests.conftest import Repo
from tidegate.agent import LoopSettings, run_loop
from tidegate.agent.compaction import SUMMARY_MARK, compact, context_summary, render_result, rounds
from tidegate.agent.evidence import EvidenceLedger
from tidegate.agent.transcript import Transcript
from tidegate.models.envelope import ModelRequest
from tidegate.models.messages import AssistantMessage, ToolCall, ToolResult, UserMessage
from tidegate.tools.calls import ToolResult as HostResult


def test_a_long_result_is_bounded_and_stays_json() -> None:
    result = HostResult(
        call_id="c1",
        name="workspace_read",
        tool="workspace.read",
        ok=True,
        status="ok",
        output={"path": "big.txt", "content": "x" * 50_000, "sha256": "sha256:" + "a" * 64},
    )
    text = render_result(result, 2_000)
    assert len(text) <= 2_000
    data = json.loads(text)
    assert data["truncated_by_host"] is True
    assert data["output"]["sha256"] == "sha256:" + "a" * 64, "short fields survive"
    assert "chars cut by the host" in data["output"]["content"]


def conversation(n: int) -> list[UserMessage | AssistantMessage | ToolResult]:
    out: list[UserMessage | AssistantMessage | ToolResult] = [
        UserMessage("task"),
        UserMessage("brief"),
    ]
    for i in range(n):
        out.append(AssistantMessage("", (ToolCall(f"c{i}", "workspace_read", {"path": "a"}),)))
        out.append(ToolResult(f"c{i}", f"result {i}"))
    return out


def test_compact_keeps_the_head_the_summary_and_the_newest_rounds() -> None:
    messages = conversation(5)
    assert len(rounds(messages, 2)) == 5
    kept = compact(messages, 2, "SUMMARY", keep_rounds=2)
    assert kept[:3] == [UserMessage("task"), UserMessage("brief"), UserMessage("SUMMARY")]
    assert [m.tool_call_id for m in kept if isinstance(m, ToolResult)] == ["c3", "c4"]
    ModelRequest(system=("s",), messages=tuple(kept))  # still a valid conversation
    again = compact(kept, 2, "SUMMARY 2", keep_rounds=0)
    assert again == [UserMessage("task"), UserMessage("brief"), UserMessage("SUMMARY 2")]


def test_the_summary_is_evidence_and_bounded_tool_lines(committed_repo: Repo) -> None:
    model = scripted(*[turn(call("workspace_read", path="calc.py")) for _ in range(1)], answer())
    with executor(committed_repo.root) as ex:
        s = session(model, ex)
        run_loop(s)
    ledger = EvidenceLedger()
    ledger.record_write(1, "calc.py", "sha256:" + "1" * 64, "sha256:" + "2" * 64)
    ledger.record_validation("unit", True, 2)
    text = context_summary(s.transcript, ledger, expect_changes=True)
    assert text.startswith(SUMMARY_MARK)
    assert "write #1: calc.py 111111111111 -> 222222222222" in text
    assert "validation unit: passed at #2 (covers 1 of 1 writes)" in text
    assert "no complete diff observed after the last write" in text
    assert "#1 workspace.read: read calc.py lines 1-6 of 6" in text
    many = Transcript()
    for record in s.transcript.tools * 100:
        many.add_tool(record)
    bounded = context_summary(many, EvidenceLedger(), expect_changes=False)
    assert "(40 earlier calls omitted)" in bounded
    assert bounded.count("\n- #") == 60


def test_the_loop_compacts_before_the_window_fills(committed_repo: Repo) -> None:
    committed_repo.write("big.txt", "".join(f"line {n} of a long file\n" for n in range(600)))
    model = scripted(
        turn(call("workspace_read", path="big.txt")),
        turn(call("workspace_read", path="README.md"), expect_user_contains=SUMMARY_MARK),
        answer("done"),
        context_window=12_000,
        max_output_tokens=1_000,
    )
    settings = LoopSettings(keep_recent_rounds=0, context_headroom=0.6)
    with executor(committed_repo.root) as ex:
        s = session(model, ex, settings=settings, expect_changes=False)
        outcome = run_loop(s)
    assert outcome.status == "completed"
    assert s.compactions >= 1
    assert model.turns_left == 0
