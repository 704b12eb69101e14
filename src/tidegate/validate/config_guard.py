"""A change under test may not alter the policy that judges it or the next run.

tidegate's policy lives in two places: ``.tidegate/**`` (which no change may touch at all:
see ``policy.py``) and the ``[tool.tidegate]`` table of the root ``pyproject.toml``. A
change may edit the rest of ``pyproject.toml`` (people edit their dependencies), but the
table must parse to the same value in the candidate tree as at T0.

The file is looked up in each tree the way ``load_policy`` reads it from a checkout: through
symlinks inside the tree. So turning ``pyproject.toml`` into a symlink to a weaker file, or
editing the file it already points to, is judged by the table the next run would read.
"""

from __future__ import annotations

import posixpath
from typing import Literal

import msgspec

from tidegate.config.pyproject import policy_table_change
from tidegate.config.records import CONFIG_PYPROJECT
from tidegate.git.command import Git
from tidegate.workspace.tree_walk import tree_entries

MAX_HOPS = 40


class TreeLookup(msgspec.Struct, frozen=True):
    """Where a path of a tree leads after following the tree's own symlinks."""

    kind: Literal["file", "missing", "other", "outside"]
    path: str
    """The path finally reached (the link target for ``outside``)."""
    blob: str | None = None


def lookup(git: Git, tree: str, path: str) -> TreeLookup:
    """Resolve ``path`` inside ``tree`` (a tree or commit id), following symlinks whose
    targets stay inside the tree; a target that leaves it is reported as ``outside``."""
    pending = path.split("/")
    done: list[str] = []
    hops = 0
    while pending:
        name = pending.pop(0)
        here = "/".join([*done, name])
        entry = _entry(git, tree, here)
        if entry is None:
            return TreeLookup("missing", here)
        mode, blob = entry
        if mode == "120000":
            hops += 1
            target = git.blob_bytes(blob).decode("utf-8", "surrogateescape")
            joined = posixpath.normpath(posixpath.join("/".join(done), target))
            if hops > MAX_HOPS or target.startswith("/") or joined.split("/")[0] == "..":
                return TreeLookup("outside", target)
            pending[:0] = [] if joined == "." else joined.split("/")
            done = []
            if not pending:
                return TreeLookup("other", ".")  # the tree's root itself
            continue
        if not pending:
            kind: Literal["file", "other"] = "file" if mode in ("100644", "100755") else "other"
            return TreeLookup(kind, here, blob)
        if mode != "040000":
            return TreeLookup("missing", here)
        done.append(name)
    return TreeLookup("other", ".")


def _entry(git: Git, tree: str, path: str) -> tuple[str, str] | None:
    known = tree_entries(git, tree, [path])
    if known is not None:
        found = known.get(path)
        return None if found is None else (found[0], found[2])
    out = git.run("ls-tree", "-z", "--full-tree", tree, "--", path).stdout
    record = out.split(b"\0", 1)[0]
    if not record:
        return None
    meta, _, name = record.partition(b"\t")
    if name.decode("utf-8", "surrogateescape") != path:
        return None
    mode, _kind, blob = meta.decode().split()
    return mode, blob


def config_problems(git: Git, t0: str, candidate: str, changed: set[str]) -> list[str]:
    """Why the candidate tree changes tidegate's policy in ``pyproject.toml`` (empty: it
    does not). ``changed``, every path the two trees differ in, spares the candidate's
    lookup when T0's ``pyproject.toml`` is not a symlink (a file, or absent) and the
    change leaves it alone: the candidate then finds exactly T0's entry."""
    before = lookup(git, t0, CONFIG_PYPROJECT)
    if (
        before.path == CONFIG_PYPROJECT  # not a symlink: no target to follow
        and not any(p == CONFIG_PYPROJECT or p.startswith(CONFIG_PYPROJECT + "/") for p in changed)
    ):
        return []
    after = lookup(git, candidate, CONFIG_PYPROJECT)
    if before == after:
        return []
    if after.kind == "outside":
        return [f"{CONFIG_PYPROJECT}: would become a symlink out of the repository ({after.path})"]
    if before.kind == "outside":
        return [f"{CONFIG_PYPROJECT}: the change replaces the symlink you keep it as"]
    problem = policy_table_change(_content(git, before), _content(git, after))
    return [problem] if problem else []


def _content(git: Git, found: TreeLookup) -> bytes | None:
    return git.blob_bytes(found.blob) if found.kind == "file" and found.blob else None
