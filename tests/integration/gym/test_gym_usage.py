"""A model contestant's ``model_tokens`` and ``model_cost_usd`` are what its responses
reported, priced at a known price, or unmeasured (``null`` in JSON with the reason under
``unmeasured``, ``unmeasured`` in text): never the invented 0 the gym wrote when it read
fields the usage object does not have. Real tokens come from an OpenAI-compatible server on
loopback; the shipped scripted model (whose turns report no usage) is unmeasured."""

from __future__ import annotations

import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._operator import op
from tests.integration.models.servers import (
    OA_DONE,
    LoopbackServer,
    Reply,
    oa_chunk,
    oa_text_stream,
    oa_usage,
)
from tidegate.models.pricing import PRICES

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = "safe-change-dirty-tree"
PLAN = "Plan: add() subtracts; make it add."
PATCH = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"


def _without_usage(text: str) -> list[str]:
    """A streamed answer whose server reports no token usage at all."""
    return [
        oa_chunk({"role": "assistant", "content": ""}),
        oa_chunk({"content": text}),
        oa_chunk({}, "stop"),
        OA_DONE,
    ]


def _gym_run(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    model: str,
    replies: list[Reply],
) -> tuple[dict[str, Any], str]:
    with LoopbackServer(replies, key="sk-local-123", key_header="authorization") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local-123")
        args = (
            "gym",
            "run",
            SCENARIO,
            "--contestant",
            f"openai:{model}",
            "--allow-uncontained",
            "--state-root",
        )
        document = op(capsys, *args, str(root), "--json").json()
        text = (Path(document["artifacts"]) / "report.txt").read_text()
        assert len(server.received) == 2  # PLAN and PATCH, one request each
    assert document["checks"] and document["status"] == "succeeded", document["message"]
    return document["scorecard"], text


def test_reported_tokens_and_a_known_price_are_the_scorecard(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    replies = [
        Reply(sse=oa_text_stream(PLAN, usage=oa_usage(prompt=1200, completion=30))),
        Reply(sse=oa_text_stream(PATCH, usage=oa_usage(prompt=1500, completion=45))),
    ]
    card, text = _gym_run(capsys, monkeypatch, tmp_path / "s", "gpt-4o-mini", replies)
    price = PRICES["openai"]["gpt-4o-mini"]
    expected = (2700 * price.input + 75 * price.output) / Decimal(1_000_000)
    assert card["model_tokens"] == 1200 + 30 + 1500 + 45
    assert card["model_cost_usd"] == pytest.approx(float(expected))
    assert card["unmeasured"] == {}
    assert f"model tokens {1200 + 30 + 1500 + 45}, cost {card['model_cost_usd']}" in text


def test_no_reported_usage_and_no_price_are_unmeasured_with_reasons(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    replies = [Reply(sse=_without_usage(PLAN)), Reply(sse=_without_usage(PATCH))]
    card, text = _gym_run(capsys, monkeypatch, tmp_path / "s", "local-model", replies)
    assert card["model_tokens"] is None and card["model_cost_usd"] is None
    assert "2 of 2 model responses reported no token usage" in card["unmeasured"]["model_tokens"]
    assert "price is unknown" in card["unmeasured"]["model_cost_usd"]
    assert "local-model" in card["unmeasured"]["model_cost_usd"]
    assert "model tokens unmeasured, cost unmeasured" in text
    assert "note: model_tokens unmeasured: 2 of 2 model responses" in text


def test_the_shipped_scripted_model_reports_no_usage_so_it_is_unmeasured(
    tmp_path: Path,
) -> None:
    """The demo's run (examples/calc with examples/calc-model.json) through the engine, as
    the gym runs a model contestant: its turns carry no ``usage``, so the counts would be
    tidegate's estimate, and a scripted model has no price."""
    from tidegate.flow.transaction import execute
    from tidegate.gym.runner import planner_spend
    from tidegate.gym.scorecard import Unmeasured
    from tidegate.planners import planner_for
    from tidegate.records.request import RunRequest

    repo = tmp_path / "calc"
    shutil.copytree(ROOT / "examples" / "calc", repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "calc"], check=True)
    request = RunRequest(
        repo=repo,
        objective="Fix add() so that the tests pass",
        verify=f"{sys.executable} -m pytest -q -p no:cacheprovider",
        model=f"scripted:{ROOT / 'examples' / 'calc-model.json'}",
    )
    planner: Any = planner_for(request)
    try:
        assert execute(request, planner=planner).status == "succeeded"
    finally:
        planner.close()
    tokens, cost = planner_spend(planner)
    assert isinstance(tokens, Unmeasured) and "reported no token usage" in tokens.reason
    assert isinstance(cost, Unmeasured) and "price is unknown" in cost.reason
