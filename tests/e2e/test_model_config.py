"""``[tool.tidegate.model]`` settings reach the model: a user points ``--model openai:M`` at
a local OpenAI-compatible server through the repository's configuration (base URL, the
name of the key variable, a price so ``--max-cost`` can be enforced), the price is applied
to every reply's usage (the recorded agent events carry the computed cost), and the key
travels only in the request header."""

from __future__ import annotations

import json
import sys
from decimal import Decimal

from tests.conftest import Repo, containment_verified, tidegate_cli
from tests.integration._store import readonly_store
from tests.integration.models.servers import LoopbackServer, Reply, oa_completion

CHECK = f"{sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5'"
FIX = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"


def _configure(repo: Repo, url: str, extra: str = "") -> None:
    (repo.root / ".tidegate").mkdir(exist_ok=True)
    (repo.root / ".tidegate" / "config.toml").write_text(
        "[model]\n"
        f'base_url = "{url}/v1"\n'
        'api_key_env = "LOCAL_LLM_KEY"\n'
        "streaming = false\n"
        "price = {input = 1, output = 2}\n" + extra
    )


def test_model_settings_come_from_the_repository_config(committed_repo: Repo) -> None:
    replies = [
        Reply(body=oa_completion("Plan: add() must use +.")),
        Reply(body=oa_completion(FIX)),
    ]
    with LoopbackServer(replies, key="sk-local-123", key_header="authorization") as server:
        _configure(committed_repo, server.url)
        res = tidegate_cli(
            "run", "--repo", str(committed_repo.root), "--json",
            "--model", "openai:local-model", "--max-cost", "0.5",
            "--objective", "Make add() add.", "--verify", CHECK,
            # without bubblewrap the model's change runs only with the user's approval
            *([] if containment_verified() else ["--containment", "none"]),
            env={"LOCAL_LLM_KEY": "sk-local-123", "OPENAI_API_KEY": ""},
        )  # fmt: skip
        assert res.returncode == 0, res.stderr + res.stdout
        report = json.loads(res.stdout)
        assert report["status"] == "succeeded"
        assert committed_repo.read("calc.py").count("a + b") == 1
        assert len(server.received) == 2
        assert all(r.path == "/v1/chat/completions" for r in server.received)
        assert server.credential_problems() == []
        assert "sk-local-123" not in res.stdout + res.stderr
    # the configured price was applied to every reply's usage (11 input and 7 output tokens
    # at USD 1 and 2 per million), so the --max-cost cap had a spend to check
    store = readonly_store(committed_repo)
    try:
        events = store.events(report["run_id"])
    finally:
        store.close()
    started = [e.payload_value() for e in events if e.kind == "agent.started"]
    turns = [e.payload_value() for e in events if e.kind == "agent.turn"]
    finished = [e.payload_value() for e in events if e.kind == "agent.finished"]
    assert [p["budget"]["hard_dollar_cap"] for p in started] == ["0.5", "0.5"]
    assert [(p["input_tokens"], p["output_tokens"]) for p in turns] == [(11, 7), (11, 7)]
    assert [Decimal(p["cost_usd"]) for p in turns] == [Decimal("0.000025")] * 2
    assert sum(Decimal(p["cost_usd"]) for p in finished) == Decimal("0.00005")


def test_bad_model_settings_are_one_line_and_change_nothing(committed_repo: Repo) -> None:
    _configure(committed_repo, "http://127.0.0.1:9", extra="temperature_typo = 1\n")
    before = committed_repo.tree_state()
    res = tidegate_cli(
        "run", "--repo", str(committed_repo.root),
        "--model", "openai:local-model", "--objective", "x", "--verify", "true",
    )  # fmt: skip
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "temperature_typo" in res.stderr
    assert committed_repo.tree_state() == before
