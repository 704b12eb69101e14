"""agent-submit: every outcome and reason code, reached by a scripted terminal program
built for it, and the real Codex CLI and aider reaching success against scripted model
servers on loopback."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Repo, requires_containment
from tests.integration.agents.conftest import require_agent
from tests.integration.agents.servers import (
    ScriptedServer,
    chat_completion,
    responses_turn,
)
from tidegate.agents.contracts import load_contract, parse_contract
from tidegate.operator.agent_submit import REASONS, submit

FAKE = Path(__file__).with_name("fake_agent.py")
pytestmark = requires_containment  # agent-submit starts nothing it cannot contain


def fake_contract(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "fakeagent"
    script = bin_dir / "fake_agent.py"  # beside the wrapper: the contained view shows its dir
    script.write_text(FAKE.read_text())
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("TIDEGATE_AGENT_PATH", str(bin_dir))
    raw = json.loads(load_contract("codex").model_dump_json(by_alias=True))
    raw.update(name="fakeagent", program="fakeagent", files=[], env={})
    raw["interactive"].update(
        argv=["{program}", mode],
        startup=["FakeAgent v", "Type a task>"],
        trust=["Do you trust the files"],
        submit_hotkey=["ctrl+s to run"],
        wrapper_errors=["fakeagent: error:"],
        noise=["[workflow] syncing"],
        completion=["Finished in", "Type a task>"],
        exit=["ctrl-d"],
    )
    return parse_contract(raw)


@pytest.mark.parametrize(
    ("mode", "outcome", "reason"),
    [
        ("ok", "success", None),
        ("exit-early", "unsupported", "process-exited-early"),
        ("trust", "unsupported", "trust-confirmation-required"),
        ("hotkey", "unsupported", "submit-hotkey-required"),
        ("wrapper-error", "unsupported", "agent-wrapper-error"),
        ("noise", "unsupported", "workflow-wrapper-noise"),
        ("no-banner", "unsupported", "missing-startup-banner"),
        ("no-guidance", "unsupported", "missing-guidance-checkpoint"),
        ("drift", "unsupported", "unexpected-startup-text"),
        ("composer-first", "unsupported", "unexpected-startup-text"),
        ("stall", "unsupported", "missing-guidance-checkpoint"),
        ("silent", "runtime-failure", None),
    ],
)
def test_each_outcome_is_reached_by_a_program_built_for_it(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    mode: str, outcome: str, reason: str | None,
) -> None:  # fmt: skip
    contract = fake_contract(tmp_path, mode, monkeypatch)
    audit = submit(contract, committed_repo.root, startup_timeout_s=2.0, completion_timeout_s=2.0)
    assert (audit.outcome, audit.reason) == (outcome, reason), (
        audit.detail,
        audit.transcript_preview,
    )
    assert audit.reason is None or audit.reason in REASONS
    if outcome == "success":
        assert audit.checkpoints == ["FakeAgent v", "Type a task>", "Finished in", "Type a task>"]
        assert "submitted payload tidegate-readme-summary-v1" in audit.steps


def test_a_composer_shown_before_the_banner_is_drift_even_when_the_banner_follows(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = fake_contract(tmp_path, "composer-first", monkeypatch)
    audit = submit(contract, committed_repo.root, startup_timeout_s=5.0, completion_timeout_s=5.0)
    assert (audit.outcome, audit.reason) == ("unsupported", "unexpected-startup-text")
    assert audit.detail == "'Type a task>' appeared before 'FakeAgent v': the flow drifted"
    assert audit.checkpoints == []  # the banner did come, but out of order: not a checkpoint
    assert not any(s.startswith("submitted") for s in audit.steps)  # nothing was typed


@pytest.mark.parametrize(
    ("mode", "before", "said"),
    [
        ("crash", "Type a task>", "fatal: model 'x' is not available for this account"),
        (
            "crash-at-once",
            "FakeAgent v",
            "fakeagent: cannot read /etc/fakeagent.toml: Permission denied",
        ),
        ("error-then-banner", "Type a task>", "Error: Cannot find module @fakeagent/linux-x64"),
    ],
)
def test_an_agent_that_exits_at_startup_failed_to_start_and_its_error_is_reported(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    mode: str, before: str, said: str,
) -> None:  # fmt: skip
    contract = fake_contract(tmp_path, mode, monkeypatch)
    audit = submit(contract, committed_repo.root, startup_timeout_s=5.0, completion_timeout_s=5.0)
    assert (audit.outcome, audit.reason) == ("unsupported", "process-exited-early")
    status = 1 if mode == "error-then-banner" else 3
    assert audit.detail.startswith(
        f"the agent failed to start: before {before!r}, exit status {status}"
    )
    assert audit.detail.endswith(f"; it said: {said}")
    assert "FakeAgent v" not in audit.detail.partition("it said:")[2]  # not its banner line


def test_a_launch_that_fails_is_a_runtime_failure_with_the_error(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sandbox starts; bubblewrap cannot exec the agent (its interpreter is missing).
    contract = fake_contract(tmp_path, "ok", monkeypatch)
    (tmp_path / "bin" / "fakeagent").write_text("#!/nonexistent/interpreter\n")  # cannot exec
    audit = submit(contract, committed_repo.root, startup_timeout_s=5.0, completion_timeout_s=5.0)
    assert (audit.outcome, audit.reason) == ("runtime-failure", None), audit.detail
    assert audit.detail.startswith("launch failed: bwrap: ")
    assert "fakeagent" in audit.detail and "No such file or directory" in audit.detail
    assert "launched" not in audit.steps and audit.checkpoints == []
    assert audit.containment == "bubblewrap"


def test_a_wrapper_error_is_reported_in_the_agent_s_own_words(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = fake_contract(tmp_path, "wrapper-error", monkeypatch)
    audit = submit(contract, committed_repo.root, startup_timeout_s=2.0, completion_timeout_s=2.0)
    assert audit.reason == "agent-wrapper-error"
    assert audit.detail == (
        "the agent showed: fakeagent: error: the wrapper could not start the agent"
    )


def test_covered_reason_codes_are_all_of_them() -> None:
    covered = {
        "process-exited-early", "trust-confirmation-required", "submit-hotkey-required",
        "agent-wrapper-error", "workflow-wrapper-noise", "missing-startup-banner",
        "missing-guidance-checkpoint", "unexpected-startup-text",
    }  # fmt: skip
    assert covered == set(REASONS)


def test_a_missing_program_is_a_runtime_failure(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = fake_contract(tmp_path, "ok", monkeypatch)
    monkeypatch.setenv("TIDEGATE_AGENT_PATH", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    audit = submit(contract, committed_repo.root)
    assert audit.outcome == "runtime-failure" and "not installed" in audit.detail


def test_an_agent_that_rewrites_tracked_files_cannot_reach_them(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Contained, the repository is bound read-only: the rewrite fails inside the sandbox
    # and nothing needs restoring. (Uncontained it is never started:
    # tests/adversarial/test_one_guard.py.)
    committed_repo.write("notes.txt", "untracked\n")
    committed_repo.write("README.md", "# calc\nmy unstaged line\n")
    before = committed_repo.tree_state()
    contract = fake_contract(tmp_path, "rewrite", monkeypatch)
    audit = submit(contract, committed_repo.root, startup_timeout_s=5.0, completion_timeout_s=5.0)
    assert audit.containment == "bubblewrap"
    assert audit.restored == []
    assert committed_repo.tree_state() == before


def codex_server() -> ScriptedServer:
    return ScriptedServer(lambda i, body: responses_turn(text="README.md describes calc."))


def test_real_codex_submits_the_payload(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("codex")
    tree = committed_repo.tree_state()
    with codex_server() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        audit = submit(load_contract("codex"), committed_repo.root, model="test-model")
        assert any("Summarize README.md" in t for t in server.texts())
    assert audit.outcome == "success", (audit.reason, audit.detail, audit.transcript_preview)
    assert "Worked for" in audit.checkpoints
    assert committed_repo.tree_state() == tree


def test_real_aider_submits_the_payload(
    committed_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_agent("aider")
    tree = committed_repo.tree_state()
    with ScriptedServer(lambda i, body: chat_completion("README.md describes calc.")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        audit = submit(
            load_contract("aider"), committed_repo.root, model="test-model", startup_timeout_s=120
        )
        assert any("Summarize README.md" in t for t in server.texts())
    assert audit.outcome == "success", (audit.reason, audit.detail, audit.transcript_preview)
    assert committed_repo.tree_state() == tree
