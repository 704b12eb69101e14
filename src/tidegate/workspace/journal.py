"""Journalled, atomic apply-back writes and their crash recovery.

Before the first write, every planned operation is recorded in
``<git-dir>/tidegate/journal/<run-id>/``: the old and the new content of each path and the
digest of each. Then each path is re-checked (compare-and-swap: the user's file must still
be what the merge was computed from) and replaced atomically. The journal is removed when
every write is done. A write that fails (an ``OSError``: permission, full disk, read-only
file system) undoes the writes already made, from the journal, before the error is
reported. After a crash, ``recover`` finds the journal and either completes the remaining
writes or restores the old content, so every file ends exactly old or exactly new; a file
the user changed after the crash keeps the user's bytes.

Order is what makes the journal trustworthy: blobs are fsynced before ``journal.json`` is
published (temp file, fsync, rename, directory fsync), and the first work-tree write comes
after that.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from tidegate.disk.faults import maybe_crash

if TYPE_CHECKING:  # annotations only: the head start imports this module for its list
    from tidegate.workspace.fs import Entry, WorkspaceFS
    from tidegate.workspace.merge_back import PlannedOp

JOURNAL_FILE = "journal.json"


class ApplyBackRace(Exception):
    """A file changed between planning and writing; the apply-back was undone."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} changed while tidegate was writing; nothing was applied")
        self.path = path


class ApplyBackWriteError(Exception):
    """A write of the apply-back failed (permission, full disk, read-only file system...).

    ``rolled_back``: every path already written was restored from the journal and the
    journal removed, so the work tree is as it was. Otherwise the restore failed too and
    the journal is kept for ``tidegate recover``; ``written`` names the paths that may
    still hold the new content."""

    def __init__(
        self, path: str | None, cause: OSError, rolled_back: bool, written: list[str]
    ) -> None:
        self.path = path
        self.cause = cause
        self.rolled_back = rolled_back
        self.written = written
        what = f"writing {path}" if path else "writing the apply-back journal"
        why = _describe(cause)
        if rolled_back:
            tail = "nothing was applied" + (
                f" ({len(written)} path(s) already written were restored)" if written else ""
            )
        else:
            tail = (
                f"restoring {', '.join(written)} failed too; the journal is kept: run "
                "`tidegate recover --rollback`"
            )
        super().__init__(f"apply-back failed {what}: {why}; {tail}")


class KeptEdit(msgspec.Struct):
    """A path the user changed after the crash: their bytes stay; ``side_copy`` holds the
    version recovery wanted to write (None when that version is "no file")."""

    path: str
    side_copy: str | None


class RecoveryReport(msgspec.Struct):
    run_id: str
    action: Literal["completed", "rolled back", "discarded"]
    finished: list[str] = msgspec.field(default_factory=list)
    diverged: list[str] = msgspec.field(default_factory=list)
    """Paths left alone while the journal stays (recovery without ``keep_user_edits``)."""
    kept: list[KeptEdit] = msgspec.field(default_factory=list)


RECOVERED_DIR = ".tidegate/recovered"


def journal_root(runtime_dir: Path) -> Path:
    return runtime_dir / "journal"


def apply_ops(fs: WorkspaceFS, ops: list[PlannedOp], runtime_dir: Path, run_id: str) -> None:
    """Write every op or none.

    Raises ApplyBackRace when a file changed since planning, ApplyBackWriteError when a
    write failed; either way after undoing the partial work from the journal."""
    if not ops:
        return
    jdir = journal_root(runtime_dir) / run_id
    # Ctrl-C and SIGTERM wait until the writes are done: only SIGKILL (or a power cut) can
    # interrupt them, and the journal covers that.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        try:
            jdir.mkdir(parents=True, exist_ok=False)  # never reuse (or remove) another's
        except OSError as exc:
            raise ApplyBackWriteError(None, exc, rolled_back=True, written=[]) from exc
        try:
            records = _write_journal(jdir, ops, run_id)
        except OSError as exc:
            # Nothing was written yet: the half-made journal is worthless.
            shutil.rmtree(jdir, ignore_errors=True)
            raise ApplyBackWriteError(None, exc, rolled_back=True, written=[]) from exc
        _write_all(fs, jdir, records)
        shutil.rmtree(jdir)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _write_all(fs: WorkspaceFS, jdir: Path, records: list[dict[str, Any]]) -> None:
    done: list[dict[str, Any]] = []
    for count, rec in enumerate(records, start=1):
        # Tests: someone edits the file after the merge was planned.
        maybe_crash("apply_back.before_cas", count)
        try:
            current = fs.read(rec["path"]).digest()
            if current != rec["old"]["digest"]:
                _abort(fs, jdir, done, None, failed=rec["path"])
                raise ApplyBackRace(rec["path"])
            maybe_crash("apply_back.before_write", count)
            done.append(rec)  # from here on the path may hold the new content
            _put(fs, jdir, rec, "new")
        except OSError as exc:
            _remove_temp(fs, rec)
            _abort(fs, jdir, done, exc, failed=rec["path"])
        maybe_crash("apply_back.after_write", count)


