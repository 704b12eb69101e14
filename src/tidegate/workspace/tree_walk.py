"""``git ls-tree --full-tree TREE -- PATH...`` for a few plain paths, answered from the tree
objects themselves, read through a run's kept ``cat-file`` (``Git.kept_object``): no git
process for what EXPLORE, the candidate build and the policy guard each ask of T0.

The answer is ls-tree's: literal paths from the root, compared byte for byte (as ls-tree
does whatever ``core.ignorecase`` says), modes canonicalised as git reads them from a
tree, a path through a file or a submodule absent, entries in git's tree order. Anything
else (no kept reader, a path with a glob or pathspec-magic character, one path inside
another, an object that does not parse or is missing) is None, and the caller asks git.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence

from tidegate.errors import GitError
from tidegate.git.command import Git

Entry = tuple[str, str, str]
"""(mode as ls-tree prints it, type, object id)."""
Tree = dict[str, tuple[str, str]]
"""A parsed tree object (``parse_tree``)."""
_cache: weakref.WeakKeyDictionary[Git, dict[str, Tree]] = weakref.WeakKeyDictionary()


def tree_entries(git: Git, treeish: str, paths: Sequence[str]) -> dict[str, Entry] | None:
    """path -> entry for each of ``paths`` that ``treeish`` (a commit or tree id) holds;
    None: not answerable here."""
    if not paths or not all(_plain(p) for p in paths):
        return None
    if any(p.startswith(q + "/") for p in paths for q in paths):
        return None  # one path inside another: ls-tree's answer depends on -r
    try:
        root = root_tree(git, treeish)
        if root is None:
            return None
        found: dict[str, Entry] = {}
        for path in paths:
            entry = _walk(git, root, path)
            if entry is None:
                return None
            if entry is not _ABSENT:
                found[path] = entry
    except (ValueError, IndexError, GitError):
        return None  # a tree that does not parse, an object missing: git says what is wrong
    return dict(sorted(found.items(), key=lambda item: _order(item[0], item[1][1])))


_ABSENT: Entry = ("", "", "")


def _plain(path: str) -> bool:
    """A path every pathspec reading takes literally: no glob or magic characters."""
    if not path or any(c in path for c in "\0*?[]\\:!"):
        return False
    return all(p not in ("", ".", "..") for p in path.split("/"))


def root_tree(git: Git, treeish: str) -> str | None:
    """The tree of ``treeish`` (a commit or tree id) through the kept reader, or None
    (no kept reader, a missing object, anything else: git answers)."""
    try:
        commit = git.kept_object(treeish, b"commit")
    except GitError:
        return None
    if commit is not None:
        line = commit.split(b"\n", 1)[0]
        return line[5:].decode() if line.startswith(b"tree ") else None
    return treeish if read_tree(git, treeish) is not None else None


def _walk(git: Git, root: str, path: str) -> Entry | None:
    tree = root
    parts = path.split("/")
    for depth, name in enumerate(parts):
        entries = read_tree(git, tree)
        if entries is None:
            return None
        hit = entries.get(name)
        if hit is None:
            return _ABSENT
        mode, oid = _canonical(int(hit[0], 8)), hit[1]
        if depth == len(parts) - 1:
            kind = "tree" if mode == 0o040000 else "commit" if mode == 0o160000 else "blob"
            return f"{mode:06o}", kind, oid
        if mode != 0o040000:
            return _ABSENT  # through a file or a submodule: not in this tree
        tree = oid
    return _ABSENT


def read_tree(git: Git, oid: str) -> Tree | None:
    """The entries of tree ``oid`` through the kept reader (parsed once per ``git``);
    None: no kept reader, or not a tree it has. ValueError for one that does not parse."""
    trees = _cache.setdefault(git, {})
    if oid in trees:
        return trees[oid]
    try:
        data = git.kept_object(oid, b"tree")
    except GitError:
        return None
    if data is None:
        return None
    trees[oid] = entries = parse_tree(data, len(oid) // 2)
    return entries


def parse_tree(raw: bytes, id_bytes: int) -> Tree:
    """A tree object's entries: name -> (mode as stored, such as ``100644`` or ``40000``;
    object id). ``id_bytes``: 20 for SHA-1, 32 for SHA-256. ValueError for a tree that
    does not parse."""
    entries: Tree = {}
    pos = 0
    while pos < len(raw):
        space = raw.index(b" ", pos)
        nul = raw.index(b"\0", space)
        oid = raw[nul + 1 : nul + 1 + id_bytes]
        if len(oid) != id_bytes:
            raise ValueError("a truncated tree entry")
        name = raw[space + 1 : nul].decode("utf-8", "surrogateescape")
        entries[name] = (raw[pos:space].decode("ascii"), oid.hex())
        pos = nul + 1 + id_bytes
    return entries


def _canonical(mode: int) -> int:
    """As git reads a mode from a tree (``canon_mode``): a file is executable when its
    owner's execute bit is set (``100654`` reads as ``100644``), whatever the others say."""
    kind = mode & 0o170000
    if kind == 0o100000:
        return 0o100755 if mode & 0o100 else 0o100644
    if kind in (0o120000, 0o040000):
        return kind
    return 0o160000


def _order(path: str, kind: str) -> tuple[bytes, ...]:
    """git's tree order: names compared as bytes, a tree's as if it ended in "/"."""
    parts = [os.fsencode(p) for p in path.split("/")]
    last = parts[-1] + (b"/" if kind == "tree" else b"")
    return (*[p + b"/" for p in parts[:-1]], last)
