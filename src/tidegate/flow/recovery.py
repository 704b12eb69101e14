"""``tidegate recover``: finish or undo apply-backs interrupted by a crash, and remove the
shadow worktrees and scratch directories that dead runs left behind (never those of a run
that is alive, in this work tree or another linked one: see ``workspace.claims``), and the
sub-agent copies and containment's private directories in the OS temp dir whose process
is dead (``workspace.owned_temp``).

A path the user edited after the crash keeps the user's bytes; the version recovery would
have written goes under ``.tidegate/recovered/<run-id>/`` and the journal is cleared, so
the next run can start. A journal recovery cannot read or apply (permissions, a read-only
file system) stays where it is, and the summary says why, in one line.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Protocol

import msgspec

from tidegate.errors import GitError
from tidegate.flow.headstart import new_run_id
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.journal import RecoveryReport, pending_journals, recover
from tidegate.workspace.lock import ApplyLock
from tidegate.workspace.owned_temp import (
    claimed_temp_dirs,
    remove_dead_owned,
    remove_dead_sandboxes_of,
)
from tidegate.workspace.repo import Repository, discover
from tidegate.workspace.shadow.leftovers import remove_leftovers


class RecoverySummary(msgspec.Struct):
    repo: str
    journals: list[RecoveryReport] = msgspec.field(default_factory=list)
    removed_shadows: list[str] = msgspec.field(default_factory=list)
    removed_scratch: list[str] = msgspec.field(default_factory=list)
    removed_copies: list[str] = msgspec.field(default_factory=list)
    """Sub-agent copies of dead processes, removed from the OS temp dir."""
    removed_sandboxes: list[str] = msgspec.field(default_factory=list)
    """Containment's private directories of dead commands, removed from the OS temp dir."""
    killed_groups: list[int] = msgspec.field(default_factory=list)
    """Process groups a dead tidegate process left running (its uncontained commands),
    killed (``exec.groups``)."""
    errors: list[str] = msgspec.field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.errors and all(not j.diverged for j in self.journals)

    def as_dict(self) -> dict[str, object]:
        return {
            "repo": self.repo,
            "journals": [
                {**msgspec.structs.asdict(j), "kept": [msgspec.structs.asdict(k) for k in j.kept]}
                for j in self.journals
            ],
            "removed_shadows": self.removed_shadows,
            "removed_scratch": self.removed_scratch,
            "removed_copies": self.removed_copies,
            "removed_sandboxes": self.removed_sandboxes,
            "killed_groups": self.killed_groups,
            "errors": self.errors,
            "clean": self.clean,
        }


def recover_repository(path: Path, rollback: bool = False) -> RecoverySummary:
    repo = discover(path)
    # The landing lock: a journal found while holding it is a dead writer's; live runs go
    # on (their shadows and scratch are claimed by live processes and left alone).
    lock = ApplyLock(repo.runtime_dir, f"recover-{new_run_id()}").acquire()
    try:
        summary = RecoverySummary(repo=str(repo.root))
        fs = LocalFS(repo.root)
        for jdir in pending_journals(repo.runtime_dir):
            try:
                summary.journals.append(recover(fs, jdir, rollback, keep_user_edits=True))
            except (OSError, ValueError, KeyError) as exc:
                summary.errors.append(
                    f"run {jdir.name}: its apply-back journal could not be "
                    f"{'undone' if rollback else 'finished'} ({_why(exc)}); it is kept in {jdir}"
                )
        remove_dead_leftovers(repo, summary)
    finally:
        lock.release()
    return summary


class Swept(Protocol):
    removed_shadows: list[str]
    removed_scratch: list[str]
    removed_copies: list[str]
    removed_sandboxes: list[str]
    killed_groups: list[int]
    errors: list[str]


def remove_dead_leftovers(repo: Repository, summary: Swept, dry_run: bool = False) -> None:
    """Remove what dead runs and processes left (shadows, scratch dirs, sub-agent copies,
    sandbox dirs, and the process groups a dead process left running), never what a live
    one owns (``dry_run``: only list them); what could not be removed, in ``errors``
    (``tidegate recover`` and ``tidegate gc``)."""
    temps = claimed_temp_dirs(repo)  # before the sweep releases the dead runs' claims
    try:
        leftovers = remove_leftovers(repo, dry_run)
        summary.removed_shadows = leftovers.shadows
        summary.removed_scratch = leftovers.scratch
    except (OSError, GitError) as exc:
        summary.errors.append(f"stale shadows could not be removed: {_why(exc)}")
    try:
        summary.removed_copies = remove_dead_owned(dry_run=dry_run)
    except OSError as exc:
        summary.errors.append(f"stale sub-agent copies could not be removed: {_why(exc)}")
    try:
        summary.removed_sandboxes = remove_dead_sandboxes_of(temps, summary.killed_groups, dry_run)
    except OSError as exc:
        summary.errors.append(f"stale sandbox directories could not be removed: {_why(exc)}")


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.errno:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{errno.errorcode.get(exc.errno, exc.errno)} ({exc.strerror})"
    if isinstance(exc, json.JSONDecodeError):
        return f"unreadable journal: {exc.msg}"
    return f"{type(exc).__name__}: {exc}"
