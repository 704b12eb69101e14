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

import re
import tempfile
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tidegate.disk.faults import maybe_crash
from tidegate.errors import GitError, UsageError
from tidegate.flow.headstart import new_run_id
from tidegate.flow.phases.apply_back import write_rejects
from tidegate.flow.pipeline import PhaseObserver
from tidegate.git.settings import no_index
from tidegate.records.report import FlowReport
from tidegate.store.db import RunStore
from tidegate.store.landings import landed_by, landings, record_landing
from tidegate.store.rows import StoredRun
from tidegate.workspace import landed
from tidegate.workspace.changes import PathChange, diff_trees
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.journal import (
    ApplyBackRace,
    ApplyBackWriteError,
    apply_ops,
)
from tidegate.workspace.keep import drop_kept, kept_object
from tidegate.workspace.lock import ApplyLock, landing
from tidegate.workspace.merge_back import plan_merge
from tidegate.workspace.repo import Repository, discover

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
"""What a run id looks like (``flow.headstart.new_run_id`` makes them): no path, no dots."""
_SCAN = 200
"""How many of the newest runs are looked at to find the one a command means by default."""


@dataclass
class Landing:
    """What ``apply``, ``discard`` or ``undo`` did to one run."""

    run_id: str
    action: str
    """``applied``, ``discarded``, ``undone``; ``conflict`` or ``failed``: nothing changed
    (unless ``journal_kept``)."""
    message: str
    written: list[str] = field(default_factory=list)
    """Every path written, deletions included."""
    deleted: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    rejects: list[str] = field(default_factory=list)
    rejects_dir: str | None = None
    by_run: str | None = None
    """The run that verified and landed a subset (``apply --only/--exclude``)."""
    report: FlowReport | None = None
    """That run's report."""
    exit_code: int = 0

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "report"}
        out["report"] = None if self.report is None else self.report.model_dump(mode="json")
        return out


def checked_run_id(text: str) -> str:
    """``text`` when it is a run id; a one-line usage error for a path, ``..`` or anything
    else (the id names refs, a journal and a rejects directory)."""
    if not _RUN_ID.fullmatch(text):
        raise UsageError(f"{text!r} is not a run id (`tidegate runs` lists them)")
    return text


# -- what became of a run's change ---------------------------------------------------------


def change_state(run: StoredRun, landed: list[dict[str, Any]]) -> str:
    """``held``, ``applied``, ``discarded``, ``undone``, or ``none`` (no change of its own
    to land or reverse: failed, paused, a review...)."""
    if landed:
        return str(landed[-1]["action"])
    if run.status == "held":
        return "held"
    report = run.report
    if (
        run.status == "succeeded"
        and report is not None
        and any(f.action != "unchanged" for f in report.applied_files)
    ):
        return "applied"
    return "none"


def _refusal(run_id: str, state: str, wanted: str) -> UsageError:
    said = {
        "held": "its change is held, not applied",
        "applied": "its change was already applied",
        "discarded": "its change was discarded",
        "undone": "its change was applied and then undone",
        "none": "it has no change of its own to "
        + ("apply" if wanted != "undo" else "undo")
        + " (it did not succeed, or it changed nothing)",
    }[state]
    hint = {
        ("apply", "applied"): f"; `tidegate undo {run_id}` reverses it",
        ("discard", "applied"): f"; `tidegate undo {run_id}` reverses it",
        ("undo", "held"): f"; `tidegate discard {run_id}` drops it",
    }.get((wanted, state), "")
    return UsageError(f"cannot {wanted} run {run_id}: {said}{hint}")


def _run(store: RunStore, repo: Repository, run_id: str) -> tuple[StoredRun, list[dict[str, Any]]]:
    run = store.get(checked_run_id(run_id))
    if run.problem is not None:
        from tidegate.store.corrupt import CorruptRecord

        raise CorruptRecord(f"run {run.run_id} is corrupt in the store: {run.problem}")
    if run.repo != str(repo.root):
        raise UsageError(
            f"run {run.run_id} was recorded for another work tree ({run.repo}), not {repo.root}"
        )
    return run, landings(store, run.run_id)


def _newest(store: RunStore, repo: Repository, states: tuple[str, ...]) -> list[StoredRun]:
    """This work tree's runs whose change is in one of ``states``, the last landed first."""
    found = []
    subsets = landed_by(store)  # their change is the held run's: listed under it
    for run in store.runs(limit=_SCAN, repo=str(repo.root)):
        if run.problem is not None or run.run_id in subsets:
            continue
        landed = landings(store, run.run_id)
        if change_state(run, landed) in states:
            when = landed[-1]["at_ms"] if landed else run.updated_ms
            found.append((when, run.seq, run))
    found.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [run for _, _, run in found]


