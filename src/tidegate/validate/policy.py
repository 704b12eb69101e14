"""Diff policy: which paths a change may touch, and how big it may be.

Every problem is reported (not just the first), one line each, so a planner can fix them
all in its next attempt.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from functools import cache
from pathlib import Path

import msgspec

from tidegate.config.records import ValidationConfig
from tidegate.git.command import Git
from tidegate.git.settings import no_index
from tidegate.workspace.changes import PathChange, parse_raw
from tidegate.workspace.fs import UnsafePathError, check_relative


class ChangeStats(msgspec.Struct, frozen=True):
    """Size of a change as git counts it (``--numstat``); binary files have no line counts."""

    added: int
    removed: int
    binary: tuple[str, ...]


def diff_and_stats(git: Git, old_tree: str, new_tree: str) -> tuple[list[PathChange], ChangeStats]:
    """What changed between two trees (``diff_trees``), and its size: lines added and
    removed, and the binary paths. One ``diff-tree --raw --numstat`` (the raw records,
    then the counts), without the index (``no_index``: most of a call's time on a large
    repository): git then reads the ``diff``/``binary`` attributes from the work tree's
    ``.gitattributes`` files alone, which is what T0 holds; with it, a ``.gitattributes``
    deleted from the work tree but still in the index would count too."""
    out = git.run(
        "diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat", old_tree, new_tree,
        env=no_index(),
    ).stdout  # fmt: skip
    fields = out.split(b"\0")
    added = removed = 0
    binary: list[str] = []
    i = 0
    while i < len(fields):
        field = fields[i]
        if field.startswith(b":"):
            i += 2  # a raw record and its path
            continue
        i += 1
        if not field or b"\t" not in field:
            continue
        a, r, path = field.split(b"\t", 2)
        if a == b"-":
            binary.append(path.decode("utf-8", "surrogateescape"))
        else:
            added += int(a)
            removed += int(r)
    return parse_raw(fields), ChangeStats(added, removed, tuple(binary))


ALWAYS_REFUSED = (".git", ".tidegate")
"""Top-level names no change may reach, whatever ``protected`` says: the repository's
internals and tidegate's own configuration and records."""


def check_change(
    git: Git,
    changes: list[PathChange],
    stats: ChangeStats,
    t0_root: Path,
    config: ValidationConfig,
    main_root: Path | None = None,
) -> list[str]:
    """Every policy problem of a candidate change, one line each (empty: allowed).

    Paths are judged as spelled and as they resolve: in the shadow (T0) and, when given,
    in the user's work tree ``main_root`` (where ignored symlinks, absent from T0, live)."""
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
    roots = [("", t0_root)] + ([(" in your work tree", main_root)] if main_root else [])
    for change in changes:
        problems.extend(_check_path(git, change, roots, config.protected))
    return problems


def _check_path(
    git: Git, change: PathChange, roots: list[tuple[str, Path]], protected: tuple[str, ...]
) -> list[str]:
    path = change.path
    try:
        parts = check_relative(path)
    except UnsafePathError as exc:
        return [str(exc)]
    if problem := protected_problem(path, protected):
        return [problem]
    for where, root in roots:
        if problem := _through_symlink(path, parts, root, protected, where):
            return [problem]
    if change.after is not None and change.after.mode == "120000":
        target = git.blob_bytes(change.after.blob).decode("utf-8", "surrogateescape")
        if problem := _link_problem(path, target, protected):
            return [problem]
    return []


def protected_problem(path: str, protected: tuple[str, ...]) -> str | None:
    """Why ``path`` (root-relative, normalised) is off limits to a change, or None."""
    parts = path.split("/")
    if any(p.lower() == ".git" for p in parts):
        return f"{path}: inside a .git directory"
    if parts[0].lower() == ".tidegate":  # any case: some file systems ignore it
        return f"{path}: inside tidegate's own .tidegate/ directory"
    for pattern in protected:
        if glob_regex(pattern).fullmatch(path):
            return f"{path}: protected by the pattern {pattern!r}"
    return None


