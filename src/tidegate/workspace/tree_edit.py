"""A tree with a few paths replaced, built from the trees along those paths only.

Writing a candidate through a copy of T0's index costs a read and a write of the whole
index (twice: ``update-index``, then ``write-tree``), which on a large repository is most
of VALIDATE. Here the cost follows the change instead: the trees on the changed paths'
way to the root are read by object id (``git cat-file``), rewritten in Python, and written
in one ``git mktree --batch``, whose ids must equal the ones computed here.

``edit_tree`` returns None whenever it is not sure to give what the index would (a file
where a directory is needed, an unusual name, an id that does not match): the caller then
takes the index path.
"""

from __future__ import annotations

import hashlib

from tidegate.errors import GitError
from tidegate.git.command import Git
from tidegate.workspace.tree_walk import parse_tree, root_tree

Entry = tuple[str, str]
"""(mode as git writes it in a tree, e.g. ``100644`` or ``40000``; object id in hex)."""

_TREE = "40000"


def edit_tree(git: Git, base: str, changes: dict[str, Entry | None]) -> str | None:
    """The id of ``base`` (a full commit or tree id) with each path of ``changes`` set to
    its entry (None: removed), written to the object store; None when this cannot be done
    safely here."""
    id_bytes = len(base) // 2
    if not changes or len(base) not in (40, 64) or not all(_plain(p) for p in changes):
        return None
    dirs = _ancestors(changes)
    if any(path in dirs for path in changes):
        return None  # a path changed both as a file and as a directory
    try:
        trees = _read_trees(git, base, dirs, id_bytes)
    except ValueError:
        return None  # a tree that does not parse: the index way lets git say so
    if trees is None:
        return None
    rebuilt = _rebuild(trees, dirs, changes, id_bytes)
    if rebuilt is None:
        return None
    root, objects = rebuilt
    if _write(git, objects) != [oid for oid, _ in objects]:
        return None  # git hashed them differently: trust its index path instead
    return root


def _plain(path: str) -> bool:
    return (
        bool(path)
        and "\0" not in path
        and all(part not in ("", ".", "..") for part in path.split("/"))
    )


def _ancestors(changes: dict[str, Entry | None]) -> list[str]:
    """Every directory on the way to a changed path ('' is the root), deepest first."""
    dirs = {""}
    for path in changes:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:depth]))
    return sorted(dirs, key=lambda d: (-(d.count("/") + 1) if d else 0, d))


def _read_trees(
    git: Git, base: str, dirs: list[str], id_bytes: int
) -> dict[str, dict[str, Entry]] | None:
    """The entries of ``base``'s tree at each of ``dirs`` ({} for a directory it lacks);
    None if one of them is not a tree there, or a tree cannot be read or parsed.

    Read from the root down by object id, a level at a time (through the run's kept
    reader when there is one): no path is ever written to git's input, where a name
    holding a newline, or bytes that are not UTF-8, would be misread."""
    try:
        root = root_tree(git, base) or git.out("rev-parse", "--verify", f"{base}^{{tree}}")
        trees: dict[str, dict[str, Entry]] = {}
        for level in sorted({_depth(d) for d in dirs}):
            wanted: dict[str, str] = {}
            for d in (d for d in dirs if _depth(d) == level):
                if not d:
                    wanted[d] = root
                    continue
                parent, _, name = d.rpartition("/")
                entry = trees[parent].get(name)
                if entry is None:
                    trees[d] = {}
                elif entry[0] != _TREE:
                    return None  # a file (or anything else) where a directory is needed
                else:
                    wanted[d] = entry[1]
            raw = git.read_blobs(list(wanted.values()))
            for d, oid in wanted.items():
                trees[d] = parse_tree(raw[oid], id_bytes)
    except (GitError, KeyError, ValueError):
        return None
    return trees


def _depth(directory: str) -> int:
    return directory.count("/") + 1 if directory else 0


def _rebuild(
    trees: dict[str, dict[str, Entry]],
    dirs: list[str],
    changes: dict[str, Entry | None],
    id_bytes: int,
) -> tuple[str, list[tuple[str, dict[str, Entry]]]] | None:
    """New trees bottom-up: the root's id and every (id, entries) to write, children
    first. A directory left empty disappears, as it does from an index."""
    objects: list[tuple[str, dict[str, Entry]]] = []
    new_ids: dict[str, str | None] = {}
    for d in dirs:
        entries = dict(trees[d])
        updates: dict[str, Entry | None] = {}
        for path, entry in changes.items():
            parent, _, name = path.rpartition("/")
            if parent == d:
                if entries.get(name, ("", ""))[0] == _TREE:
                    return None  # a directory replaced by a file: leave it to the index
                updates[name] = entry
        for child, oid in new_ids.items():
            parent, _, name = child.rpartition("/")
            if child and parent == d:
                if name in entries and entries[name][0] != _TREE:
                    return None
                updates[name] = None if oid is None else (_TREE, oid)
        for name, update in updates.items():
            if update is None:
                entries.pop(name, None)
            else:
                entries[name] = update
        if not entries:
            new_ids[d] = None
            continue
        oid = _object_id(_serialise(entries), id_bytes)
        new_ids[d] = oid
        objects.append((oid, entries))
    root = new_ids[""]
    if root is None:
        return None  # an empty tree: rare enough to leave to the index
    return root, objects


def _serialise(entries: dict[str, Entry]) -> bytes:
    """The tree object's body, in git's order (a directory sorts as its name plus '/')."""

    def order(name: str) -> bytes:
        raw = name.encode("utf-8", "surrogateescape")
        return raw + b"/" if entries[name][0] == _TREE else raw

    return b"".join(
        f"{int(entries[n][0], 8):o} ".encode()
        + n.encode("utf-8", "surrogateescape")
        + b"\0"
        + bytes.fromhex(entries[n][1])
        for n in sorted(entries, key=order)
    )


def _object_id(body: bytes, id_bytes: int) -> str:
    algorithm = hashlib.sha256 if id_bytes == 32 else hashlib.sha1
    return algorithm(b"tree %d\0" % len(body) + body).hexdigest()


def _write(git: Git, objects: list[tuple[str, dict[str, Entry]]]) -> list[str]:
    """Write the trees with one ``git mktree --batch`` (it checks that every entry's
    object exists with the type its mode says) and return the ids git gave them."""
    batch = bytearray()
    for _, entries in objects:
        for name, (mode, oid) in entries.items():
            kind = {_TREE: "tree", "160000": "commit"}.get(mode, "blob")
            batch += f"{mode} {kind} {oid}\t".encode() + name.encode("utf-8", "surrogateescape")
            batch += b"\0"
        batch += b"\0"
    return git.run("mktree", "-z", "--batch", input=bytes(batch)).text.split()
