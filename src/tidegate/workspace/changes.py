"""What a proposal changed, as git sees it: tree-to-tree differences with blob ids."""

from __future__ import annotations

import msgspec

from tidegate.git.command import Git
from tidegate.git.settings import no_index


class Version(msgspec.Struct, frozen=True):
    """One side of a path: its git mode (``100644``, ``100755``, ``120000``, ``160000``) and blob."""

    mode: str
    blob: str

    @property
    def is_regular(self) -> bool:
        return self.mode in ("100644", "100755")

    @property
    def executable(self) -> bool:
        return self.mode == "100755"


class PathChange(msgspec.Struct, frozen=True):
    path: str
    before: Version | None
    after: Version | None

    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        if self.after is None:
            return "delete"
        return "modify"


def diff_trees(git: Git, old: str, new: str) -> list[PathChange]:
    """Every path that differs between two trees (renames as delete + create)."""
    raw = git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", old, new, env=no_index()).stdout
    return parse_raw(raw.split(b"\0"))


def parse_raw(fields: list[bytes]) -> list[PathChange]:
    """``diff-tree -z --raw`` records (a ``:``-meta field, then its path); any other field
    (a ``--numstat`` record printed with them) is skipped."""
    changes: list[PathChange] = []
    i = 0
    while i < len(fields):
        if not fields[i].startswith(b":"):
            i += 1
            continue
        if i + 1 >= len(fields):
            break
        meta = fields[i].decode().lstrip(":").split()
        path = fields[i + 1].decode("utf-8", "surrogateescape")
        old_mode, new_mode, old_blob, new_blob = meta[0], meta[1], meta[2], meta[3]
        before = None if old_mode == "000000" else Version(old_mode, old_blob)
        after = None if new_mode == "000000" else Version(new_mode, new_blob)
        changes.append(PathChange(path, before, after))
        i += 2
    return changes


def worktree_forms(git: Git, changes: list[PathChange]) -> dict[tuple[str, str], bytes]:
    """The content of both sides of every change as a checkout would write it, keyed by
    ``(blob, path)``: files through git's filters where any apply, symlinks as their target.
    A few git calls for the whole change set."""
    versions = [(v, c.path) for c in changes for v in (c.before, c.after) if v is not None]
    out = git.worktree_contents([(v.blob, path) for v, path in versions if v.is_regular])
    links = git.read_blobs([v.blob for v, _ in versions if v.mode == "120000"])
    for v, path in versions:
        if v.mode == "120000":
            out[(v.blob, path)] = links[v.blob]
    return out