def _chosen(
    store: RunStore, repo: Repository, run_id: str | None, wanted: str, state: str
) -> tuple[StoredRun, list[dict[str, Any]]]:
    if run_id is not None and run_id != "latest":
        return _run(store, repo, run_id)
    newest = _newest(store, repo, (state,))
    if not newest:
        raise UsageError(f"no {state} run to {wanted} in this work tree (`tidegate runs`)")
    return _run(store, repo, newest[0].run_id)


# -- the change itself -----------------------------------------------------------------------


def _change(repo: Repository, run: StoredRun) -> tuple[str, str]:
    """The run's T0 tree and the tree its verification passed on, as the run store
    (outside the repository) recorded them. What the repository keeps of the run
    (``workspace.keep``: its own refs, or ``refs/tidegate/keep``) must hold that very tree:
    a result moved to another tree is refused, never landed. A run recorded before results
    were kept has none; its tree is used while git still has it."""
    report = run.report
    assert report is not None
    verified = [
        a.candidate_tree
        for a in report.attempt_events
        if a.status == "succeeded" and a.candidate_tree is not None
    ]
    if not verified:
        raise UsageError(f"run {run.run_id}: its report names no verified change")
    tree = verified[-1]
    kept = kept_object(repo, run.run_id, "result")
    if kept is not None and kept != tree:
        raise UsageError(
            f"run {run.run_id}: what is kept of its result does not hold the change that was "
            f"verified (tree {tree[:12]}, kept {kept[:12]}); nothing was changed"
        )
    t0 = kept_object(repo, run.run_id, "t0") or report.t0_commit
    if t0 is None or not _exists(repo, tree) or not _exists(repo, t0):
        raise UsageError(
            f"run {run.run_id}: its change is no longer kept in this repository (pruned by "
            "retention: `tidegate gc`, [retention] runs); nothing was changed"
        )
    return t0, tree


def _policy_unchanged(repo: Repository, run: StoredRun) -> None:
    """Refuse to land a held change once tidegate's configuration in the work tree judges
    changes differently from when VALIDATE judged it (APPLY_BACK's rule, for a run whose
    APPLY_BACK comes later): the run's verdict no longer speaks for the policy there now."""
    assert run.report is not None
    recorded = run.report.effective_policy
    if recorded is None:
        return
    from tidegate.config import load_policy

    try:
        now: object = load_policy(repo.root).config.validate_.model_dump(mode="json")
    except UsageError:
        now = None
    if now != recorded.validate_policy:
        raise UsageError(
            f"cannot apply run {run.run_id}: tidegate's configuration (pyproject.toml "
            "[tool.tidegate] or .tidegate/config.toml) judges changes differently since the "
            "run was held; nothing was applied. Run it again, or discard it"
        )


def _exists(repo: Repository, oid: str) -> bool:
    return repo.git.run("cat-file", "-e", f"{oid}^{{tree}}", check=False).returncode == 0


def _select(changes: list[PathChange], only: list[str], exclude: list[str]) -> list[PathChange]:
    """The changes under ``only`` (all without it) and under none of ``exclude``; a path
    of either list that names no path of the change is a usage error."""

    def under(path: str, spec: str) -> bool:
        spec = spec.rstrip("/")
        return path == spec or path.startswith(spec + "/") or spec in ("", ".")

    for spec in (*only, *exclude):
        if spec.startswith("/") or ".." in spec.split("/"):
            raise UsageError(f"{spec!r}: give paths relative to the work tree's top")
        if not any(under(c.path, spec) for c in changes):
            raise UsageError(f"{spec!r} is not a path of the run's change")
    chosen = [
        c
        for c in changes
        if (not only or any(under(c.path, s) for s in only))
        and not any(under(c.path, s) for s in exclude)
    ]
    if not chosen:
        raise UsageError("--only and --exclude leave no path of the change to apply")
    return chosen


def _locked(repo: Repository, what: str) -> AbstractContextManager[ApplyLock]:
    """The landing lock (APPLY_BACK's), with no interrupted apply-back pending."""
    return landing(repo.runtime_dir, f"{what}-{new_run_id()}")


