"""Diff policy: which paths a change may touch, and how big it may be.

A first version of the checks; limits become configurable later.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

from tidegate.git import Git
from tidegate.workspace.changes import PathChange
from tidegate.workspace.fs import UnsafePathError, check_relative


@dataclass(frozen=True)
class Limits:
    max_files: int = 200
    max_bytes: int = 10 * 1024 * 1024


def check_change(git: Git, changes: list[PathChange], t0_root: Path, limits: Limits) -> list[str]:
    """Every policy problem of a candidate change, as one line each (empty: allowed)."""
    problems: list[str] = []
    if len(changes) > limits.max_files:
        problems.append(f"the change touches {len(changes)} files; the limit is {limits.max_files}")
    for change in changes:
        problems.extend(_check_path(git, change, t0_root))
    return problems


def _check_path(git: Git, change: PathChange, t0_root: Path) -> list[str]:
    path = change.path
    try:
        parts = check_relative(path)
    except UnsafePathError as exc:
        return [str(exc)]
    if any(p.lower() == ".git" for p in parts):
        return [f"{path}: inside a .git directory"]
    if parts[0] == ".tidegate":
        return [f"{path}: inside tidegate's own .tidegate/ directory"]
    current = t0_root
    for name in parts[:-1]:
        current = current / name
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return [f"{path}: passes through the symlink {current.relative_to(t0_root)}"]
        except FileNotFoundError:
            break
    if change.after is not None and change.after.mode == "120000":
        target = git.blob_bytes(change.after.blob).decode("utf-8", "surrogateescape")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            return [f"{path}: a symlink pointing outside the repository ({target})"]
    return []
