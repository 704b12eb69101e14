"""After a run: land a held change (``tidegate apply``), drop it (``tidegate discard``),
reverse a landed one (``tidegate undo``).

Every write goes the way APPLY_BACK's does -- ``workspace.merge_back`` plans a three-way
merge of every path before anything is written, a conflict writes ``.rej`` files and
changes nothing, ``workspace.journal`` makes the writes crash-safe (``tidegate recover``
finishes or rolls back a journal these leave, named ``<run-id>.apply`` or
``<run-id>.undo``) -- under the landing lock APPLY_BACK takes, never touching the index. What
became of the change is recorded after the work tree holds it (``store.landings``); a
crash in between leaves the work tree ahead of the record, and the same command run again
finds nothing left to write and records it.

* ``apply``: the held change (T0 -> the candidate kept as the run's ``result``, ``workspace.keep``)
  merged into the work tree as it is now. With ``--only``/``--exclude`` the chosen paths
  are a change that was never verified on its own: they go through a new run (a given
  proposal: their diff, the held run's verify command) that verifies them in a fresh
  shadow on the work tree as it is now and lands them if they pass.
* ``undo``: the inverse change -- base the run's result, theirs the run's T0, ours the file
  as it is now -- over the paths of the run's change, so lines edited since are kept.
"""

from __future__ import annotations

import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any

from tidegate.disk.faults import maybe_crash
from tidegate.errors import GitError, UsageError
from tidegate.flow.land import (
    Landing,
    change_diff,
    change_state,
    checked_run_id,
    chosen_run,
    kept_change,
    landing_lock,
    merge_change,
    newest_in,
    policy_unchanged,
    refusal,
    run_and_landings,
    select_paths,
)
from tidegate.flow.pipeline import PhaseObserver
from tidegate.records.report import FlowReport
from tidegate.store.db import RunStore
from tidegate.store.landings import landed_by, landings, record_landing
from tidegate.store.rows import StoredRun
from tidegate.workspace.changes import PathChange, diff_trees
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.keep import drop_kept
from tidegate.workspace.merge_back import plan_merge
from tidegate.workspace.repo import Repository, discover

# -- the commands ------------------------------------------------------------------------------


def apply_run(
    repo_path: Path,
    store: RunStore,
    run_id: str | None,
    only: list[str],
    exclude: list[str],
    observer: PhaseObserver | None = None,
) -> Landing:
    """``tidegate apply``: land a held run's change (the newest held one by default)."""
    repo = discover(repo_path)
    run = _held(store, repo, run_id)
    policy_unchanged(repo, run)
    t0, tree = kept_change(repo, run)
    changes = diff_trees(repo.git, t0, tree)
    chosen = select_paths(changes, only, exclude)
    if len(chosen) < len(changes):
        return _apply_subset(repo, store, run, t0, tree, chosen, observer)
    with landing_lock(repo, "apply"):
        # Under the lock, the record read again: another apply or a discard may have won.
        if (now := change_state(run, landings(store, run.run_id))) != "held":
            raise refusal(run.run_id, now, "apply")
        outcome = merge_change(repo, run.run_id, f"{run.run_id}.apply", chosen)
        if outcome.action == "applied":
            maybe_crash("landing.before_record")  # crash tests: written, not yet recorded
            record_landing(
                store,
                run.run_id,
                "applied",
                {"paths": [c.path for c in chosen], "written": outcome.written},
            )
            outcome.message = _done("applied", run.run_id, outcome)
    return outcome


def held_run(repo_path: Path, store: RunStore, run_id: str | None) -> StoredRun:
    """The held run ``apply`` would land (the newest held one by default), refused as
    ``apply`` refuses it."""
    return _held(store, discover(repo_path), run_id)


def _held(store: RunStore, repo: Repository, run_id: str | None) -> StoredRun:
    run, landed = chosen_run(store, repo, run_id, "apply", "held")
    state = change_state(run, landed)
    if state != "held":
        raise refusal(run.run_id, state, "apply")
    return run


