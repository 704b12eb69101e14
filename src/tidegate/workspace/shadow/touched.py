"""What tidegate wrote in a shadow's work tree since it was exactly HEAD: the record
one run leaves for the next one's undo, and the path lists the undo works from."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec

from tidegate.workspace.lock import pool_name
from tidegate.workspace.repo import Repository

TOUCHED = ".touched"
"""Beside a pool slot's record (``pool_name(slot, TOUCHED)``): what the slot's pooled
shadow's last run wrote in its work tree, recorded when that run ended knowing it exactly
(``Touched``); taken -- read and removed -- by the next cleaning, so a run that dies leaves
none and the next one cleans in full."""
UNDO_LIMIT = 1000
"""More touched paths than this: the full cleaning (the undo passes paths as arguments)."""
OWN_DIR = ".tidegate"
"""tidegate's own directory: the model planner keeps plan notes there in the shadow."""

Stamp = tuple[bytes, int, int, int]
"""The shadow's HEAD file and its index's (inode, size, mtime): git's state of the shadow."""
Marks = list[tuple[str, int]]
"""The mtimes of the shadow's root directory ("") and of the directories in it."""


class Touched(msgspec.Struct):
    """Every path tidegate may have written in a shadow's work tree since the work tree
    was last exactly its HEAD: ``tracked``, paths HEAD has (checked out again by the undo),
    and ``untracked``, paths HEAD lacks and the new directories above them (removed with
    whatever is beneath). ``stamp`` is git's state of the shadow then: if anything else
    wrote its index or moved its HEAD since, the undo refuses and the full cleaning runs.
    ``marks``, taken when a run leaves the record for the next one, are a tripwire for
    files made or removed between runs at the top of the shadow: they must not change
    either. Deeper, the pool is trusted to be tidegate's alone (docs/architecture.md)."""

    stamp: Stamp | None
    tracked: set[str] = msgspec.field(default_factory=set)
    untracked: set[str] = msgspec.field(default_factory=set)
    marks: Marks | None = None

    def __len__(self) -> int:
        return len(self.tracked) + len(self.untracked)


def outermost(paths: set[str]) -> list[str]:
    """``paths`` without those beneath another of them: given a directory and a file in
    it, ``git clean`` descends to the file and keeps the directory."""
    kept: list[str] = []
    for path in sorted(paths, key=lambda p: p.split("/")):
        if not kept or not path.startswith(kept[-1] + "/"):
            kept.append(path)
    return kept


def plain_changes(listing: bytes) -> list[bytes] | None:
    """The paths of ``git status --porcelain=v2 -z`` when every entry is an ordinary change
    of a file or symlink ("1 XY N..." entries), else None."""
    paths: list[bytes] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        fields = entry.split(b" ", 8)
        if len(fields) != 9 or fields[0] != b"1" or fields[2] != b"N...":
            return None
        paths.append(fields[8])
    return paths


def take_touched(repo: Repository, shadow: Path, slot: int) -> Touched | None:
    """The last run's record of what it wrote in pool slot ``slot``'s ``shadow`` (removed
    here: it is true once), or None when there is none that fits the shadow at ``shadow``
    as it is now."""
    record = repo.runtime_dir / pool_name(slot, TOUCHED)
    try:
        text = record.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    record.unlink(missing_ok=True)
    try:
        data = json.loads(text)
        ino, size, mtime = (int(v) for v in data["index"])
        head = str(data["head"]).encode("ascii")
        tracked = {str(p) for p in data["tracked"]}
        untracked = {str(p) for p in data["untracked"]}
        marks = [(str(name), int(when)) for name, when in data["marks"]]
        fits = data["version"] == 1 and data["shadow"] == str(shadow)
    except (ValueError, KeyError, TypeError, UnicodeError):
        return None
    if not fits or not marks:
        return None  # its paths are git's to confine: pathspecs, literal, of the work tree
    return Touched((head, ino, size, mtime), tracked, untracked, marks)


def record_touched(
    repo: Repository, slot: int, shadow: Path, touched: Touched, stamp: Stamp, marks: Marks
) -> None:
    """Write ``touched`` (its ``stamp``) and ``marks`` of pool slot ``slot``'s shadow at
    ``shadow`` for the next run, atomically; on failure no record is left."""
    record = repo.runtime_dir / pool_name(slot, TOUCHED)
    head, ino, size, mtime = stamp
    data = {
        "version": 1,
        "shadow": str(shadow),
        "head": head.decode("ascii", "replace"),
        "index": [ino, size, mtime],
        "marks": marks,
        "tracked": sorted(touched.tracked),
        "untracked": sorted(touched.untracked),
    }
    tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data), encoding="utf-8", errors="surrogateescape")
        os.replace(tmp, record)
    except OSError:
        tmp.unlink(missing_ok=True)
        record.unlink(missing_ok=True)
