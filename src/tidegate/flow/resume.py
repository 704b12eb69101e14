"""``tidegate resume``: continue a paused or interrupted run from its last checkpoint.

The store hands over a ``ResumeTicket`` only after verifying the run's checkpoint chain
(hashes, ``prev_hash`` links, HMAC). Then a run resumes only if everything it was started
on is unchanged: the request and the planner's inputs (digests of the git blobs and files),
the repository configuration, the model-side hashes, the T0 snapshot ref and the
workspace fingerprint. Any difference refuses in one line that names it (a usage error,
exit 2), before anything is touched.

Work already done is not done again: finished attempts keep their record and feedback;
in the interrupted attempt, finished phases are skipped (their products -- plan, proposal,
candidate tree, verification -- come from the checkpoint). The shadow worktree is new, so
APPLY is replayed from the recorded proposal when VERIFY had not run yet; after a passed
VERIFY the run goes straight to APPLY_BACK with the recorded candidate tree.

A crash inside APPLY_BACK leaves a journal: resume completes it (as ``tidegate recover``
would) and then finds every path already holding the change, so nothing is written twice.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from tidegate.config import load_policy
from tidegate.config.records import LoadedConfig
from tidegate.errors import UsageError
from tidegate.flow.driver import Driver, request_summary
from tidegate.flow.pipeline import PhaseObserver, RunRecorder
from tidegate.flow.policy_record import effective_policy
from tidegate.flow.progress import STATE_FORMAT
from tidegate.flow.progress_inputs import (
    MODEL_HASHES,
    RunBlobs,
    RunInputs,
    config_sha256,
    planner_hashes,
    planner_inputs_sha256,
    workspace_identity,
)
from tidegate.flow.progress_restore import restore
from tidegate.flow.retention import fold_ended
from tidegate.flow.transaction import Announced, closing_notes, new_state
from tidegate.planners import Planner, planner_for
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest
from tidegate.records.resume import ResumeTicket
from tidegate.text.floats import decode_floats
from tidegate.workspace.claims import release as release_claim
from tidegate.workspace.fs import LocalFS
from tidegate.workspace.journal import journal_root, pending_journals, recover
from tidegate.workspace.lock import ApplyLock, RunLock
from tidegate.workspace.merge_back import plan_merge
from tidegate.workspace.owned_temp import claimed_temp_dirs, remove_dead_sandboxes_of
from tidegate.workspace.repo import Repository, discover
from tidegate.workspace.shadow import ShadowWorktree, acquire_shadow
from tidegate.workspace.shadow.leftovers import make_scratch, remove_stale_shadows
from tidegate.workspace.snapshot import T0Snapshot


class ResumeRefused(UsageError):
    """Something the run depends on changed since its checkpoint."""


def resume_run(
    ticket: ResumeTicket, recorder: RunRecorder, observer: PhaseObserver | None = None
) -> FlowReport:
    started = time.monotonic()
    saved = ticket.state
    refuse = _refuser(ticket)
    since = f" since checkpoint {ticket.checkpoint_seq}"
    run = _unchanged_inputs(ticket, refuse, since)
    repo, request, planner = run.repo, run.request, run.planner
    config = run.loaded.config
    t0 = saved["t0"]
    lock = RunLock(repo.runtime_dir, ticket.run_id)
    lock.acquire()
    lock.describe(mode=request.mode.value, planner=planner.name, phase="RESUME")
    scratch: Path | None = None
    shadow: ShadowWorktree | None = None
    try:
        notes, current = _check_workspace(repo, ticket, run.inputs, refuse, since)
        scratch = make_scratch(repo, ticket.run_id)
        shadow = acquire_shadow(
            repo, t0["commit"], ticket.run_id, pool=request.warm_shadow or config.shadow.pool
        )
        snapshot = T0Snapshot(
            run_id=ticket.run_id,
            head=t0["head"],
            commit=t0["commit"],
            index_tree=t0["index_tree"],
        )
        state = new_state(request, ticket.run_id, repo, snapshot, shadow, planner, scratch, config)
        state.policy = effective_policy(run.loaded, request)
        restored = restore(state, saved, run.blobs)
        state.notes.extend(notes)
        driver = Driver(
            state,
            recorder,
            started,
            events=restored.events,
            loop=restored.loop,
            inputs=msgspec.structs.replace(run.inputs, fingerprint=current),
            last_saved=dict(saved),
        )
        begin = _begin_resumed(ticket, recorder, driver, shadow)
        announced = Announced(lock, observer)
        report = driver.run(announced, begin, closing_notes(state, lock, shadow), restored)
        fold_ended(repo, ticket.run_id, report.status, config.retention, recorder)
        return report
    finally:
        if shadow is not None:
            shadow.release(keep=request.keep_shadow)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        release_claim(repo, ticket.run_id)
        lock.release()


class _Inputs(msgspec.Struct, frozen=True):
    """What a checkpoint's run was started on, found unchanged, and the planner built
    from it again."""

    repo: Repository
    blobs: RunBlobs
    inputs: RunInputs
    request: RunRequest
    loaded: LoadedConfig
    planner: Planner


def _unchanged_inputs(
    ticket: ResumeTicket, refuse: Callable[[str], ResumeRefused], since: str
) -> _Inputs:
    """Before the lock: the checkpoint's format, the request, the planner's inputs, the
    repository's configuration and the model-side hashes as the run recorded them;
    ResumeRefused naming the first that differs."""
    saved = ticket.state
    if saved.get("format") != STATE_FORMAT:
        raise refuse(f"its checkpoint has an unknown format {saved.get('format')!r}")
    repo = discover(Path(saved["repo"]))
    blobs = RunBlobs(repo, ticket.run_id)
    inputs = RunInputs.from_json(saved["inputs"])
    request = RunRequest.model_validate_json(blobs.read(inputs.request, "request"))
    loaded = load_policy(repo.root)
    if planner_inputs_sha256(request) != inputs.planner_sha256:
        raise refuse(f"the planner's inputs (script or patch files) changed{since}")
    if config_sha256(loaded.config) != inputs.config_sha256:
        raise refuse(f"the repository's tidegate configuration changed{since}")
    planner = planner_for(request, config=loaded.config)
    _require_same_model_hashes(planner, inputs, refuse, since)
    return _Inputs(repo, blobs, inputs, request, loaded, planner)


def _require_same_model_hashes(
    planner: Planner, inputs: RunInputs, refuse: Callable[[str], ResumeRefused], since: str
) -> None:
    """Refuse (closing the planner) when a model-side hash differs from the recorded one."""
    current_hashes = planner_hashes(planner)
    changed = [
        name.replace("_", " ")
        for name in MODEL_HASHES
        if inputs.model_hashes.get(name) != current_hashes.get(name)
    ]
    if changed:
        getattr(planner, "close", lambda: None)()
        raise refuse(f"the {', '.join(changed)} hash(es) changed{since}")


def _check_workspace(
    repo: Repository,
    ticket: ResumeTicket,
    inputs: RunInputs,
    refuse: Callable[[str], ResumeRefused],
    since: str,
) -> tuple[list[str], dict[str, str | None]]:
    """Under the lock: T0 still there, the run's own journal finished, stale shadows gone,
    and the workspace as the checkpoint left it (or with the apply-back already done).
    Returns the notes this leaves and the workspace identity now."""
    saved = ticket.state
    t0 = saved["t0"]
    if repo.git.rev_parse(t0["ref"]) != t0["commit"]:
        raise refuse(f"its T0 snapshot {t0['ref']} is gone or was moved")
    notes = [f"resumed ({ticket.status}) from checkpoint {ticket.checkpoint_seq}"]
    notes += _finish_own_journal(repo, ticket, refuse)
    # A killed run left its shadow behind; the shadows of live runs are claimed and stay.
    temps = claimed_temp_dirs(repo)  # before the sweep releases the dead runs' claims
    notes += [f"removed the stale shadow {path}" for path in remove_stale_shadows(repo)]
    # And its commands' private TMPDIR/HOME (named for their dead owner; live ones stay),
    # after killing what its uncontained commands left running.
    killed: list[int] = []
    with contextlib.suppress(OSError):
        remove_dead_sandboxes_of(temps, killed)
    notes += [f"killed process group {g}, left running by a dead tidegate" for g in killed]
    current = workspace_identity(repo.root)
    if current["value"] != inputs.fingerprint["value"]:
        if not _already_applied(repo, saved):
            raise refuse(_what_changed(repo, inputs.fingerprint, current) + since)
        notes.append(
            "the apply-back had completed before the interruption; nothing is written twice"
        )
    return notes, current


def _begin_resumed(
    ticket: ResumeTicket, recorder: RunRecorder, driver: Driver, shadow: ShadowWorktree
) -> Callable[[], None]:
    """How the resumed execution begins: the run reopened in the store, the resume (and
    an interruption found on the way) in the trace, and a first checkpoint."""
    saved = ticket.state
    state = driver.state
    request = state.request

    def begin() -> None:
        recorder.begin(
            ticket.run_id,
            str(state.repo.root),
            request.mode.value,
            request_summary(request),
            resumed=True,
        )
        if ticket.status == "interrupted":
            recorder.event("run.interrupted", payload={"detected": "on resume"})
        attempt = saved["attempt"]
        recorder.event(
            "run.resumed",
            attempt=attempt["number"],
            payload={
                "from_checkpoint": ticket.checkpoint_seq,
                "status": ticket.status,
                "attempt": attempt["number"],
                "after": attempt["completed"][-1] if attempt["completed"] else None,
            },
            meta={"checkpoint_hash": ticket.checkpoint_hash, "shadow": str(shadow.path)},
        )
        driver.checkpoint("resume")

    return begin


def _refuser(ticket: ResumeTicket) -> Callable[[str], ResumeRefused]:
    def refuse(what: str) -> ResumeRefused:
        return ResumeRefused(f"cannot resume run {ticket.run_id}: {what}")

    return refuse


def _finish_own_journal(
    repo: Repository, ticket: ResumeTicket, refuse: Callable[[str], ResumeRefused]
) -> list[str]:
    """Complete this run's interrupted apply-back; refuse while another run's is pending."""
    lock = ApplyLock(repo.runtime_dir, f"resume-{ticket.run_id}").acquire()
    try:
        return _finish_locked(repo, ticket, refuse)
    finally:
        lock.release()


def _finish_locked(
    repo: Repository, ticket: ResumeTicket, refuse: Callable[[str], ResumeRefused]
) -> list[str]:
    notes: list[str] = []
    own = journal_root(repo.runtime_dir) / ticket.run_id
    if own.is_dir():
        report = recover(LocalFS(repo.root), own)
        if report.diverged:
            raise refuse(
                f"its interrupted apply-back could not be finished ({', '.join(report.diverged)} "
                "changed after the crash); run `tidegate recover`"
            )
        notes.append(
            f"finished the apply-back the interruption left half done ({len(report.finished)} "
            "path(s) written from its journal)"
        )
    others = pending_journals(repo.runtime_dir)
    if others:
        raise refuse(
            f"an apply-back of run {others[0].name} is pending; run `tidegate recover` first"
        )
    return notes


def _already_applied(repo: Repository, saved: Mapping[str, Any]) -> bool:
    """The run stopped at APPLY_BACK and every path of its change already holds the
    candidate's content (the apply-back finished, or ``recover`` finished it)."""
    attempt = decode_floats(saved["attempt"])
    completed = attempt["completed"]
    tree = attempt["candidate_tree"]
    if tree is None or attempt["failed"] is not None or "VERIFY" not in completed:
        return False
    from tidegate.workspace.changes import diff_trees

    changes = diff_trees(repo.git, saved["t0"]["commit"], tree)
    with tempfile.TemporaryDirectory(prefix="tidegate-resume-") as scratch:
        plan = plan_merge(repo.git, LocalFS(repo.root), changes, Path(scratch))
    return bool(changes) and not plan.ops and not plan.conflicts


def _what_changed(
    repo: Repository, recorded: Mapping[str, str | None], current: Mapping[str, str | None]
) -> str:
    """One clause naming how the workspace differs from the checkpoint's."""
    if recorded.get("head") != current.get("head"):
        old, new = (str(v or "none")[:12] for v in (recorded.get("head"), current.get("head")))
        return f"the workspace changed (HEAD moved from {old} to {new})"
    old_tree, new_tree = recorded.get("tree"), current.get("tree")
    if old_tree and new_tree and old_tree != new_tree:
        res = repo.git.run("diff-tree", "-r", "-z", "--name-only", old_tree, new_tree, check=False)
        paths = [p.decode("utf-8", "replace") for p in res.stdout.split(b"\0") if p]
        if paths:
            more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
            return f"the workspace changed ({', '.join(paths[:3])}{more})"
    if recorded.get("index") != current.get("index"):
        return "the workspace changed (the staged state in the git index)"
    return "the workspace changed (its fingerprint differs)"
