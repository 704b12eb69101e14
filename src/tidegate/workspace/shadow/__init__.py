"""Shadow worktrees: a linked git work tree at T0 per run (``worktree``), the warm one
reused run after run (``pool``); the worktrees on disk (``worktrees``), what tidegate wrote
in one (``touched``), the candidate check (``content``), dead runs' leftovers
(``leftovers``)."""

from __future__ import annotations

from tidegate.workspace.shadow.pool import PoolCleaning, acquire_shadow
from tidegate.workspace.shadow.worktree import ShadowWorktree

__all__ = ["PoolCleaning", "ShadowWorktree", "acquire_shadow"]
