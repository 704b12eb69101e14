"""Journalled, atomic apply-back writes and their crash recovery.

Before the first write, every planned operation is recorded in
``<git-dir>/tidegate/journal/<run-id>/``: the old and the new content of each path and the
digest of each. Then each path is re-checked (compare-and-swap: the user's file must still
be what the merge was computed from) and replaced atomically. The journal is removed when
every write is done. After a crash, ``recover`` finds the journal and either completes the
remaining writes or restores the old content, so every file ends exactly old or exactly new.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tidegate.faults import maybe_crash
from tidegate.workspace.fs import Entry, WorkspaceFS
from tidegate.workspace.merge_back import PlannedOp

JOURNAL_FILE = "journal.json"


class ApplyBackRace(Exception):
    """A file changed between planning and writing; the apply-back was undone."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} changed while tidegate was writing; nothing was applied")
        self.path = path


@dataclass
class RecoveryReport:
    run_id: str
    action: Literal["completed", "rolled back", "discarded"]
    finished: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)


def journal_root(runtime_dir: Path) -> Path:
    return runtime_dir / "journal"


def apply_ops(fs: WorkspaceFS, ops: list[PlannedOp], runtime_dir: Path, run_id: str) -> None:
    """Write every op or none (raises ApplyBackRace after undoing partial work)."""
    if not ops:
        return
    jdir = journal_root(runtime_dir) / run_id
    # Ctrl-C and SIGTERM wait until the writes are done: only SIGKILL (or a power cut) can
    # interrupt them, and the journal covers that.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        records = _write_journal(jdir, ops, run_id)
        done: list[dict[str, Any]] = []
        for count, rec in enumerate(records, start=1):
            current = fs.read(rec["path"]).digest()
            if current != rec["old"]["digest"]:
                _undo(fs, jdir, done)
                shutil.rmtree(jdir, ignore_errors=True)
                raise ApplyBackRace(rec["path"])
            _put(fs, jdir, rec, "new")
            done.append(rec)
            maybe_crash("apply_back.after_write", count)
        shutil.rmtree(jdir)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def pending_journals(runtime_dir: Path) -> list[Path]:
    root = journal_root(runtime_dir)
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def recover(fs: WorkspaceFS, jdir: Path, rollback: bool = False) -> RecoveryReport:
    """Finish (default) or undo the apply-back recorded in ``jdir``; then delete it."""
    journal = jdir / JOURNAL_FILE
    if not journal.exists():
        # The crash came before the journal was complete, hence before any write.
        shutil.rmtree(jdir, ignore_errors=True)
        return RecoveryReport(jdir.name, "discarded")
    data = json.loads(journal.read_text())
    want, other = ("old", "new") if rollback else ("new", "old")
    report = RecoveryReport(data["run_id"], "rolled back" if rollback else "completed")
    for rec in data["ops"]:
        _remove_temp(fs, rec)
        current = fs.read(rec["path"]).digest()
        if current == rec[want]["digest"]:
            continue
        if current == rec[other]["digest"]:
            _put(fs, jdir, rec, want)
            report.finished.append(rec["path"])
        else:
            report.diverged.append(rec["path"])
    if not report.diverged:
        shutil.rmtree(jdir)
    return report


def _write_journal(jdir: Path, ops: list[PlannedOp], run_id: str) -> list[dict[str, Any]]:
    jdir.mkdir(parents=True, exist_ok=False)
    records = []
    for i, op in enumerate(ops):
        rec = {
            "path": op.path,
            "tmp": f".tidegate-tmp-{run_id}-{i}",
            "old": _save(jdir, f"{i}.old", op.old),
            "new": _save(jdir, f"{i}.new", op.new),
        }
        records.append(rec)
    tmp = jdir / (JOURNAL_FILE + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump({"version": 1, "run_id": run_id, "ops": records}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, jdir / JOURNAL_FILE)
    _fsync(jdir)
    return records


def _save(jdir: Path, name: str, entry: Entry) -> dict[str, Any]:
    rec: dict[str, Any] = {"kind": entry.kind, "mode": entry.mode, "digest": entry.digest()}
    if entry.content is not None:
        blob = jdir / name
        with blob.open("wb") as fh:
            fh.write(entry.content)
            fh.flush()
            os.fsync(fh.fileno())
        rec["file"] = name
    return rec


def _put(fs: WorkspaceFS, jdir: Path, rec: dict[str, Any], side: str) -> None:
    """Make the work tree hold ``rec[side]`` at ``rec['path']``."""
    state = rec[side]
    path = rec["path"]
    if state["kind"] == "missing":
        if fs.read(path).kind != "missing":
            fs.remove(path)
        return
    content = (jdir / state["file"]).read_bytes()
    if state["kind"] == "symlink":
        fs.write_symlink(path, content, rec["tmp"])
    elif state["kind"] == "file":
        fs.write_file(path, content, state["mode"], rec["tmp"])
    else:
        raise ValueError(f"{path}: cannot restore a {state['kind']}")


def _undo(fs: WorkspaceFS, jdir: Path, done: list[dict[str, Any]]) -> None:
    for rec in reversed(done):
        _put(fs, jdir, rec, "old")


def _remove_temp(fs: WorkspaceFS, rec: dict[str, Any]) -> None:
    parent = (fs.root / rec["path"]).parent
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(parent / rec["tmp"])


def _fsync(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