def _merge(repo: Repository, run_id: str, label: str, changes: list[PathChange]) -> Landing:
    """Merge ``changes`` into the work tree as APPLY_BACK does, journalled as ``label``."""
    fs = LocalFS(repo.root)
    with tempfile.TemporaryDirectory(prefix="tidegate-landing-") as scratch:
        plan = plan_merge(repo.git, fs, changes, Path(scratch))
    verb = "undo" if label.endswith(".undo") else "apply"
    if plan.conflicts:
        rejects, directory, _note = write_rejects(repo, label, plan.conflicts)
        first = plan.conflicts[0]
        return Landing(
            run_id,
            "conflict",
            f"cannot {verb} run {run_id}: {len(plan.conflicts)} path(s) conflict with your "
            f"work tree (first: {first.path}: {first.reason}); nothing was changed",
            rejects=rejects,
            rejects_dir=str(directory),
            exit_code=3,
        )
    try:
        apply_ops(fs, plan.ops, repo.runtime_dir, label)
    except ApplyBackRace as exc:
        return Landing(run_id, "conflict", f"cannot {verb} run {run_id}: {exc}", exit_code=3)
    except ApplyBackWriteError as exc:
        return Landing(run_id, "failed", f"cannot {verb} run {run_id}: {exc}", exit_code=1)
    if plan.ops:
        with suppress(OSError):  # written: only its place in the landing order is lost
            landed.append(repo.runtime_dir, run_id, verb, len(plan.ops))
    return Landing(
        run_id,
        "applied" if verb == "apply" else "undone",
        "",
        written=[op.path for op in plan.ops],
        deleted=[op.path for op in plan.ops if op.new.kind == "missing"],
        merged=[op.path for op in plan.ops if op.merged],
        unchanged=plan.unchanged,
    )


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
    _policy_unchanged(repo, run)
    t0, tree = _change(repo, run)
    changes = diff_trees(repo.git, t0, tree)
    chosen = _select(changes, only, exclude)
    if len(chosen) < len(changes):
        return _apply_subset(repo, store, run, t0, tree, chosen, observer)
    with _locked(repo, "apply"):
        # Under the lock, the record read again: another apply or a discard may have won.
        if (now := change_state(run, landings(store, run.run_id))) != "held":
            raise _refusal(run.run_id, now, "apply")
        outcome = _merge(repo, run.run_id, f"{run.run_id}.apply", chosen)
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
    run, landed = _chosen(store, repo, run_id, "apply", "held")
    state = change_state(run, landed)
    if state != "held":
        raise _refusal(run.run_id, state, "apply")
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
    from tidegate.flow.transaction import execute
    from tidegate.planners.given import GivenProposalPlanner
    from tidegate.records.modes import Mode
    from tidegate.records.proposal import Proposal
    from tidegate.records.request import RunRequest
    from tidegate.store.recorder import StoreRecorder

    assert run.report is not None
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
    diff = repo.git.run(
        "diff", "--binary", "--no-renames", "--full-index", "--no-color", "--no-ext-diff",
        "--no-textconv", t0, tree, "--", *(f":(literal){p}" for p in paths),
        env=no_index(),
    ).stdout.decode("utf-8", "surrogateescape")  # fmt: skip
    verify = run.report.verify.command if run.report.verify is not None else None
    summary = f"{len(paths)} of the paths of held run {run.run_id}, verified on their own"
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
    run, landed = _chosen(store, repo, run_id, "discard", "held")
    state = change_state(run, landed)
    if state != "held":
        raise _refusal(run.run_id, state, "discard")
    with _locked(repo, "discard"):
        if (now := change_state(run, landings(store, run.run_id))) != "held":
            raise _refusal(run.run_id, now, "discard")
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
    run, landed = _chosen(store, repo, run_id, "undo", "applied")
    return _undo(repo, store, run, landed)


def undo_last(repo_path: Path, store: RunStore, count: int) -> list[Landing]:
    """``tidegate undo --last N``: the last ``count`` landed runs, the last landed first;
    stops at the first that cannot be undone."""
    repo = discover(repo_path)
    newest = _newest(store, repo, ("applied",))
    if not newest:
        raise UsageError("no applied run to undo in this work tree (`tidegate runs`)")
    if count > len(newest):
        raise UsageError(
            f"--last {count}: only {len(newest)} applied run(s) to undo in this work tree"
        )
    done = []
    for stored in newest[:count]:
        run, landed = _run(store, repo, stored.run_id)
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
        raise _refusal(run.run_id, state, "undo")
    by_run = landed[-1]["detail"].get("by_run") if landed else None
    source = run
    if isinstance(by_run, str):
        # A subset landed by a run of its own: its change is the one to reverse.
        source, _ = _run(store, repo, by_run)
    t0, tree = _change(repo, source)
    inverse = [PathChange(c.path, c.after, c.before) for c in diff_trees(repo.git, t0, tree)]
    with _locked(repo, "undo"):
        if (now := change_state(run, landings(store, run.run_id))) != "applied":
            raise _refusal(run.run_id, now, "undo")
        outcome = _merge(repo, run.run_id, f"{run.run_id}.undo", inverse)
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
        owner, owner_landed = _run(store, repo, held_run)
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
