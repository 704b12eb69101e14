"""Undoing tool calls from the bytes they replaced (``store.blobs``, kept by ``undo_keep``).

``undo_calls`` plans every path first, on a view of the work tree as it is now, walking the
calls newest first (one call, or a whole session); then it either changes nothing or
writes the plan:

* a file the call replaced: if it still has the call's "after" hash, its "before" bytes are
  restored; if it was edited since, ``git merge-file`` (through ``tidegate.git``) merges
  base = the call's "after" bytes (only when kept), ours = the file now, theirs = the
  "before" bytes; without the "after" bytes the path is refused;
* a file the call deleted is written back (when the path is still free);
* a file the call created is removed only while it still has the call's "after" hash.

Anything else -- a merge conflict, bytes not kept, the path now a symlink, a directory or
a special file, a parent that is a link -- is a conflict: nothing in the work tree
changes, a ``PATH.rej`` note is written next to each such path, and the calls stay
undoable. A tampered blob refuses the whole undo. Secret-shaped files (never kept) are
skipped with a note. No link is followed: every read and write goes through directory
descriptors (``disk.linksafe``, ``workspace.fs.LocalFS``). The writes go through
APPLY_BACK's journal under the repository lock: compare-and-swap per path, all or none,
and ``tidegate recover`` finishes (or ``--rollback`` undoes) one a crash interrupted. The
git index is never touched. Undone calls are marked in the session's index; a second undo
is refused.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import os
import secrets
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from tidegate.disk.linksafe import WriteRefused, opened_dir, replace_file
from tidegate.errors import UsageError
from tidegate.git.command import Git
from tidegate.store.blobs import ByteStore, check_id
from tidegate.workspace.fs import Entry, LocalFS
from tidegate.workspace.journal import (
    ApplyBackRace,
    ApplyBackWriteError,
    apply_ops,
)
from tidegate.workspace.lock import landing
from tidegate.workspace.merge_back import PlannedOp
from tidegate.workspace.repo import discover

_MISSING = "missing"


class PathOutcome(msgspec.Struct):
    path: str
    action: str
    """restored, removed, merged, unchanged, skipped or conflict."""
    note: str = ""


class UndoReport(msgspec.Struct):
    session: str
    calls: list[str]
    outcomes: list[PathOutcome] = msgspec.field(default_factory=list)
    applied: bool = False
    rejects: list[str] = msgspec.field(default_factory=list)

    @property
    def conflicts(self) -> list[PathOutcome]:
        return [o for o in self.outcomes if o.action == "conflict"]


class _Unsafe(Exception):
    """The path is not a regular file or missing (a link, a directory, a special file)."""


class _State(msgspec.Struct):
    kind: str  # "file" or "missing"
    data: bytes | None = None
    mode: int | None = None

    @property
    def sha256(self) -> str | None:
        return None if self.data is None else "sha256:" + hashlib.sha256(self.data).hexdigest()


def _read(root: Path, rel: str) -> _State:
    parts = PurePosixPath(rel).parts
    if not parts or any(p in ("", ".", "..") for p in parts) or PurePosixPath(rel).is_absolute():
        raise _Unsafe(f"{rel!r} is not a path inside the work tree")
    try:
        with opened_dir(root, *parts[:-1]) as fd:
            try:
                st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return _State(_MISSING)
            if not stat.S_ISREG(st.st_mode):
                raise _Unsafe(f"{rel} is now {_kind(st.st_mode)}; not followed")
            f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            with os.fdopen(f, "rb") as fh:
                return _State("file", fh.read(), stat.S_IMODE(st.st_mode))
    except FileNotFoundError:
        return _State(_MISSING)
    except WriteRefused as exc:
        raise _Unsafe(f"{rel}: a parent is not a plain directory ({exc}); not followed") from exc
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _Unsafe(f"{rel}: a parent is not a plain directory; not followed") from exc
        raise


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a special file"


class _Planner:
    def __init__(self, store: ByteStore, root: Path) -> None:
        self.store = store
        self.root = root
        self.view: dict[str, _State] = {}
        self.original: dict[str, _State] = {}
        self.unsafe: dict[str, str] = {}
        self.outcomes: list[PathOutcome] = []
        self.rejects: dict[str, str] = {}

    def now(self, rel: str) -> _State | None:
        if rel in self.unsafe:
            return None
        if rel not in self.view:
            try:
                self.original[rel] = self.view[rel] = _read(self.root, rel)
            except _Unsafe as exc:
                self.unsafe[rel] = str(exc)
                return None
        return self.view[rel]

    def conflict(self, rel: str, note: str, diff: str = "") -> None:
        self.outcomes.append(PathOutcome(rel, "conflict", note))
        self.rejects[rel] = self.rejects.get(rel, "") + f"# tidegate undo: {note}\n{diff}"

    def plan(self, call: dict[str, Any]) -> None:
        for entry in reversed(call["paths"]):
            self.plan_path(call["call_id"], entry)

    def plan_path(self, call_id: str, entry: dict[str, Any]) -> None:
        rel = str(entry["path"])
        before, after = entry["before"], entry["after"]
        if entry.get("withheld"):
            self.outcomes.append(
                PathOutcome(rel, "skipped", f"call {call_id}: {entry['withheld']}")
            )
            return
        cur = self.now(rel)
        if cur is None:
            self.conflict(rel, f"call {call_id}: {self.unsafe[rel]}")
            return
        if cur.sha256 == before.get("sha256") and cur.kind == before["kind"]:
            mode = _mode_back(before, after, cur)
            if cur.kind == "file" and mode != cur.mode:
                self.set(rel, _State("file", cur.data, mode), "restored", "its mode")
            else:
                self.outcomes.append(PathOutcome(rel, "unchanged", "already as before the call"))
            return
        if before["kind"] == "file":
            if not before.get("kept"):
                why = before.get("not_kept", "its bytes were not kept")
                self.conflict(rel, f"call {call_id}: cannot restore ({why})")
                return
            old = self.store.get(before["kept"])  # BlobTampered refuses the whole undo
            mode = int(before["mode"], 8) if before.get("mode") else (cur.mode or 0o644)
            if cur.kind == _MISSING:
                if after["kind"] == _MISSING:
                    self.set(rel, _State("file", old, mode), "restored", "the deleted file")
                else:
                    self.conflict(rel, f"call {call_id}: removed since the call; not restored")
                return
            if after["kind"] == "file" and cur.sha256 == after["sha256"]:
                self.set(rel, _State("file", old, _mode_back(before, after, cur)), "restored", "")
                return
            if after["kind"] == "file" and after.get("kept"):
                base = self.store.get(after["kept"])
                assert cur.data is not None
                merged, clean = self.merge(cur.data, base, old)
                if clean:
                    self.set(rel, _State("file", merged, cur.mode), "merged", "edited since")
                else:
                    self.conflict(
                        rel,
                        f"call {call_id}: edited since and the undo conflicts",
                        _diff(rel, base, old),
                    )
                return
            self.conflict(
                rel, f"call {call_id}: changed since the call and its after bytes are not kept"
            )
            return
        # the call created the file
        if cur.kind == "file" and cur.sha256 == after.get("sha256"):
            self.set(rel, _State(_MISSING), "removed", "created by the call")
        elif cur.kind == _MISSING:
            self.outcomes.append(PathOutcome(rel, "unchanged", "already removed"))
        else:
            self.conflict(rel, f"call {call_id}: created by the call and edited since; kept")

    def set(self, rel: str, state: _State, action: str, note: str) -> None:
        self.view[rel] = state
        self.outcomes.append(PathOutcome(rel, action, note))

    def merge(self, ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, bool]:
        if any(b"\0" in data[:8000] for data in (ours, base, theirs)):
            return b"", False
        with tempfile.TemporaryDirectory(prefix="tidegate-undo-") as tmp:
            names = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                path = Path(tmp, name)
                path.write_bytes(data)
                names.append(str(path))
            res = Git(Path(tmp)).run(
                "merge-file", "-p", "-L", "yours", "-L", "after", "-L", "before", *names,
                check=False,
            )  # fmt: skip
        return res.stdout, res.returncode == 0


def _mode_back(before: dict[str, Any], after: dict[str, Any], cur: _State) -> int | None:
    """The permission bits to restore: the call's "before" ones while the file still has
    the ones the call left (or the call's are not known); else the file's own."""
    if not before.get("mode") or cur.mode is None:
        return cur.mode
    if after.get("mode") and int(after["mode"], 8) != cur.mode:
        return cur.mode  # changed since: yours
    return int(before["mode"], 8)


def _diff(rel: str, new: bytes, old: bytes) -> str:
    """The undo that was refused, as a unified diff (the call's after -> before)."""
    if b"\0" in new[:8000] or b"\0" in old[:8000]:
        return f"# binary file {rel}\n"
    lines = difflib.unified_diff(
        new.decode("utf-8", "surrogateescape").splitlines(keepends=True),
        old.decode("utf-8", "surrogateescape").splitlines(keepends=True),
        f"a/{rel}",
        f"b/{rel}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def undo_calls(
    store: ByteStore,
    root: Path,
    *,
    call_id: str | None = None,
    session_id: str | None = None,
    runtime_dir: Path | None = None,
) -> UndoReport:
    """Undo one call (``call_id``, in ``session_id`` when given) or a whole session, in
    the work tree at or below ``root`` (the repository's) that the session ran in.
    ``runtime_dir``: the repository's (for its lock and the journal; found from ``root``
    when not given)."""
    if call_id is None and session_id is None:
        raise UsageError("undo: give a call ID or a session ID")
    if session_id == "latest":
        session_id = store.latest_session()
    if call_id is not None:
        check_id(call_id, "call")
        if session_id is None:
            session_id, found = store.find_call(call_id)
            call_id = str(found["call_id"])
    assert session_id is not None
    check_id(session_id, "session")
    if session_id not in store.sessions():
        raise UsageError(f"session {session_id}: no kept bytes for it (not recorded, or pruned)")
    index = store.session(session_id)
    calls: Sequence[dict[str, Any]] = index["calls"]
    if call_id is not None:
        chosen = [c for c in calls if c["call_id"] == call_id]
        if not chosen:
            raise UsageError(f"call {call_id}: not in session {session_id}")
        if chosen[0].get("undone"):
            raise UsageError(f"call {call_id}: already undone")
    else:
        chosen = [c for c in calls if not c.get("undone")]
        if not chosen:
            raise UsageError(f"session {session_id}: nothing left to undo")
    repo_root = root
    root = _workspace(index, root)
    runtime = runtime_dir if runtime_dir is not None else discover(repo_root).runtime_dir
    with landing(runtime, f"undo-{session_id}"):  # no run lands meanwhile
        return _undo(store, index, chosen, session_id, repo_root, root, runtime)


def _undo(
    store: ByteStore,
    index: dict[str, Any],
    chosen: list[dict[str, Any]],
    session_id: str,
    repo_root: Path,
    root: Path,
    runtime: Path,
) -> UndoReport:
    planner = _Planner(store, root)
    for call in reversed(chosen):
        planner.plan(call)
    report = UndoReport(session_id, [c["call_id"] for c in chosen], planner.outcomes)
    if report.conflicts:
        report.rejects = _write_rejects(root, planner.rejects)
        return report
    _apply(planner, repo_root, root, runtime, f"undo-{session_id}-{secrets.token_hex(4)}")
    for call in chosen:
        call["undone"] = True
    store.save_session(index)
    report.applied = True
    return report


def _workspace(index: dict[str, Any], repo_root: Path) -> Path:
    """The work tree the session's calls ran in: the one its index names, which must be
    ``repo_root`` or inside it (else the undo is refused)."""
    named = index.get("root")
    if named is None:
        return repo_root
    where = Path(os.path.realpath(str(named)))
    top = Path(os.path.realpath(repo_root))
    if where != top and top not in where.parents:
        raise UsageError(f"session {index['session']}: its workspace {where} is not in {top}")
    return where


def _apply(planner: _Planner, repo_root: Path, root: Path, runtime: Path, journal: str) -> None:
    """Write the plan through APPLY_BACK's journal (``workspace.journal``): each path is
    compared-and-swapped against what was planned from, a failed write rolls back the
    others, and a crash is finished or rolled back by ``tidegate recover``."""
    prefix = PurePosixPath(os.path.relpath(root, repo_root))
    ops = []
    for rel, state in planner.view.items():
        original = planner.original[rel]
        if (state.kind, state.sha256, state.mode) == (
            original.kind,
            original.sha256,
            original.mode,
        ):
            continue
        path = str(prefix / rel) if str(prefix) != "." else rel
        ops.append(PlannedOp(path, _entry(original), _entry(state)))
    try:
        apply_ops(LocalFS(repo_root), ops, runtime, journal)
    except ApplyBackRace as exc:
        raise UsageError(
            f"undo: {exc.path} changed while it was being undone; nothing changed"
        ) from exc
    except ApplyBackWriteError as exc:
        raise UsageError(f"undo: {str(exc).replace('apply-back', 'undo')}") from exc


def _entry(state: _State) -> Entry:
    if state.kind == _MISSING:
        return Entry("missing")
    return Entry("file", state.data, state.mode if state.mode is not None else 0o644)


def _write_rejects(root: Path, rejects: dict[str, str]) -> list[str]:
    written = []
    for rel, text in sorted(rejects.items()):
        parts = PurePosixPath(rel).parts
        with contextlib.suppress(OSError, WriteRefused), opened_dir(root, *parts[:-1]) as fd:
            replace_file(fd, parts[-1] + ".rej", text.encode(), mode=0o644, shown=rel)
            written.append(rel + ".rej")
    return written
