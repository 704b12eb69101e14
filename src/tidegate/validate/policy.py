"""Diff policy: which paths a change may touch, and how big it may be.

Every problem is reported (not just the first), one line each, so a planner can fix them
all in its next attempt.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tidegate.config import ValidationConfig
from tidegate.git import Git
from tidegate.workspace.changes import PathChange
from tidegate.workspace.fs import UnsafePathError, check_relative


@dataclass(frozen=True)
class ChangeStats:
    """Size of a change as git counts it (``--numstat``); binary files have no line counts."""

    added: int
    removed: int
    binary: tuple[str, ...]


def change_stats(git: Git, old_tree: str, new_tree: str) -> ChangeStats:
    out = git.run("diff-tree", "-r", "-z", "--no-renames", "--numstat", old_tree, new_tree).stdout
    added = removed = 0
    binary: list[str] = []
    fields = out.split(b"\0")
    for field in fields:
        if not field or b"\t" not in field:
            continue
        a, r, path = field.split(b"\t", 2)
        if a == b"-":
            binary.append(path.decode("utf-8", "surrogateescape"))
        else:
            added += int(a)
            removed += int(r)
    return ChangeStats(added, removed, tuple(binary))


def check_change(
    git: Git,
    changes: list[PathChange],
    stats: ChangeStats,
    t0_root: Path,
    config: ValidationConfig,
) -> list[str]:
    """Every policy problem of a candidate change, one line each (empty: allowed)."""
    problems: list[str] = []
    if len(changes) > config.max_files:
        problems.append(f"the change touches {len(changes)} files; the limit is {config.max_files}")
    if stats.added > config.max_lines_added:
        problems.append(
            f"the change adds {stats.added} lines; the limit is {config.max_lines_added}"
        )
    if stats.removed > config.max_lines_removed:
        problems.append(
            f"the change removes {stats.removed} lines; the limit is {config.max_lines_removed}"
        )
    written = {c.path for c in changes if c.after is not None}
    binary = [path for path in stats.binary if path in written]  # deleting one is fine
    if binary and not config.allow_binary:
        problems.append(
            f"binary content is not allowed (allow_binary = false): {', '.join(binary)}"
        )
    blobs = [c.after.blob for c in changes if c.after and c.after.mode != "160000"]
    sizes = git.blob_sizes(blobs)
    new_bytes = sum(sizes[b] for b in blobs)
    if new_bytes > config.max_bytes:
        problems.append(
            f"the changed files hold {new_bytes} bytes; the limit is {config.max_bytes}"
        )
    for change in changes:
        problems.extend(_check_path(git, change, t0_root, config.protected))
    return problems


def _check_path(
    git: Git, change: PathChange, t0_root: Path, protected: tuple[str, ...]
) -> list[str]:
    path = change.path
    try:
        parts = check_relative(path)
    except UnsafePathError as exc:
        return [str(exc)]
    if any(p.lower() == ".git" for p in parts):
        return [f"{path}: inside a .git directory"]
    if parts[0] == ".tidegate":
        return [f"{path}: inside tidegate's own .tidegate/ directory"]
    for pattern in protected:
        if glob_regex(pattern).fullmatch(path):
            return [f"{path}: protected by the pattern {pattern!r}"]
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


@cache
def glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` and ``?`` stay within a path segment; ``**`` spans segments."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))