def _apply_subset(
    repo: Repository,
    store: RunStore,
    run: StoredRun,
    t0: str,
    tree: str,
    chosen: list[PathChange],
    observer: PhaseObserver | None,
) -> Landing:
    """Verify the chosen paths on their own in a new run, and land them if they pass."""
    paths = [c.path for c in chosen]
    if _already_there(repo, chosen):
        # A crash after the subset's run landed it, before it was recorded: record it now.
        record_landing(store, run.run_id, "applied", {"paths": paths, "already": True})
        return Landing(
            run.run_id,
            "applied",
            f"the {len(paths)} chosen path(s) of run {run.run_id} already hold its change "
            "(landed before an interruption); recorded as applied, nothing written",
            unchanged=paths,
        )
    diff = change_diff(repo, t0, tree, paths)
    report, verify = _subset_run(repo, store, run, diff, len(paths), observer)
    outcome = Landing(run.run_id, "applied", "", by_run=report.run_id, report=report)
    if report.status != "succeeded":
        outcome.action = "conflict" if report.status == "conflict" else "failed"
        outcome.exit_code = report.exit_code
        outcome.rejects, outcome.rejects_dir = report.rejects, report.rejects_dir
        outcome.message = (
            f"the {len(paths)} chosen path(s) of run {run.run_id} were re-verified on their own "
            f"in a fresh shadow (run {report.run_id}) and did not pass: {report.message}; "
            f"nothing was applied and run {run.run_id} is still held"
        )
        return outcome
    maybe_crash("landing.before_record")  # crash tests: landed by the run, not recorded
    outcome.written = [f.path for f in report.applied_files if f.action != "unchanged"]
    outcome.deleted = [f.path for f in report.applied_files if f.action == "delete"]
    outcome.merged = [f.path for f in report.applied_files if f.merged]
    outcome.unchanged = [f.path for f in report.applied_files if f.action == "unchanged"]
    record_landing(store, run.run_id, "applied", {"paths": paths, "by_run": report.run_id})
    checked = "verified" if verify else "validated (no verify command)"
    total = len(_all_paths(repo, t0, tree))
    outcome.message = (
        f"applied {len(paths)} of the {total} path(s) of run {run.run_id}: a subset was never "
        f"verified on its own, so it was re-{checked} in a fresh shadow as run "
        f"{report.run_id} first; {len(outcome.written)} path(s) written as unstaged edits "
        f"({len(outcome.merged)} merged with your edits); the run is closed, the "
        f"{total - len(paths)} path(s) left out stay in `tidegate diff {run.run_id}`"
    )
    return outcome


def _subset_run(
    repo: Repository,
    store: RunStore,
    run: StoredRun,
    diff: str,
    count: int,
    observer: PhaseObserver | None,
) -> tuple[FlowReport, str | None]:
    """A new run whose proposal is ``diff`` (a given one, ``count`` paths), verified with
    the held run's command on the work tree as it is now: its report, and the command."""
    from tidegate.flow.transaction import execute
    from tidegate.planners.given import GivenProposalPlanner
    from tidegate.records.modes import Mode
    from tidegate.records.proposal import Proposal
    from tidegate.records.request import RunRequest
    from tidegate.store.recorder import StoreRecorder

    assert run.report is not None
    verify = run.report.verify.command if run.report.verify is not None else None
    summary = f"{count} of the paths of held run {run.run_id}, verified on their own"
    request = RunRequest(
        repo=repo.root,
        mode=Mode.PATCH,
        objective=summary,
        verify=verify,
        planner="given",
        max_attempts=1,
    )
    planner = GivenProposalPlanner(Proposal(diff=diff), summary)
    report = execute(request, observer=observer, planner=planner, recorder=StoreRecorder(store))
    return report, verify


def _already_there(repo: Repository, chosen: list[PathChange]) -> bool:
    """Whether every chosen path of the work tree already holds the change."""
    with tempfile.TemporaryDirectory(prefix="tidegate-landing-") as scratch:
        plan = plan_merge(repo.git, LocalFS(repo.root), chosen, Path(scratch))
    return bool(chosen) and not plan.ops and not plan.conflicts


def _all_paths(repo: Repository, t0: str, tree: str) -> list[str]:
    return [c.path for c in diff_trees(repo.git, t0, tree)]


