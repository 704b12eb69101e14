"""``--rebase``: a change that conflicts at APPLY_BACK tries again on a fresh T0.

When a run's verified change overlaps what landed in the work tree since its T0 (another
run's change, the user's edit), APPLY_BACK writes nothing and explains in ``.rej`` files.
With ``RunRequest.rebase`` left, a new run starts: a fresh T0 (holding what landed), the old
run's verified change re-applied on it (``planners.rebase``), VALIDATE and VERIFY again,
and its own APPLY_BACK under the landing lock. Each round spends one of the bound; the
last report stands, and names the run it rebased (``rebased_from``). When a rebase lands,
the ``.rej`` files of the conflict it resolved are removed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from tidegate.errors import GitError
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest
from tidegate.workspace.keep import kept_object
from tidegate.workspace.repo import Repository

if TYPE_CHECKING:
    from tidegate.planners.rebase import RebasePlanner

CONTEXTS = (3, 1, 0)
"""How much context the re-applied diff keeps, tried in this order."""


def rebasable(report: FlowReport, request: RunRequest) -> bool:
    """A conflict at APPLY_BACK of a verified change, with a rebase left."""
    return (
        request.rebase > 0
        and report.status == "conflict"
        and report.failure_phase == "APPLY_BACK"
        and report.t0_commit is not None
    )


def rebase(
    repo: Repository,
    report: FlowReport,
    request: RunRequest,
    run: Callable[[RunRequest, RebasePlanner], FlowReport],
) -> tuple[RunRequest, FlowReport] | None:
    """Run the rebase of ``report``'s change (``run`` executes the new request with its
    planner): the request it ran and its report; None when the change was not kept
    (nothing to re-apply)."""
    # only a rebase reads a landed change and replays it
    from tidegate.flow.land import change_diff
    from tidegate.planners.rebase import RebasePlanner

    assert report.t0_commit is not None
    try:
        candidate = kept_object(repo, report.run_id, "result")
    except GitError:
        return None
    if candidate is None:
        return None
    diffs = tuple((n, change_diff(repo, report.t0_commit, candidate, context=n)) for n in CONTEXTS)
    planner = RebasePlanner(diffs, report.run_id)
    note = (
        f"rebase of run {report.run_id}: its change conflicted with what landed since its "
        "T0; re-applied on a fresh T0 and verified again"
    )
    again = request.model_copy(
        update={
            "rebase": request.rebase - 1,
            "planner": "rebase",
            "max_attempts": 1,
            "model": None,
            "agent": None,
            "notes": (*request.notes, note),
        }
    )
    new = run(again, planner)
    notes = list(new.notes)
    if planner.used_context is not None and planner.used_context < 3:
        notes.append(f"re-applied with {planner.used_context} line(s) of context")
    if new.status == "succeeded" and report.rejects_dir:
        shutil.rmtree(report.rejects_dir, ignore_errors=True)
        notes.append(f"removed the .rej files of run {report.run_id}'s conflict")
    return again, new.model_copy(update={"rebased_from": report.run_id, "notes": notes})