def _abort(
    fs: WorkspaceFS,
    jdir: Path,
    done: list[dict[str, Any]],
    cause: OSError | None,
    failed: str | None = None,
) -> None:
    """Undo ``done`` from the journal; remove the journal once the undo succeeded. Raises
    ApplyBackWriteError when ``cause`` is a write error or the undo itself fails."""
    try:
        _undo(fs, jdir, done)
    except OSError as exc:
        written = [rec["path"] for rec in done]
        raise ApplyBackWriteError(failed, cause or exc, False, written) from exc
    shutil.rmtree(jdir, ignore_errors=True)
    if cause is not None:
        written = [rec["path"] for rec in done if rec["path"] != failed]
        raise ApplyBackWriteError(failed, cause, True, written) from cause


def _describe(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno, "") if exc.errno else ""
    text = exc.strerror or str(exc)
    return f"{name} ({text})" if name else text


def pending_journals(runtime_dir: Path) -> list[Path]:
    root = journal_root(runtime_dir)
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []


def recover(
    fs: WorkspaceFS, jdir: Path, rollback: bool = False, keep_user_edits: bool = False
) -> RecoveryReport:
    """Finish (default) or undo the apply-back recorded in ``jdir``; then delete it.

    A path that holds neither side (the user edited it after the crash) keeps the user's
    bytes. With ``keep_user_edits`` the version recovery wanted is written under
    ``.tidegate/recovered/<run-id>/`` instead and the journal is removed; without it the
    path is reported in ``diverged`` and the journal stays."""
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
        elif keep_user_edits:
            report.kept.append(_side_copy(fs, jdir, rec, want, data["run_id"]))
        else:
            report.diverged.append(rec["path"])
    if not report.diverged:
        shutil.rmtree(jdir)
    return report


def _side_copy(
    fs: WorkspaceFS, jdir: Path, rec: dict[str, Any], side: str, run_id: str
) -> KeptEdit:
    """Write ``rec[side]`` under ``.tidegate/recovered/<run-id>/``, beside nothing the
    user owns, so that neither their bytes nor the journal's are lost."""
    if rec[side]["kind"] == "missing":
        return KeptEdit(rec["path"], None)
    copy = f"{RECOVERED_DIR}/{run_id}/{rec['path']}"
    _put(fs, jdir, {**rec, "path": copy, "tmp": ".tidegate-tmp-recovered"}, side)
    return KeptEdit(rec["path"], copy)


def _write_journal(jdir: Path, ops: list[PlannedOp], run_id: str) -> list[dict[str, Any]]:
    records = []
    for i, op in enumerate(ops):
        rec = {
            "path": op.path,
            "tmp": f".tidegate-tmp-{run_id}-{i}",
            "old": _save(jdir, f"{i}.old", op.old),
            "new": _save(jdir, f"{i}.new", op.new),
        }
        records.append(rec)
    # The blobs are durable before the journal that points at them is published: a crash
    # in between leaves no journal, and recovery discards the directory.
    maybe_crash("journal.blobs_saved")
    tmp = jdir / (JOURNAL_FILE + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump({"version": 1, "run_id": run_id, "ops": records}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, jdir / JOURNAL_FILE)
    _fsync(jdir)
    _fsync(jdir.parent)  # the journal directory's own entry
    maybe_crash("journal.published")
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
    """Put the old side back on every path of ``done`` that holds the new one (a path that
    holds neither was changed by someone else meanwhile: theirs to keep)."""
    for count, rec in enumerate(reversed(done), start=1):
        maybe_crash("apply_back.before_undo", count)
        if fs.read(rec["path"]).digest() == rec["new"]["digest"]:
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
