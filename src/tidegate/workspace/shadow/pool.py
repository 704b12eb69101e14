"""The warm pool: up to ``POOL_SLOTS`` pooled worktrees per work tree, each reused run after
run (cleaned to its own HEAD, then moved to the new T0 by the paths that differ) by one run
at a time under its slot's lock. A run takes the first free slot, whose shadow is made the
first time runs overlap that many; a run finding every slot in use gets a shadow of its
own (``acquire_shadow``)."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from tidegate.errors import GitError, UsageError
from tidegate.workspace.lock import POOL_SLOTS, LockFileError, PoolLock, pool_name
from tidegate.workspace.repo import Repository
from tidegate.workspace.shadow.touched import take_touched
from tidegate.workspace.shadow.worktree import ShadowWorktree
from tidegate.workspace.shadow.worktrees import (
    POOL_PREFIX,
    add_worktree,
    discard,
    forget_pooled,
    pooled_path,
)


def acquire_shadow(
    repo: Repository,
    t0_commit: str,
    run_id: str,
    pool: bool,
    warm: PoolCleaning | None = None,
) -> ShadowWorktree:
    """A shadow at T0: with ``pool``, a free pool slot's warm shadow moved to T0 when it
    has a healthy one (only files that differ are rewritten), else a new worktree (kept in
    the slot for the next run; every slot in use: the run's own).

    ``warm`` is the pool's cleaning, started (``PoolCleaning.start``) while T0 was being
    taken; without it the cleaning runs here."""
    if not pool:
        return ShadowWorktree.create(repo, t0_commit, run_id)
    cleaning = warm if warm is not None else PoolCleaning.start(repo, background=False)
    if cleaning.lock is None:  # live runs have every slot: a shadow of our own
        return ShadowWorktree.create(repo, t0_commit, run_id)
    shadow = cleaning.finish(t0_commit)
    if shadow is not None:
        return shadow
    path = Path(tempfile.mkdtemp(prefix=POOL_PREFIX))
    try:
        add_worktree(repo, path, t0_commit)
    except BaseException:
        discard(repo, path)
        cleaning.release()
        raise
    (repo.runtime_dir / pool_name(cleaning.slot)).write_text(str(path) + "\n")
    shadow = ShadowWorktree(repo, path, t0_commit, pooled=True, slot=cleaning.slot)
    shadow.pool_lock, cleaning.lock = cleaning.lock, None
    # A split index: the kept shadow's index (one entry per tracked file) is rewritten
    # by every cleaning that restores a path; split, each rewrite writes only what
    # changed since the shared part (git keeps the two in the shadow's own git dir).
    shadow.git.run("update-index", "--split-index", check=False)
    shadow.prepared = shadow.identity()
    shadow.mark_clean()
    return shadow


class PoolCleaning:
    """A pool slot's warm shadow being cleaned to its own HEAD, in a thread while the T0
    snapshot is taken: that cleaning is a full scan of the shadow (every tracked file's
    stat, every directory), as costly as T0's own scan of the main tree, and needs nothing
    from T0. ``finish`` then moves it to T0 by the paths that differ. The first free slot's
    lock is taken first and passes to the shadow: while a run uses a slot's shadow, no
    other run does (``lock`` None: live runs have every slot, and nothing was cleaned)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.lock: PoolLock | None = None
        self.slot = 0
        self.shadow: ShadowWorktree | None = None
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def start(
        cls, repo: Repository, background: bool = True, slots: int = POOL_SLOTS
    ) -> PoolCleaning:
        cleaning = cls(repo)
        for slot in range(slots):
            lock = PoolLock(repo.runtime_dir, "pool", slot)
            try:
                if lock.try_acquire():
                    break
            except (LockFileError, UsageError):
                return cleaning  # no lock, no pool: the run makes a shadow of its own
        else:
            return cleaning
        cleaning.lock, cleaning.slot = lock, slot
        if background:
            cleaning._thread = threading.Thread(
                target=cleaning._clean, name="tidegate-pool-clean", daemon=True
            )
            cleaning._thread.start()
        else:
            cleaning._clean()
        return cleaning

    def _clean(self) -> None:
        try:
            warm = pooled_path(self.repo, self.slot)
            if warm is None:
                return
            try:
                shadow = ShadowWorktree(self.repo, warm, "", pooled=True, slot=self.slot)
            except GitError:  # not (any more) one of this repository's work trees
                forget_pooled(self.repo, warm, self.slot)
                return
            self.shadow = shadow
            touched = take_touched(self.repo, shadow.path, self.slot)
            if touched is not None and shadow.undo(touched):
                shadow.undone = len(touched)
            else:
                shadow.clean_to_head()
        except BaseException as exc:  # reported by finish() in the caller's thread
            self.error = exc

    def wait(self) -> None:
        """Until the cleaning is over (no git left running in the pooled shadow)."""
        if self._thread is not None:
            self._thread.join()

    def finish(self, t0_commit: str) -> ShadowWorktree | None:
        """The pooled shadow at ``t0_commit``, or None when there is no healthy one (a
        broken one is removed)."""
        self.wait()
        shadow = self.shadow
        if shadow is None:
            if self.error is not None and not isinstance(self.error, GitError | OSError):
                self.release()
                raise self.error
            return None
        try:
            if self.error is not None:
                raise self.error
            shadow.move_to(t0_commit)
            shadow.reused = True
            shadow.prepared = shadow.identity()
            shadow.pool_lock, self.lock = self.lock, None
            return shadow
        except (GitError, OSError):
            shadow.remove()
            return None
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Give the pool back, unless a shadow took it over (after the cleaning ended)."""
        self.wait()
        if self.lock is not None:
            self.lock.release()
            self.lock = None
