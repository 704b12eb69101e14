"""A sub-agent that writes secrets into its change, or says them in its answer, does not get
them to its parent: the dispatch's output (what the parent's model is sent) carries the
diff and the text through the sanitiser, the diff redacted before it is cut to its bound
(so a key straddling the cut leaves no readable prefix), the text redacted and its
terminal controls made visible. The digest is of the sub-agent's real diff."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial._dispatch import dispatch_turn, editing, host, parent
from tests.conformance._agent import answer, call, scripted, turn
from tests.conftest import CALC, Repo
from tidegate.agent import run_loop
from tidegate.agent.dispatch import SubAgentDispatch
from tidegate.agent.sub_result import DIFF_CHARS, SubAgentReport, dispatch_result
from tidegate.models.messages import ToolResult
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.effects import ApprovalEffect

OPENAI = "sk-proj-" + "Q7wErTy9UiOp3AsDf5GhJk1LzXcV"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIA" + "QWERTYUIOPASDFGH"
PASSWORD = "correct-horse-battery-staple"
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
SETTINGS = (
    f'OPENAI_API_KEY = "{OPENAI}"\n'
    f'GITHUB = "{GITHUB}"\n'
    f'AWS_ACCESS_KEY_ID = "{AWS}"\n'
    f"DB_PASSWORD = '{PASSWORD}'\n"
    f'DEPLOY_KEY = """{PEM}"""\n'
)
LEAKS = (OPENAI, GITHUB, AWS, PASSWORD, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU")


def parent_sees(root: Path, tmp: Path, sub_model: Any) -> dict[str, Any]:
    """The dispatch's output as the parent's model is sent it."""
    tool = SubAgentDispatch(editing(model=sub_model))
    with host(root, tmp) as ex:
        s = parent(scripted(dispatch_turn(), answer("ok")), ex, tool, phase="AGENT")
        assert run_loop(s).status == "completed"
    (result,) = [m for m in s.messages if isinstance(m, ToolResult) and m.tool_call_id == "d1"]
    output: dict[str, Any] = json.loads(result.content)
    if "output" in output:
        output = output["output"]
    return output | {"_raw": result.content}


def test_secrets_in_the_sub_agents_change_and_answer_are_redacted(
    committed_repo: Repo, tmp_path: Path
) -> None:
    sub_model = scripted(
        turn(
            call(
                "workspace_write",
                "w1",
                path="settings.py",
                content=SETTINGS,
                expect="must_not_exist",
            )
        ),
        answer(f"Wrote settings.py; the key is {OPENAI} and the token {GITHUB}."),
    )
    seen = parent_sees(committed_repo.root, tmp_path, sub_model)
    raw = seen["_raw"]
    for secret in LEAKS:
        assert secret not in raw, secret
    assert seen["diff"].count("[REDACTED]") >= 5, seen["diff"]
    assert "+OPENAI_API_KEY = " in seen["diff"], "the change itself is still shown"
    assert "[REDACTED]" in seen["text"] and seen["changed_paths"] == ["settings.py"]
    assert committed_repo.read("calc.py") == CALC
    assert not (committed_repo.root / "settings.py").exists()


def report(diff: str, text: str = "done") -> SubAgentReport:
    return SubAgentReport(
        agent="tidegate", depth=1, status="completed", text=text, reason="", diff=diff,
        read_only=False,
    )  # fmt: skip


def result_of(sub: SubAgentReport) -> dict[str, Any]:
    call = HostCall(call_id="d1", name="agent_dispatch", arguments={"task": "t"})
    out = dispatch_result(call, sub, ApprovalEffect(status="not_required"), time.monotonic())
    assert out.output is not None
    return out.output


@pytest.mark.parametrize("before", [DIFF_CHARS - 14, DIFF_CHARS - 20, DIFF_CHARS - 9])
def test_a_key_straddling_the_cut_leaves_no_prefix(before: int) -> None:
    """Redacted first, then cut: a key cut short first is too short to look like one."""
    diff = "+" + "x" * (before - 1) + OPENAI + "\n"
    out = result_of(report(diff))
    key = OPENAI.removeprefix("sk-proj-")
    assert key[:4] not in out["diff"], out["diff"][-40:]
    assert out["diff_sha256"] == "sha256:" + hashlib.sha256(diff.encode()).hexdigest()


def test_the_text_is_redacted_and_its_controls_made_visible() -> None:
    text = f"done \x1b]52;c;{OPENAI}\x07 \x1b[2J\u202eevil"
    out = result_of(report("", text=text))
    assert OPENAI not in out["text"] and "\x1b" not in out["text"] and "\u202e" not in out["text"]
    assert "\\x1b" in out["text"]


def test_a_secret_in_an_agent_clis_diff_is_redacted_too() -> None:
    """A CLI sub-agent's outcome goes through the same result (``_cli`` builds the report
    from the CLI's own diff)."""
    diff = f"diff --git a/.npmrc b/.npmrc\n+//registry.npmjs.org/:_authToken={GITHUB}\n"
    out = result_of(report(diff))
    assert GITHUB not in json.dumps(out) and out["changed_paths"] == [".npmrc"]
