"""The workspace fingerprint a checkpoint records is the tree as it stands at that
checkpoint, also after an edit the host never saw (the user changing a file while the
session is paused): resuming from that checkpoint on the unchanged tree succeeds, and a
later edit is still refused. A fingerprint remembered per host state version would record
the tree from before the user's edit and refuse a workspace that had not changed."""

from __future__ import annotations

import pytest

from tests.conformance._agent import (
    answer,
    call,
    configuration,
    executor,
    scripted,
    session,
    task,
    turn,
)
from tests.conftest import Repo
from tidegate.agent import (
    AgentSession,
    Budget,
    GuardLimits,
    ResumeRefused,
    SessionOptions,
    resume_session,
    run_loop,
)
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.fingerprint import workspace_fingerprint


def resume_from(saved: dict[str, object], ex: ToolExecutor, model: object) -> AgentSession:
    return resume_session(
        saved,
        limits=GuardLimits(),
        model=model,
        executor=ex,
        config=configuration(ex),
        task=task(ex.context.root),
        options=SessionOptions(),
    )


def test_a_checkpoint_after_an_out_of_band_edit_records_the_edited_tree(
    committed_repo: Repo,
) -> None:
    model = scripted(turn(call("workspace_read", path="calc.py")), answer("after resume"))
    with executor(committed_repo.root) as ex:
        s = session(model, ex, limits=GuardLimits(budget=Budget(max_steps=1)))
        outcome = run_loop(s)
        assert outcome.status == "paused"
        first = s.last_checkpoint
        assert first is not None
        # the user edits a file while the session is paused; the host never saw it
        committed_repo.write("README.md", "# calc\n\nedited by hand\n")
        s.checkpoint("pause")  # a later checkpoint with no host action in between
        second = s.last_checkpoint
        assert second is not None
    assert ex.state_version == 0, "no host action moved the executor's state"
    edited = workspace_fingerprint(committed_repo.root)
    assert first["workspace_fingerprint"] != edited
    assert second["workspace_fingerprint"] == edited

    with executor(committed_repo.root) as fresh:
        again = run_loop(resume_from(second, fresh, model))
    assert again.status == "completed" and again.text == "after resume"

    committed_repo.write("README.md", "# calc\n\nedited again\n")
    with executor(committed_repo.root) as fresh, pytest.raises(ResumeRefused, match="changed"):
        resume_from(second, fresh, model)
