"""``tidegate run --model`` as a user runs it: a real subprocess, a real repository with
the user's own staged and unstaged edits, the shipped scripted model.

The model explores with tool calls, plans, proposes a wrong patch, receives the shrunk
feedback of the failing verification, and fixes it on the second attempt. The fix lands as
an unstaged edit; the user's staged and unstaged edits are untouched; the run store holds
the model's tool sequence, turns and usage. ``ledger run --model`` runs an item the same
way. Bad model options are one-line usage errors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import CALC, Repo, tidegate_cli
from tidegate.store import open_run_store

CHECK = (
    f"{sys.executable} -B -c 'from calc import add, mul; "
    'assert add(2, 3) == 5, "add(2, 3) should be 5"; assert mul(2, 3) == 6\''
)


def block(old: str, new: str) -> str:
    return f"calc.py\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def tool(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": arguments}


SCRIPT = {
    "model": "e2e-model",
    "turns": [
        {
            "text": "Looking for add().",
            "tool_calls": [tool("g1", "workspace_grep", pattern="def add")],
        },
        {
            "expect_tool_results": [{"id": "g1", "contains": "calc.py"}],
            "tool_calls": [tool("r1", "workspace_read", path="calc.py")],
        },
        {
            "expect_tool_results": [{"id": "r1", "contains": "a - b"}],
            "text": "Plan: change the operator in add() in calc.py.",
        },
        {
            "expect_user_contains": "Phase PATCH",
            "text": block("    return a - b", "    return a * b"),
        },
        {
            "expect_user_contains": "add(2, 3) should be 5",
            "text": "Plan: add() must use +.",
            "tool_calls": [tool("r2", "workspace_read", path="calc.py")],
        },
        {"text": "Plan: add() must use + in calc.py."},
        {
            "expect_user_contains": "add(2, 3) should be 5",
            "text": block("    return a - b", "    return a + b"),
        },
    ],
}


def _ok(res: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    return res.stdout


def test_a_model_fixes_the_bug_on_the_second_attempt(repo: Repo, tmp_path: Path) -> None:
    repo.write("calc.py", CALC)
    repo.write("README.md", "# calc\n")
    repo.write("notes.txt", "tracked notes\n")
    repo.commit_all("initial")
    repo.write("README.md", "# calc\n\nstaged line\n")
    repo.git("add", "README.md")
    repo.write("README.md", "# calc\n\nstaged line\nunstaged line\n")
    repo.write("notes.txt", "tracked notes\nmy unstaged note\n")
    index_before = repo.index_bytes()
    script = tmp_path / "model.json"
    script.write_text(json.dumps(SCRIPT))

    res = tidegate_cli(
        "run", "--repo", str(repo.root), "--json",
        "--objective", "Fix add() so that the check passes.",
        "--model", f"scripted:{script}", "--verify", CHECK, "--max-steps", "20",
    )  # fmt: skip
    report = json.loads(_ok(res))
    assert report["status"] == "succeeded" and report["attempts"] == 2
    assert report["planner"] == "model:scripted:e2e-model"
    assert "add(2, 3) should be 5" in report["feedback"][0]
    assert [e["status"] for e in report["attempt_events"]] == ["failed", "succeeded"]

    assert repo.read("calc.py") == CALC.replace("a - b", "a + b")
    assert repo.read("README.md") == "# calc\n\nstaged line\nunstaged line\n"
    assert repo.read("notes.txt") == "tracked notes\nmy unstaged note\n"
    assert repo.index_bytes() == index_before
    assert repo.git("diff", "--cached", "--name-only") == "README.md\n"
    assert sorted(repo.status().splitlines()) == [" M calc.py", " M notes.txt", "MM README.md"]

    store = open_run_store(repo.root, None)
    calls = store.tool_calls(report["run_id"])
    assert [(c.tool_call_id, c.canonical_tool, c.status) for c in calls] == [
        ("a1.plan.g1", "workspace.grep", "succeeded"),
        ("a1.plan.r1", "workspace.read", "succeeded"),
        ("a2.plan.r2", "workspace.read", "succeeded"),
    ]
    turns = [e for e in store.events(report["run_id"]) if e.kind == "agent.turn"]
    assert [(e.phase, e.attempt) for e in turns] == [
        ("PLAN", 1),
        ("PLAN", 1),
        ("PLAN", 1),
        ("PATCH", 1),
        ("PLAN", 2),
        ("PLAN", 2),
        ("PATCH", 2),
    ]
    assert all(e.payload_value()["input_tokens"] > 0 for e in turns)
    finished = [
        e.payload_value() for e in store.events(report["run_id"]) if e.kind == "agent.finished"
    ]
    assert [f["tool_sequence"] for f in finished] == [
        ["workspace.grep", "workspace.read"],
        [],
        ["workspace.read"],
        [],
    ]
    assert "Looking for add()" not in json.dumps(
        [e.to_json() for e in store.events(report["run_id"])]
    )


def test_ledger_run_with_a_model(repo: Repo, tmp_path: Path) -> None:
    repo.write("calc.py", CALC)
    repo.commit_all("calc")
    task = tmp_path / "task"
    _ok(tidegate_cli("ledger", "init", str(task), "--route", "small", "--brief", "Fix add"))
    (task / "plan.md").write_text(
        f"# Plan\n\n## T1: Fix add\n\nadd() subtracts; make it add.\n\nVerify: `{CHECK}`\n"
    )
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"turns": [
        {"expect_user_contains": "Phase PLAN", "text": "plan: use +"},
        {"text": block("    return a - b", "    return a + b")},
    ]}))  # fmt: skip
    res = tidegate_cli(
        "ledger", "run", str(task), "--repo", str(repo.root), "--model", f"scripted:{script}",
        "--allow-uncontained",
        "--json",
    )  # fmt: skip
    (item_run,) = json.loads(_ok(res))
    assert item_run["item"] == "T1" and item_run["report"]["status"] == "succeeded"
    assert item_run["report"]["planner"] == "model:scripted:script"
    assert repo.read("calc.py") == CALC.replace("a - b", "a + b")
    assert "| T1 | Fix add | done |" in (task / "ledger.md").read_text()


def test_bad_model_options_are_usage_errors(repo: Repo, tmp_path: Path) -> None:
    repo.write("calc.py", CALC)
    repo.commit_all("calc")
    script = tmp_path / "m.json"
    script.write_text(json.dumps({"turns": [{"text": "x"}]}))
    cases = [
        (["--model", "nope:thing"], "--model takes"),
        (["--model", f"scripted:{tmp_path / 'missing.json'}"], "missing.json"),
        (["--model", f"scripted:{script}", "--max-cost", "1"], "needs a price"),
        (["--model", f"scripted:{script}", "--planner", "scripted:x.json"], "not both"),
    ]
    for extra, expected in cases:
        res = tidegate_cli("run", "--repo", str(repo.root), "--objective", "fix", *extra)
        assert res.returncode == 2, (extra, res.stdout, res.stderr)
        assert res.stderr.startswith("tidegate: error: ") and res.stderr.count("\n") == 1
        assert expected in res.stderr, res.stderr
    assert repo.status() == ""


def test_run_with_a_sub_agent_keeps_it_read_only_and_isolated(repo: Repo, tmp_path: Path) -> None:
    """``--sub-agent tidegate``: the model hands PLAN's exploration to a sub-agent (the same
    scripted model, one shared budget); its write attempt finds no write tool, the audit
    events are in the run's trace, and only the verified change reaches the tree."""
    repo.write("calc.py", CALC)
    repo.commit_all("initial")
    repo.write("notes.txt", "my untracked notes\n")
    index_before = repo.index_bytes()
    script = tmp_path / "model.json"
    write = tool("w1", "workspace_write", path="calc.py", content="boom\n", expect="x")
    script.write_text(
        json.dumps(
            {
                "model": "e2e-model",
                "turns": [
                    {"tool_calls": [tool("d1", "agent_dispatch", task="Find the bug in add().")]},
                    {"tool_calls": [tool("r1", "workspace_read", path="calc.py")]},
                    {"tool_calls": [write]},
                    {"text": "add() subtracts; it should add."},
                    {
                        "expect_tool_results": [{"id": "d1", "contains": "add() subtracts"}],
                        "text": "Plan: make add() add.",
                    },
                    {"text": block("    return a - b", "    return a + b")},
                ],
            }
        )
    )
    res = tidegate_cli(
        "run", "--repo", str(repo.root), "--json", "--objective", "Fix add().",
        "--model", f"scripted:{script}", "--sub-agent", "tidegate", "--verify", CHECK,
        "--max-attempts", "1",
    )  # fmt: skip
    report = json.loads(_ok(res))
    assert report["status"] == "succeeded", report["message"]
    assert repo.read("calc.py") == CALC.replace("a - b", "a + b")
    assert repo.read("notes.txt") == "my untracked notes\n"
    assert repo.index_bytes() == index_before
    kinds = [e.kind for e in open_run_store(repo.root, None).events(report["run_id"])]
    assert "sub_agent.dispatch.read_only_forced_isolated" in kinds
    assert "sub_agent.dispatch.read_only_tool_guard_filtered" in kinds


def test_a_sub_agent_without_a_model_is_a_usage_error(repo: Repo) -> None:
    repo.write("calc.py", CALC)
    repo.commit_all("initial")
    res = tidegate_cli(
        "run", "--repo", str(repo.root), "--objective", "edit-file: calc.py\nreplace: a\nwith: b\n",
        "--sub-agent", "tidegate",
    )  # fmt: skip
    assert res.returncode == 2 and "--sub-agent needs --model" in res.stderr, res.stderr
