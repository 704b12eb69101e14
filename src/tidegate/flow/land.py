"""How a run's kept change lands: which run a command means, what became of its change,
the trees it is made of, and the three-way merge that writes it (``flow.landing`` holds
the commands: ``apply``, ``discard``, ``undo``).

Every write goes the way APPLY_BACK's does -- ``workspace.merge_back`` plans a three-way
merge of every path before anything is written, a conflict writes ``.rej`` files and
changes nothing, ``workspace.journal`` makes the writes crash-safe (``tidegate recover``
finishes or rolls back a journal these leave, named ``<run-id>.apply`` or
``<run-id>.undo``) -- under the landing lock APPLY_BACK takes, never touching the index.
"""

from __future__ import annotations

import re
import tempfile
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import Any

import msgspec

from tidegate.errors import UsageError
from tidegate.flow.headstart import new_run_id
from tidegate.flow.phases.apply_back import write_rejects
from tidegate.git.settings import no_index
from tidegate.records.report import FlowReport
from tidegate.store.db import RunStore
from tidegate.store.landings import landed_by, landings
from tidegate.store.rows import StoredRun
from tidegate.workspace import landed
from tidegate.workspace.changes import PathChange
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.journal import (
    ApplyBackRace,
    ApplyBackWriteError,
    apply_ops,
)
from tidegate.workspace.keep import kept_object
from tidegate.workspace.lock import ApplyLock, landing
from tidegate.workspace.merge_back import plan_merge
from tidegate.workspace.repo import Repository

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
"""What a run id looks like (``flow.headstart.new_run_id`` makes them): no path, no dots."""
_SCAN = 200
"""How many of the newest runs are looked at to find the one a command means by default."""


class Landing(msgspec.Struct):
    """What ``apply``, ``discard`` or ``undo`` did to one run."""

    run_id: str
    action: str
    """``applied``, ``discarded``, ``undone``; ``conflict`` or ``failed``: nothing changed
    (unless ``journal_kept``)."""
    message: str
    written: list[str] = msgspec.field(default_factory=list)
    """Every path written, deletions included."""
    deleted: list[str] = msgspec.field(default_factory=list)
    merged: list[str] = msgspec.field(default_factory=list)
    unchanged: list[str] = msgspec.field(default_factory=list)
    rejects: list[str] = msgspec.field(default_factory=list)
    rejects_dir: str | None = None
    by_run: str | None = None
    """The run that verified and landed a subset (``apply --only/--exclude``)."""
    report: FlowReport | None = None
    """That run's report."""
    exit_code: int = 0

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in msgspec.structs.asdict(self).items() if k != "report"}
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


def refusal(run_id: str, state: str, wanted: str) -> UsageError:
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


def run_and_landings(
    store: RunStore, repo: Repository, run_id: str
) -> tuple[StoredRun, list[dict[str, Any]]]:
    run = store.get(checked_run_id(run_id))
    if run.problem is not None:
        from tidegate.store.corrupt import CorruptRecord

        raise CorruptRecord(f"run {run.run_id} is corrupt in the store: {run.problem}")
    if run.repo != str(repo.root):
        raise UsageError(
            f"run {run.run_id} was recorded for another work tree ({run.repo}), not {repo.root}"
        )
    return run, landings(store, run.run_id)


def newest_in(store: RunStore, repo: Repository, states: tuple[str, ...]) -> list[StoredRun]:
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


def chosen_run(
    store: RunStore, repo: Repository, run_id: str | None, wanted: str, state: str
) -> tuple[StoredRun, list[dict[str, Any]]]:
    if run_id is not None and run_id != "latest":
        return run_and_landings(store, repo, run_id)
    newest = newest_in(store, repo, (state,))
    if not newest:
        raise UsageError(f"no {state} run to {wanted} in this work tree (`tidegate runs`)")
    return run_and_landings(store, repo, newest[0].run_id)


# -- the change itself -----------------------------------------------------------------------


def kept_change(repo: Repository, run: StoredRun) -> tuple[str, str]:
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
    if t0 is None or not tree_exists(repo, tree) or not tree_exists(repo, t0):
        raise UsageError(
            f"run {run.run_id}: its change is no longer kept in this repository (pruned by "
            "retention: `tidegate gc`, [retention] runs); nothing was changed"
        )
    return t0, tree


def policy_unchanged(repo: Repository, run: StoredRun) -> None:
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


def change_diff(
    repo: Repository, t0: str, tree: str, paths: list[str] | None = None, context: int = 3
) -> str:
    """The change from ``t0`` to ``tree`` (of ``paths`` only, when given) as a unified diff
    with ``context`` lines, binary content included: a proposal a new run can apply."""
    return repo.git.run(
        "diff", "--binary", "--no-renames", "--full-index", "--no-color", "--no-ext-diff",
        "--no-textconv", f"--unified={context}", t0, tree,
        *(["--", *(f":(literal){p}" for p in paths)] if paths is not None else []),
        env=no_index(),
    ).stdout.decode("utf-8", "surrogateescape")  # fmt: skip


def tree_exists(repo: Repository, oid: str) -> bool:
    return repo.git.run("cat-file", "-e", f"{oid}^{{tree}}", check=False).returncode == 0


def select_paths(
    changes: list[PathChange], only: list[str], exclude: list[str]
) -> list[PathChange]:
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


def landing_lock(repo: Repository, what: str) -> AbstractContextManager[ApplyLock]:
    """The landing lock (APPLY_BACK's), with no interrupted apply-back pending."""
    return landing(repo.runtime_dir, f"{what}-{new_run_id()}")


def merge_change(repo: Repository, run_id: str, label: str, changes: list[PathChange]) -> Landing:
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
