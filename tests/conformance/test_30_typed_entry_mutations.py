"""Conformance 30: mutations of directories, symlinks and special entries stay typed from
the command's inventory to the recorded result, the checkpoint and the resume check.

One ``command.run`` creates a directory tree, a symlink and a fifo, deletes a file and
replaces a file by a directory. The executor's result types each entry (a created
directory is missing -> dir with two null hashes, a symlink carries the hash of its target,
a fifo a special hash, a deletion is file -> missing). Run inside a recorded agent session
that then pauses, the same kinds are what the run store holds for the call and what the
sealed checkpoint carries (transcript effects and ledger write hashes). A fresh host
resumes from that checkpoint while the tree is unchanged; if the fifo or the symlink is
swapped behind the host's back, the workspace fingerprint refuses the resume.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conformance._agent import Recorded, answer, call, executor, scripted, session, turn
from tests.conftest import Repo, requires_containment
from tests.integration.tools import support
from tidegate.agent import Budget, GuardLimits, ResumeRefused, run_loop
from tidegate.models.scripted import ScriptedModel
from tidegate.tools.scripted import ListRecorder
from tidegate.workspace.states import sha256_bytes

SCRIPT = (
    "mkdir -p made/inner && ln -s calc.py link && mkfifo pipe && rm README.md "
    "&& rm .gitignore && mkdir .gitignore"
)
KINDS = {
    ".gitignore": ("file", "dir"),
    "README.md": ("file", "missing"),
    "link": ("missing", "symlink"),
    "made": ("missing", "dir"),
    "made/inner": ("missing", "dir"),
    "pipe": ("missing", "special"),
}


def kinds(writes: list[dict[str, dict[str, str | None]]]) -> dict[str, tuple[str, str]]:
    return {str(w["path"]): (str(w["before"]["kind"]), str(w["after"]["kind"])) for w in writes}


@requires_containment
def test_typed_mutations_from_a_command(committed_repo: Repo) -> None:
    recorder = ListRecorder()
    with support.executor(committed_repo.root, recorder=recorder) as ex:
        result = ex.execute(support.call("command_run", command=SCRIPT))
    assert result.ok and result.output is not None
    assert result.output["status"] == "succeeded", result.output
    writes = {w.path: (w.before, w.after) for w in result.effects.write}
    assert {path: (b.kind, a.kind) for path, (b, a) in writes.items()} == KINDS
    assert writes["made"][1].sha256 is None and writes["made"][0].sha256 is None
    assert writes["link"][1].sha256 == sha256_bytes(b"symlink\0calc.py")
    assert writes["pipe"][1].sha256 is not None
    assert writes["README.md"][1].sha256 is None
    assert list(writes) == sorted(writes)


def paused_after_the_command(repo: Repo) -> tuple[Recorded, ScriptedModel]:
    record = Recorded(repo.root)
    model = scripted(
        turn(call("command_run", "k1", command=SCRIPT)),
        turn(call("workspace_read", "r2", path="calc.py")),
        answer("entries made"),
    )
    with executor(repo.root) as ex:
        s = session(
            model, ex, recorder=record.recorder, limits=GuardLimits(budget=Budget(max_steps=2))
        )
        outcome = run_loop(s)
        record.finish(s, outcome)
    assert outcome.status == "paused" and outcome.guard == "budget"
    return record, model


@requires_containment
def test_kinds_survive_the_store_the_checkpoint_and_resume(committed_repo: Repo) -> None:
    record, model = paused_after_the_command(committed_repo)
    [stored] = record.store.tool_calls(record.run_id)
    assert stored.status == "succeeded" and kinds(stored.effects["write"]) == KINDS

    saved = record.checkpoints()[-1].state
    [command] = [t for t in saved["transcript"]["tools"] if t["call_id"] == "k1"]
    assert kinds(command["effects"]["write"]) == KINDS
    ledger = {w["path"]: w["after_hash"] for w in json.loads(saved["ledger"])["writes"]}
    assert ledger["made"] == "dir:-" and ledger["README.md"] is None
    assert ledger["link"] == "symlink:" + sha256_bytes(b"symlink\0calc.py")
    assert str(ledger["pipe"]).startswith("special:sha256:")

    with executor(committed_repo.root) as fresh:
        resumed = record.resume(model, fresh, limits=GuardLimits(budget=Budget(max_steps=10)))
        restored = {w.path: w.after_hash for w in resumed.ledger.state.writes}
        outcome = run_loop(resumed)
        record.finish(resumed, outcome)
    assert restored == ledger
    assert outcome.status == "completed" and outcome.text == "entries made"


def _fifo_becomes_a_file(root: Path) -> None:
    (root / "pipe").unlink()
    (root / "pipe").write_bytes(b"")


def _symlink_is_retargeted(root: Path) -> None:
    (root / "link").unlink()
    os.symlink("README.md", root / "link")


@requires_containment
@pytest.mark.parametrize("swap", [_fifo_becomes_a_file, _symlink_is_retargeted])
def test_a_swapped_entry_refuses_the_resume(
    committed_repo: Repo, swap: Callable[[Path], None]
) -> None:
    record, model = paused_after_the_command(committed_repo)
    swap(committed_repo.root)
    with (
        executor(committed_repo.root) as fresh,
        pytest.raises(ResumeRefused, match="workspace changed"),
    ):
        record.resume(model, fresh)
