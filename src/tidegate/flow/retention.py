"""What tidegate keeps of past runs, and ``tidegate gc``.

A run's objects are folded into ``refs/tidegate/keep`` when it ends (``fold_ended``, at
the end of every run: one for-each-ref, one ls-tree and one update-ref). Retention
(``[retention] runs`` of the user's configuration, 50 by default) keeps the newest runs
there, plus, whatever their age, every run that is held (not yet applied or discarded),
paused or recorded as still running (live, or interrupted and resumable) and every run a
live process claims (``workspace.claims``). A paused or interrupted run keeps its own refs
(a resume needs T0's commit); everything else is folded.

``tidegate gc`` applies the retention now, migrates the per-run refs of older versions
into the keep commit, removes what dead runs left (shadows, scratch, sandbox and copy
directories: the same sweep as ``tidegate recover``, never a live run's), removes the
warm pool's shadow when no run holds the repository lock, and prunes the tool host's
undo bytes by ``[retention] undo_max_days/undo_max_bytes``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from tidegate.config import load_config
from tidegate.config.records import RetentionConfig
from tidegate.errors import TidegateError
from tidegate.workspace.claims import all_claims
from tidegate.workspace.keep import Kept, Plan, fold_only, read_kept, update_kept
from tidegate.workspace.lock import POOL_SLOTS, PoolLock
from tidegate.workspace.repo import Repository, discover

if TYPE_CHECKING:
    from tidegate.store.db import RunStore

KEPT_STATUSES = ("held", "paused", "running")
"""Stored statuses kept whatever their age (``running``: live, or interrupted)."""
RESUMABLE = ("paused", "running")
"""Statuses whose runs keep their own refs: a resume needs them as they are."""


def fold_ended(
    repo: Repository,
    run_id: str,
    status: str,
    retention: RetentionConfig,
    recorder: object = None,
) -> None:
    """At the end of a run: fold its refs into the keep commit (not a paused one's: its
    resume needs them) and, when the run is recorded in a store, apply retention in the
    same transaction. A failure leaves everything for ``tidegate gc``."""
    if status in RESUMABLE:
        return
    store = getattr(recorder, "store", None)
    with contextlib.suppress(TidegateError, OSError):
        if store is None:
            update_kept(repo, fold_only(run_id))
        else:
            update_kept(repo, retention_plan(repo, store, retention, own=run_id))


def kept_statuses(store: RunStore) -> dict[str, str]:
    """The runs retention keeps whatever their age, with their stored status: held and
    never applied or discarded since, paused, or recorded as running."""
    marks = ",".join("?" * len(KEPT_STATUSES))
    rows = store.query(
        f"SELECT run_id, status FROM runs WHERE status IN ({marks}) AND run_id NOT IN "
        "(SELECT run_id FROM landings WHERE action IN ('applied', 'discarded'))",
        KEPT_STATUSES,
    )
    return {str(run_id): str(status) for run_id, status in rows}


def newest_first(store: RunStore, run_ids: set[str]) -> list[str]:
    """``run_ids`` newest first: by the order the store recorded the runs in (two runs may
    start in the same second, and a run id's tail is random), then by the start time a
    run id begins with for runs the store does not know."""
    order = {str(run_id): int(seq) for run_id, seq in store.query("SELECT run_id, seq FROM runs")}
    return sorted(run_ids, key=lambda r: (r[:15], order.get(r, -1)), reverse=True)


def retention_plan(
    repo: Repository, store: RunStore, retention: RetentionConfig, own: str | None = None
) -> Plan:
    """Fold every ended run's refs (``own``: the calling run, ended but still claimed),
    drop every run retention does not keep. Decided on each read of the refs: the claims
    are read after the refs, and a run claims before it makes refs, so every run seen
    that is alive has its claim by then; a run not seen is never dropped."""

    def plan(kept: Kept) -> tuple[set[str], set[str]]:
        known = set(kept.runs) | set(kept.refs)
        live = {run_id for run_id, owner in all_claims(repo).items() if owner.alive}
        live.discard(own or "")
        protected = kept_statuses(store)
        keep = set(newest_first(store, known)[: retention.runs]) | set(protected) | live
        resumable = {r for r, status in protected.items() if status in RESUMABLE}
        return set(kept.refs) - live - resumable, known - keep

    return plan


class GcSummary(msgspec.Struct):
    repo: str
    dry_run: bool
    runs_kept: int = 0
    runs_folded: list[str] = msgspec.field(default_factory=list)
    runs_pruned: list[str] = msgspec.field(default_factory=list)
    refs_deleted: int = 0
    refs_left: int = 0
    """Refs under ``refs/tidegate/`` after gc (the keep ref, live and paused runs')."""
    removed_shadows: list[str] = msgspec.field(default_factory=list)
    removed_scratch: list[str] = msgspec.field(default_factory=list)
    removed_sandboxes: list[str] = msgspec.field(default_factory=list)
    killed_groups: list[int] = msgspec.field(default_factory=list)
    removed_copies: list[str] = msgspec.field(default_factory=list)
    removed_pool: list[str] = msgspec.field(default_factory=list)
    undo_bytes_freed: int | None = 0
    """None with ``dry_run``: the undo byte store is only pruned for real."""
    errors: list[str] = msgspec.field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return msgspec.structs.asdict(self)


def collect(repo_path: Path, store: RunStore, dry_run: bool = False) -> GcSummary:
    """``tidegate gc``: apply retention now and remove what dead runs left."""
    repo = discover(repo_path)
    retention = load_config(repo.root).retention
    summary = GcSummary(repo=str(repo.root), dry_run=dry_run)
    change = update_kept(repo, retention_plan(repo, store, retention), dry_run)
    summary.runs_folded, summary.runs_pruned = change.folded, change.dropped
    summary.refs_deleted = change.refs_deleted
    _sweep(repo, store, retention, summary)
    after = read_kept(repo)
    summary.runs_kept = len(set(after.runs) | set(after.refs)) - len(change.dropped) * dry_run
    summary.refs_left = len(repo.git.out("for-each-ref", "refs/tidegate/").splitlines())
    return summary


def _sweep(repo: Repository, store: RunStore, retention: RetentionConfig, out: GcSummary) -> None:
    from tidegate.flow.recovery import remove_dead_leftovers
    from tidegate.store.blobs import ByteStore, Retention

    remove_dead_leftovers(repo, out, out.dry_run)
    out.removed_pool = _remove_idle_pool(repo, out.dry_run)
    if out.dry_run:
        out.undo_bytes_freed = None
        return
    limits = Retention.from_env(
        max_bytes=retention.undo_max_bytes, max_days=retention.undo_max_days
    )
    try:
        out.undo_bytes_freed = ByteStore(store.path.parent).prune(limits)
    except (OSError, TidegateError) as exc:  # a link planted there: refused, named
        out.errors.append(f"the undo byte store could not be pruned: {exc}")


def _remove_idle_pool(repo: Repository, dry_run: bool) -> list[str]:
    """The warm pool's shadows, each removed when no run is using it (its slot's lock is
    free; a run makes a new one when it wants one); ``dry_run``: only listed."""
    from tidegate.workspace.shadow import ShadowWorktree
    from tidegate.workspace.shadow.worktrees import pooled_path

    removed: list[str] = []
    for slot in range(POOL_SLOTS):
        lock = PoolLock(repo.runtime_dir, "gc", slot)
        try:
            if not lock.try_acquire():
                continue  # a run is using it
        except (TidegateError, OSError):
            continue
        try:
            path = pooled_path(repo, slot, forget=not dry_run)
            if path is not None:
                if not dry_run:
                    ShadowWorktree(repo, path, "", pooled=True, slot=slot).remove()
                removed.append(str(path))
        finally:
            lock.release()
    return removed
