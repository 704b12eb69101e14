"""Repository shapes a change cannot take through tidegate, refused in VALIDATE.

Each is a change git can represent but the apply-back could not reproduce as plain
unstaged edits of the user's work tree:

* a submodule (gitlink) changed, created, deleted, or replaced by files: its content is
  another repository, which the user commits in;
* a file and a directory swapping places (``a`` -> ``a/b.txt``, ``d/x`` -> ``d``): one
  run's writes would have to remove a directory the user may still have files in;
* a path outside the user's sparse checkout (skip-worktree in their index): it is not in
  the work tree, so there is nothing to merge the change into.

``why_missing`` explains, for a planner's error, why a named path has no file at T0.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path

from tidegate.git.command import Git
from tidegate.workspace.changes import PathChange
from tidegate.workspace.fs import UnsafePathError, check_relative

GITLINK = "160000"
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}
_ARGV_CHUNK = 500


def shape_problems(git: Git, changes: list[PathChange], index: Path | None = None) -> list[str]:
    """One line per path of ``changes`` whose shape the apply-back cannot take. ``git``
    runs in the user's work tree (its index is only read)."""
    sparse = [] if _no_skip_worktree(index) else _outside_sparse(git, changes)
    return [*_submodules(changes), *_swaps(changes), *sparse]


def _is_gitlink(change: PathChange) -> bool:
    return any(v is not None and v.mode == GITLINK for v in (change.before, change.after))


def _submodules(changes: list[PathChange]) -> list[str]:
    return [
        f"{c.path}: a submodule; tidegate does not change submodules (commit inside it)"
        for c in changes
        if _is_gitlink(c)
    ]


def _swaps(changes: list[PathChange]) -> list[str]:
    """A path deleted as a file while paths beneath it are created, or the reverse."""
    by_path = {c.path: c for c in changes}
    problems: list[str] = []
    for change in changes:
        parts = change.path.split("/")
        for depth in range(1, len(parts)):
            above = by_path.get("/".join(parts[:depth]))
            if above is None:
                continue
            if _is_gitlink(above):
                break  # reported as a submodule change
            if above.after is None and change.after is not None:
                problems.append(
                    f"{above.path}: the change replaces this file with a directory "
                    f"({change.path}); a file and a directory cannot swap places in one run"
                )
            elif above.before is None and change.before is not None:
                problems.append(
                    f"{above.path}: the change replaces the directory holding {change.path} "
                    "with a file; a file and a directory cannot swap places in one run"
                )
            break
    return sorted(set(problems))


def _no_skip_worktree(index: Path | None) -> bool:
    """The user's ``index`` cannot hold a skip-worktree entry, read from its header alone:
    a version 2 index has no extended flags (git writes version 3 as soon as an entry needs
    them, and 2 again once none does) and it is not split (a shared part could differ)."""
    if index is None:
        return False
    try:
        with open(index, "rb") as fh:
            head = fh.read(8)
        if head[:4] != b"DIRC" or int.from_bytes(head[4:8], "big") != 2:
            return False
        return not any(name.startswith("sharedindex.") for name in os.listdir(index.parent))
    except OSError:
        return False


def _outside_sparse(git: Git, changes: list[PathChange]) -> list[str]:
    existing = [c.path for c in changes if c.before is not None]
    out = b""
    for start in range(0, len(existing), _ARGV_CHUNK):  # a change may name many paths
        chunk = existing[start : start + _ARGV_CHUNK]
        out += git.run("ls-files", "-t", "-z", "--", *chunk, env=_LITERAL, check=False).stdout
    problems = []
    for record in out.split(b"\0"):
        tag, _, raw = record.partition(b" ")
        if tag == b"S":
            path = raw.decode("utf-8", "surrogateescape")
            problems.append(
                f"{path}: outside your sparse checkout (skip-worktree in your index, so T0 "
                "does not hold your work tree's file); widen the checkout, or clear the bit"
            )
    return problems


def why_missing(t0_root: Path, path: str) -> str:
    """Why there is no regular file at ``path`` in the T0 work tree at ``t0_root`` (a
    shadow: a work tree at the T0 commit, sparse when the user's is)."""
    try:
        parts = check_relative(path)
    except UnsafePathError as exc:
        return str(exc)
    entries = _t0_entries(Git(t0_root), parts)
    submodule = next((p for p, mode in entries.items() if mode == GITLINK), None)
    if submodule == path:
        return f"{path} is the submodule {path}; tidegate does not change submodules"
    if submodule is not None:
        return f"{path} is inside the submodule {submodule}; tidegate does not change submodules"
    current = t0_root
    for depth, name in enumerate(parts, start=1):
        current = current / name
        shown = "/".join(parts[:depth])
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break
        last = depth == len(parts)
        if stat.S_ISLNK(mode):
            return _through_symlink(current, shown, parts[depth:], last)
        if last and stat.S_ISDIR(mode):
            return f"{path} is a directory at T0, not a file"
        if not last and not stat.S_ISDIR(mode):
            return f"{shown} is a file at T0, not a directory"
    if path in entries:
        return (
            f"{path} is outside your sparse checkout (tracked, but not in the work tree); "
            "widen the checkout to change it"
        )
    return "no such file at T0"


def _through_symlink(link: Path, shown: str, rest: list[str], last: bool) -> str:
    target = os.readlink(link)
    if last:
        return f"{shown} is a symlink at T0 (-> {target}), not a regular file"
    real = posixpath.normpath(posixpath.join(posixpath.dirname(shown), target, *rest))
    inside = not target.startswith("/") and real != ".." and not real.startswith("../")
    hint = f"; name it by its real path {real}" if inside else ""
    return f"{'/'.join([shown, *rest])} is reached through the symlink {shown} (-> {target}){hint}"


def _t0_entries(git: Git, parts: list[str]) -> dict[str, str]:
    """The T0 tree's entries (path -> mode) at ``parts`` and at each directory above it."""
    prefixes = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
    out = git.run("ls-tree", "-z", "HEAD", "--", *prefixes, env=_LITERAL, check=False).stdout
    entries: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, _, raw = record.partition(b"\t")
        if raw:
            entries[raw.decode("utf-8", "surrogateescape")] = meta.split(b" ")[0].decode()
    return entries
