"""Matrix 17: resume rejects a prompt configuration different from the checkpoint's.

A run records its prompt hashes in a checkpoint file. Resuming reassembles the prompt from
the configuration given now; if anything differs (policy, host facts, trusted instructions,
the task, the tools or the model), the hashes differ and the resume is refused with an
error naming what changed. The same configuration resumes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.prompt.helpers import config, snapshot
from tidegate.prompt import (
    PromptHashes,
    ResumeIncompatible,
    RunTask,
    TaskContract,
    check_resume,
    require_resume_compatible,
)

TASK = RunTask(task_id="t-17", workspace_root="/workspace/project", goal="Fix the parser.")


def checkpoint(path: Path, **prompt_changes: Any) -> Path:
    cfg = config(**prompt_changes)
    hashes = snapshot(cfg).hashes(TaskContract.from_task(TASK, cfg))
    path.write_text(json.dumps({"prompt": hashes.model_dump()}), encoding="utf-8")
    return path


def resume_hashes(task: RunTask = TASK, **prompt_changes: Any) -> PromptHashes:
    cfg = config(**prompt_changes)
    return snapshot(cfg).hashes(TaskContract.from_task(task, cfg))


def recorded(path: Path) -> PromptHashes:
    return PromptHashes.model_validate(json.loads(path.read_text(encoding="utf-8"))["prompt"])


def test_the_same_configuration_resumes(tmp_path: Path) -> None:
    saved = recorded(checkpoint(tmp_path / "cp.json"))
    require_resume_compatible(saved, resume_hashes())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"approvalProfile": "strict"}, ["prompt", "system_prompt"]),
        ({"writeAccess": "denied"}, ["prompt", "system_prompt"]),
        ({"dirtyStateSummary": "modified: other.py"}, ["prompt", "system_prompt"]),
        ({"trustedWorkspaceInstructions": None}, ["prompt", "system_prompt"]),
        ({"complexity": "complex"}, ["prompt", "system_prompt", "task_contract"]),
    ],
)
def test_a_different_configuration_is_rejected(
    tmp_path: Path, change: dict[str, Any], expected: list[str]
) -> None:
    saved = recorded(checkpoint(tmp_path / "cp.json"))
    current = resume_hashes(**change)
    assert check_resume(saved, current) == expected
    with pytest.raises(ResumeIncompatible, match="cannot resume"):
        require_resume_compatible(saved, current)


def test_a_different_task_is_rejected(tmp_path: Path) -> None:
    saved = recorded(checkpoint(tmp_path / "cp.json"))
    other = TASK.model_copy(update={"goal": "Rewrite the parser."})
    assert check_resume(saved, resume_hashes(task=other)) == ["task_contract"]


def test_a_tampered_checkpoint_hash_is_rejected(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "cp.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["prompt"]["registry"] = "sha256:" + "f" * 64
    path.write_text(json.dumps(data), encoding="utf-8")
    assert check_resume(recorded(path), resume_hashes()) == ["registry"]