def _through_symlink(
    path: str, parts: list[str], root: Path, protected: tuple[str, ...], where: str
) -> str | None:
    """A change never writes through a symlinked directory: what it would reach is not
    what the path says (``self -> .`` makes ``self/.github/...`` a workflow). The message
    names the resolved path and, when that is protected or outside, says so."""
    current = root
    for i, name in enumerate(parts[:-1]):
        current = current / name
        try:
            if not stat.S_ISLNK(os.lstat(current).st_mode):
                continue
        except (FileNotFoundError, NotADirectoryError):
            return None  # nothing on disk below here to pass through
        link = "/".join(parts[: i + 1])
        resolved = resolve_beneath(root, path)
        if resolved is None:
            return (
                f"{path}: passes through the symlink {link}{where}, "
                "which leads outside the repository"
            )
        why = protected_problem(resolved, protected) if resolved != "." else None
        reaches = f" to {resolved}" + (f" ({why.split(': ', 1)[1]})" if why else "")
        return f"{path}: passes through the symlink {link}{where}; it would write{reaches}"
    return None


def resolve_beneath(root: Path, path: str) -> str | None:
    """Where the root-relative ``path`` leads below ``root`` when every symlinked directory
    on the way is followed (the final component is not: writes replace it), or None when
    that leaves ``root``. Missing components are kept as spelled."""
    pending = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    hops = 0
    while len(pending) > 1:
        name = pending.pop(0)
        if name == "..":
            if not done:
                return None
            done.pop()
            continue
        here = root.joinpath(*done, name)
        try:
            is_link = stat.S_ISLNK(os.lstat(here).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            done.append(name)
            continue
        if not is_link:
            done.append(name)
            continue
        hops += 1
        target = os.readlink(here)
        if hops > 40 or target.startswith("/"):
            return None
        pending[:0] = [p for p in target.split("/") if p not in ("", ".")]
    if pending == [".."]:
        return None
    return "/".join(done + pending) or "."


def _lexical(base: str, target: str, rest: list[str]) -> str | None:
    """``base/target/rest`` normalised, or None when it leaves the repository."""
    if target.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(base, target, *rest))
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def _link_problem(path: str, target: str, protected: tuple[str, ...]) -> str | None:
    """A symlink the change creates may not lead out of the repository, nor alias the
    root, ``.git``, ``.tidegate`` or a protected place: a later write through it (by a
    tool, an editor, the next run) would reach what its spelling hides."""
    resolved = _lexical(posixpath.dirname(path), target, [])
    if resolved is None:
        return f"{path}: a symlink pointing outside the repository ({target})"
    if resolved == ".":
        return f"{path}: a symlink to the repository root ({target}) aliases every protected path"
    for pattern in (*ALWAYS_REFUSED, *protected):
        prefix = _literal_prefix(pattern)
        hit = (
            _related(resolved, prefix) if prefix else bool(glob_regex(pattern).fullmatch(resolved))
        )
        if hit:
            return f"{path}: a symlink to {resolved} aliases the protected {pattern!r}"
    return None


def _literal_prefix(pattern: str) -> str:
    """The leading segments of ``pattern`` that hold no wildcard."""
    out = []
    for segment in pattern.split("/"):
        if any(ch in segment for ch in "*?["):
            break
        out.append(segment)
    return "/".join(out)


def _related(a: str, b: str) -> bool:
    """``a`` and ``b`` are the same path or one lies beneath the other."""
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def nested_writes(named: set[str], deleted: set[str]) -> list[str]:
    """Paths a proposal writes both as an entry and as a directory above another entry
    (``self -> .`` plus ``self/.github/...``). git keeps only one of them in the candidate,
    so the candidate would not be what the proposal does; refused unless the proposal
    deletes the outer one."""
    problems = []
    for inner in sorted(named - deleted):  # a deleted inner entry is a swap (validate/shapes)
        parts = inner.split("/")
        for i in range(1, len(parts)):
            outer = "/".join(parts[:i])
            if outer in named and outer not in deleted:
                problems.append(
                    f"{outer}: the proposal writes it and also {inner} beneath it; "
                    "a path cannot be both"
                )
    return problems


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
