"""A workspace fingerprint's value and what went into it, and its git form from trees
already built: a run's T0 snapshot has HEAD, the work tree's tree and the staged tree, so
its fingerprint needs neither a scan nor the inventory machinery of ``fingerprint``."""

from __future__ import annotations

from typing import Literal

import msgspec

from tidegate.workspace.states import sha256_bytes

FORMAT = b"tidegate-workspace-fingerprint/1"


class WorkspaceFingerprint(msgspec.Struct, frozen=True):
    """A fingerprint and what went into it. ``method`` is "git" (the tree git would
    snapshot, HEAD, what is staged: ``tree:<id>`` or ``stage:<sha256>``) or "walk" (an
    inventory; no git work tree)."""

    value: str
    method: Literal["git", "walk"]
    head: str | None = None
    tree: str | None = None
    index: str | None = None


def git_fingerprint(head: str | None, tree: str, index: str) -> WorkspaceFingerprint:
    """The fingerprint of a work tree whose ``git add --all`` tree is ``tree`` and whose
    staged state is ``index`` (``tree:<id>`` or ``stage:<sha256>``). A T0 snapshot has all
    three already, so a run need not hash the work tree a second time."""
    payload = b"\0".join([FORMAT, (head or "unborn").encode(), tree.encode(), index.encode()])
    return WorkspaceFingerprint(sha256_bytes(payload), "git", head, tree, index)
