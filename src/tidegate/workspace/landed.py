"""The order in which changes landed in a work tree: ``<git-dir>/tidegate/landed.log``.

One JSON line per landing (a run's APPLY_BACK, ``apply``, ``undo``), appended by the
holder of the landing lock (``workspace.lock.ApplyLock``), so the lines are in the order
the changes reached the work tree and each line's number is its place in that order. A
run notes the count when it takes T0; at its own landing, the lines after that count are
the runs that landed between its T0 and its APPLY_BACK: what its merge met besides the
user's edits. Never read through a link; a line that is not what this module writes
is skipped.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

LOG = "landed.log"


def _path(runtime_dir: Path) -> Path:
    return runtime_dir / LOG


def _lines(runtime_dir: Path) -> list[dict[str, Any]]:
    try:
        fd = os.open(_path(runtime_dir), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read()
    out: list[dict[str, Any]] = []
    for line in raw.split(b"\n"):
        try:
            entry = json.loads(line) if line.strip() else None
        except ValueError:
            entry = None
        if isinstance(entry, dict) and isinstance(entry.get("run_id"), str):
            out.append(entry)
    return out


def count(runtime_dir: Path) -> int:
    """How many landings the work tree has seen (taken with T0)."""
    return len(_lines(runtime_dir))


def since(runtime_dir: Path, seen: int) -> list[dict[str, Any]]:
    """The landings after the first ``seen``, in order."""
    return _lines(runtime_dir)[seen:]


def append(runtime_dir: Path, run_id: str, action: str, paths: int) -> int:
    """Record a landing (the caller holds the landing lock); returns its place, from 1."""
    place = count(runtime_dir) + 1
    entry = {"seq": place, "run_id": run_id, "action": action, "paths": paths, "at": time.time()}
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(_path(runtime_dir), flags, 0o644)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)
    return place