def discard_run(repo_path: Path, store: RunStore, run_id: str | None) -> Landing:
    """``tidegate discard``: drop a held run's change; it can no longer be applied."""
    repo = discover(repo_path)
    run, landed = chosen_run(store, repo, run_id, "discard", "held")
    state = change_state(run, landed)
    if state != "held":
        raise refusal(run.run_id, state, "discard")
    with landing_lock(repo, "discard"):
        if (now := change_state(run, landings(store, run.run_id))) != "held":
            raise refusal(run.run_id, now, "discard")
        record_landing(store, run.run_id, "discarded", {})
    with suppress(GitError):  # the record says discarded: what is kept of it can go
        drop_kept(repo, run.run_id)
    return Landing(
        run.run_id,
        "discarded",
        f"discarded the held change of run {run.run_id}; your work tree was not touched",
    )


def undo_run(repo_path: Path, store: RunStore, run_id: str | None) -> Landing:
    """``tidegate undo``: reverse a landed run's change (the last landed one by default)."""
    repo = discover(repo_path)
    run, landed = chosen_run(store, repo, run_id, "undo", "applied")
    return _undo(repo, store, run, landed)


def undo_last(repo_path: Path, store: RunStore, count: int) -> list[Landing]:
    """``tidegate undo --last N``: the last ``count`` landed runs, the last landed first;
    stops at the first that cannot be undone."""
    repo = discover(repo_path)
    newest = newest_in(store, repo, ("applied",))
    if not newest:
        raise UsageError("no applied run to undo in this work tree (`tidegate runs`)")
    if count > len(newest):
        raise UsageError(
            f"--last {count}: only {len(newest)} applied run(s) to undo in this work tree"
        )
    done = []
    for stored in newest[:count]:
        run, landed = run_and_landings(store, repo, stored.run_id)
        outcome = _undo(repo, store, run, landed)
        done.append(outcome)
        if outcome.action != "undone":
            break
    return done


def _undo(
    repo: Repository, store: RunStore, run: StoredRun, landed: list[dict[str, Any]]
) -> Landing:
    state = change_state(run, landed)
    if state != "applied":
        raise refusal(run.run_id, state, "undo")
    by_run = landed[-1]["detail"].get("by_run") if landed else None
    source = run
    if isinstance(by_run, str):
        # A subset landed by a run of its own: its change is the one to reverse.
        source, _ = run_and_landings(store, repo, by_run)
    t0, tree = kept_change(repo, source)
    inverse = [PathChange(c.path, c.after, c.before) for c in diff_trees(repo.git, t0, tree)]
    with landing_lock(repo, "undo"):
        if (now := change_state(run, landings(store, run.run_id))) != "applied":
            raise refusal(run.run_id, now, "undo")
        outcome = merge_change(repo, run.run_id, f"{run.run_id}.undo", inverse)
        outcome.by_run = by_run if isinstance(by_run, str) else None
        if outcome.action == "undone":
            maybe_crash("landing.before_record")
            _record_undone(store, repo, run, source, inverse, outcome)
            outcome.message = _done("undone", run.run_id, outcome)
    return outcome


def _record_undone(
    store: RunStore,
    repo: Repository,
    run: StoredRun,
    source: StoredRun,
    inverse: list[PathChange],
    outcome: Landing,
) -> None:
    """Record the undo on the run, and on the other run of a subset landing (the subset's
    own run, or the held run whose subset it landed)."""
    detail = {"paths": [c.path for c in inverse], "written": outcome.written}
    record_landing(store, run.run_id, "undone", detail)
    if source is not run:
        record_landing(store, source.run_id, "undone", {**detail, "for_run": run.run_id})
    held_run = landed_by(store).get(run.run_id)
    if held_run is not None:  # a subset run undone by its own id: its held run too
        owner, owner_landed = run_and_landings(store, repo, held_run)
        if change_state(owner, owner_landed) == "applied":
            record_landing(store, held_run, "undone", {**detail, "by_run": run.run_id})


def _done(action: str, run_id: str, outcome: Landing) -> str:
    written = len(outcome.written)
    merged = f" ({len(outcome.merged)} merged with your edits)" if outcome.merged else ""
    state = "with the change" if action == "applied" else "without the change"
    already = f"; {len(outcome.unchanged)} already {state}" if outcome.unchanged else ""
    what = "applied the held change of" if action == "applied" else "undid"
    return (
        f"{what} run {run_id}: {written} path(s) written as unstaged edits{merged}{already}; "
        "the index was not touched"
    )


__all__ = [
    "Landing",
    "apply_run",
    "change_state",
    "checked_run_id",
    "discard_run",
    "undo_last",
    "undo_run",
]
