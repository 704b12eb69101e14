"""``tidegate recover``: finish or undo apply-backs interrupted by a crash, and remove the
shadow worktrees that crashed runs left behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tidegate.flow.transaction import new_run_id
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.journal import RecoveryReport, pending_journals, recover
from tidegate.workspace.lock import RunLock
from tidegate.workspace.repo import discover
from tidegate.workspace.shadow import remove_stale_shadows


@dataclass
class RecoverySummary:
    repo: str
    journals: list[RecoveryReport] = field(default_factory=list)
    removed_shadows: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return all(not j.diverged for j in self.journals)

    def as_dict(self) -> dict[str, object]:
        return {
            "repo": self.repo,
            "journals": [j.__dict__ for j in self.journals],
            "removed_shadows": self.removed_shadows,
            "clean": self.clean,
        }


def recover_repository(path: Path, rollback: bool = False) -> RecoverySummary:
    repo = discover(path)
    with RunLock(repo.runtime_dir, f"recover-{new_run_id()}"):
        summary = RecoverySummary(repo=str(repo.root))
        fs = LocalFS(repo.root)
        for jdir in pending_journals(repo.runtime_dir):
            summary.journals.append(recover(fs, jdir, rollback=rollback))
        summary.removed_shadows = remove_stale_shadows(repo)
    return summary
