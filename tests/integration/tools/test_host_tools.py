"""The non-workspace tools: git.exec's allowlist, artifacts, task checkpoints, user
questions, the labelled doubles, and the recorder port."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.tools.support import call, executor
from tidegate.errors import PersistenceError
from tidegate.tools.policy import ApprovalProfile
from tidegate.tools.recording import StoreCallRecorder
from tidegate.tools.scripted import ListRecorder, ScriptedUser


def test_git_exec_allows_reads_and_refuses_the_rest(committed_repo: Repo) -> None:
    committed_repo.write("calc.py", "changed\n")
    with executor(committed_repo.root) as ex:
        status = ex.execute(call("git_exec", args=["status", "--porcelain"]))
        log = ex.execute(call("git_exec", args=["log", "--oneline"]))
        commit = ex.execute(call("git_exec", args=["commit", "-am", "x"]))
        outside = ex.execute(call("git_exec", args=["diff", "--no-index", "/etc/hostname", "x"]))
    assert status.ok and status.output is not None
    assert status.output["stdout"] == " M calc.py\n"
    assert status.effects.diff_review is None and status.effects.inspect[0].kind == "git"
    assert log.ok and "initial" in log.output["stdout"]  # type: ignore[index]
    assert commit.status == "denied" and outside.status == "denied"
    assert committed_repo.git("log", "--oneline").count("\n") == 1


def test_artifacts_live_outside_the_workspace(committed_repo: Repo, tmp_path: Path) -> None:
    store = tmp_path / "state" / "artifacts"
    with executor(committed_repo.root, artifact_dir=store, activate_all=True) as ex:
        made = ex.execute(call("artifact_create", name="report.md", content="# findings\n"))
        assert made.ok and made.output is not None and made.effects.state_version == 1
        art_id = made.output["artifact"]["artifact_id"]
        listed = ex.execute(call("artifact_list"))
        read = ex.execute(call("artifact_read", artifact_id=art_id, max_bytes=3))
        missing = ex.execute(call("artifact_read", artifact_id="art_" + "0" * 16))
    assert [a["artifact_id"] for a in listed.output["artifacts"]] == [art_id]  # type: ignore[index]
    assert read.output is not None and read.output["content"] == "# f" and read.output["truncated"]
    assert missing.error is not None and missing.error.code == "not_found"
    assert made.effects.write == ()
    assert list(store.iterdir()) == [store / f"{art_id}.json"]
    assert committed_repo.status() == ""


def test_task_checkpoint_is_durable_and_sequenced(committed_repo: Repo, tmp_path: Path) -> None:
    state = tmp_path / "state" / "task.json"
    with executor(committed_repo.root, task_state_path=state) as ex:
        first = ex.execute(
            call("task_checkpoint", summary="start", items=[{"id": "T1", "text": "fix add"}])
        )
        second = ex.execute(
            call(
                "task_checkpoint",
                summary="done",
                items=[{"id": "T1", "text": "fix add", "status": "done"}],
            )
        )
    assert first.output is not None and second.output is not None
    assert (first.output["sequence"], second.output["sequence"]) == (1, 2)
    saved = json.loads(state.read_text())
    assert saved["summary"] == "done" and saved["sha256"] == second.output["checkpoint_sha256"]
    assert second.effects.plan is not None and second.effects.plan.items == 1
    assert second.effects.state_version == 2


def test_user_ask_correlates_and_never_assumes(committed_repo: Repo) -> None:
    user = ScriptedUser(answers=["yes", None])
    with executor(committed_repo.root, user=user) as ex:
        answered = ex.execute(call("user_ask", "q1", question="Proceed?", choices=["yes", "no"]))
        silent = ex.execute(call("user_ask", "q2", question="Really?"))
    assert answered.output == {"question_id": "q_q1", "answer": "yes", "choice": 0}
    assert silent.error is not None and silent.error.code == "no_answer"
    assert [q[0] for q in user.asked] == ["q_q1", "q_q2"]


def test_doubles_say_what_they_are(committed_repo: Repo, tmp_path: Path) -> None:
    with executor(
        committed_repo.root,
        doubles=True,
        network="allowed",
        activate_all=True,
        artifact_dir=tmp_path / "a",
        approval=ApprovalProfile.TRUSTED_WORKSPACE,
    ) as ex:
        found = ex.execute(call("research_search", query="git diff working tree"))
        fetched = ex.execute(call("research_fetch", url="https://git-scm.com/docs/git-diff"))
        preview = ex.execute(call("preview_manage", action="start", target="web"))
        art = ex.execute(call("artifact_create", name="shot.txt", content="pixels\n"))
        seen = ex.execute(
            call(
                "perception_analyze",
                artifact_id=art.output["artifact"]["artifact_id"],  # type: ignore[index]
                question="what is it?",
            )
        )
    for result in (found, fetched, preview, seen):
        assert result.ok and result.label is not None and "double" in result.label
        assert result.output is not None and result.output["provider"] == result.label
    assert found.output["results"][0]["url"] == "https://git-scm.com/docs/git-diff"  # type: ignore[index]
    assert fetched.effects.research is not None
    assert fetched.effects.research.sources[0].untrusted is True
    assert preview.effects.state_version is not None and preview.output["url"] is None  # type: ignore[index]


def test_every_call_is_recorded_and_a_failing_recorder_stops_the_run(
    committed_repo: Repo,
) -> None:
    recorder = ListRecorder(fail_after=2)
    with executor(committed_repo.root, recorder=recorder) as ex:
        ex.execute(call("workspace_read", "a", path="calc.py"))
        ex.execute(call("nope", "b"))
        with pytest.raises(PersistenceError, match="could not be recorded"):
            ex.execute(call("workspace_read", "c", path="calc.py"))
    assert [c.call_id for c, _ in recorder.calls] == ["a", "b"]


class _Log:
    """The store side of StoreCallRecorder: notes each event and whether the file the
    write creates (``watched``) already existed at that moment."""

    def __init__(self, watched: Path) -> None:
        self.watched = watched
        self.events: list[tuple[str, str, str, bool]] = []

    def tool_call_requested(
        self, tool_call_id: str, canonical_tool: str, input_sha256: str
    ) -> None:
        self.events.append(("requested", tool_call_id, canonical_tool, self.watched.exists()))

    def tool_call_finished(
        self, tool_call_id: str, status: str, effects: object, *, result_sha256: str | None = None
    ) -> None:
        assert result_sha256 is not None and result_sha256.startswith("sha256:")
        self.events.append(("finished", tool_call_id, status, self.watched.exists()))


def test_store_bridge_records_the_request_before_dispatch(committed_repo: Repo) -> None:
    log = _Log(committed_repo.root / "n.txt")
    with executor(committed_repo.root, recorder=StoreCallRecorder(log)) as ex:
        ex.execute(call("workspace_write", "w", path="n.txt", content="", expect="must_not_exist"))
        ex.execute(call("workspace_read", "bad", path=5))
    # the request is recorded while n.txt does not exist yet: before dispatch
    assert log.events == [
        ("requested", "w", "workspace.write", False),
        ("finished", "w", "succeeded", True),
        ("requested", "bad", "workspace.read", True),
        ("finished", "bad", "failed", True),
    ]
