"""Real agent CLIs (Codex CLI, aider) working under tidegate's guard, against scripted model
servers on loopback: each attempt runs the agent contained on an isolated copy of T0, its
change is verified in the shadow, and only a verified change reaches the user's dirty tree,
as unstaged edits. Whatever the agent does to git in its copy never reaches the user's
index, refs or stash."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.conftest import Repo
from tests.integration.agents.conftest import require_agent, require_containment
from tests.integration.agents.servers import (
    ScriptedServer,
    chat_completion,
    responses_turn,
    search_replace,
)

CHECK = f"{sys.executable} -B -c 'from calc import add; assert add(2, 3) == 5'"
RIGHT = "sed -i 's/a - b/a + b/' calc.py"
WRONG = "sed -i 's/a - b/a * b/' calc.py"
FEEDBACK_MARK = "was verified and failed"


def user_state(repo: Repo) -> dict[str, Any]:
    return {
        "index": repo.index_bytes(),
        "staged": repo.git("diff", "--cached"),
        "refs": repo.git(
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/tags",
            "refs/stash",
        ),
        "stash": repo.git("stash", "list"),
        "readme": repo.read("README.md"),
        "notes": repo.read("notes.txt"),
        "config": (repo.root / ".git" / "config").read_bytes(),
        "hooks": sorted(p.name for p in (repo.root / ".git" / "hooks").iterdir()),
    }


def codex_answers(first: list[str]) -> Any:
    def answer(index: int, body: dict[str, Any]) -> bytes:
        text = json.dumps(body)
        if '"function_call_output"' in text:
            return responses_turn(text="Done.")
        return responses_turn(commands=[RIGHT] if FEEDBACK_MARK in text else first)

    return answer


def run_agent(
    repo: Repo, agent: str, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, **kw: Any
) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-agent-key")
    return repo.run("Make add() add.", verify=CHECK, agent=agent, agent_model="test-model", **kw)


def test_codex_fixes_a_dirty_repository_under_the_guard(
    dirty: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("codex")
    require_containment()
    before = user_state(dirty)
    with ScriptedServer(codex_answers([RIGHT])) as server:
        report = run_agent(dirty, "codex", server, monkeypatch)
    assert report.status == "succeeded", report.message
    assert report.planner == "agent:codex"
    assert [f.path for f in report.applied_files] == ["calc.py"]
    assert "return a + b" in dirty.read("calc.py")
    assert user_state(dirty) == before  # staged, unstaged, untracked, refs: as they were
    assert " M calc.py" in dirty.status()


def test_codex_that_commits_stashes_and_resets_touches_nothing_of_the_user(
    dirty: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("codex")
    require_containment()
    before = user_state(dirty)
    main = dirty.root
    hostile = [
        "git add -A && git commit -qm 'agent commit' && git stash -u && git stash list",
        "git reset -q --hard HEAD~0 && git checkout -q -b evil && git config core.hooksPath /tmp",
        f"echo pwned > {main}/pwned.txt; git -C {main} add -A; git -C {main} stash; "
        f"git -C {main} reset --hard; echo tried",
        RIGHT + " && git add -A && git commit -qm fix",
    ]
    with ScriptedServer(codex_answers(hostile)) as server:
        report = run_agent(dirty, "codex", server, monkeypatch)
    assert report.status == "succeeded", report.message
    assert user_state(dirty) == before
    assert not (main / "pwned.txt").exists()
    assert "return a + b" in dirty.read("calc.py")
    # the agent's own commit reached nothing: no new object is reachable from the user's refs
    assert "agent commit" not in dirty.git("log", "--all", "--format=%s")


def test_codex_first_attempt_fails_and_the_feedback_repairs_it(
    dirty: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("codex")
    require_containment()
    with ScriptedServer(codex_answers([WRONG])) as server:
        report = run_agent(dirty, "codex", server, monkeypatch)
        sent = server.texts()
    assert report.status == "succeeded", report.message
    assert report.attempts == 2
    assert [e.status for e in report.attempt_events] == ["failed", "succeeded"]
    assert any((FEEDBACK_MARK in t and "test" in t.lower()) or FEEDBACK_MARK in t for t in sent)
    assert "return a + b" in dirty.read("calc.py")


def aider_answers(index: int, body: dict[str, Any]) -> bytes:
    text = json.dumps(body)
    new = "    return a + b" if FEEDBACK_MARK in text else "    return a * b"
    return chat_completion(search_replace("calc.py", "    return a - b", new))


def test_aider_first_attempt_fails_and_the_feedback_repairs_it(
    dirty: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("aider")
    require_containment()
    before = user_state(dirty)
    with ScriptedServer(aider_answers) as server:
        report = run_agent(dirty, "aider", server, monkeypatch)
        sent = server.texts()
    assert report.status == "succeeded", report.message
    assert report.planner == "agent:aider"
    assert report.attempts == 2
    assert any(FEEDBACK_MARK in t for t in sent[1:])
    assert "return a + b" in dirty.read("calc.py")
    assert user_state(dirty) == before
    assert not list(dirty.root.glob(".aider*"))  # its history and caches live outside the repo


def test_an_agent_that_changes_nothing_fails_without_touching_anything(
    dirty: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("codex")
    require_containment()
    tree = dirty.tree_state(with_mtimes=True)
    with ScriptedServer(lambda i, b: responses_turn(text="I will not change anything.")) as server:
        report = run_agent(dirty, "codex", server, monkeypatch, max_attempts=2)
    assert report.status == "failed"
    assert "changed nothing" in report.message
    assert dirty.tree_state(with_mtimes=True) == tree


def test_ledger_run_with_an_agent(
    repo: Repo, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import CALC, tidegate_cli

    require_agent("codex")
    require_containment()
    repo.write("calc.py", CALC)
    repo.commit_all("calc")
    task = tmp_path / "task"
    init = tidegate_cli("ledger", "init", str(task), "--route", "small", "--brief", "Fix add")
    assert init.returncode == 0, init.stderr
    (task / "plan.md").write_text(
        f"# Plan\n\n## T1: Fix add\n\nadd() subtracts; make it add.\n\nVerify: `{CHECK}`\n"
    )
    with ScriptedServer(codex_answers([RIGHT])) as server:
        res = tidegate_cli(
            "ledger", "run", str(task), "--repo", str(repo.root), "--agent", "codex",
            "--agent-model", "test-model", "--json",
            env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
    assert res.returncode == 0, res.stderr + res.stdout
    (item_run,) = json.loads(res.stdout)
    assert item_run["report"]["planner"] == "agent:codex"
    assert item_run["report"]["status"] == "succeeded"
    assert "return a + b" in repo.read("calc.py")
    assert "| T1 | Fix add | done |" in (task / "ledger.md").read_text()
