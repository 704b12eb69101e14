"""``ledger run``: the next item as a guarded tidegate run, recorded as host-attested evidence.

The objective is the item's title plus the fenced ``tidegate`` edit blocks of its plan
section, laid out on the same lines as in the plan file, so an error in an edit block is
reported as ``plan.md:LINE``. The item is claimed only after the objective and the
repository have been checked. The run's own report becomes the evidence: run id, status,
final diff SHA-256, verification command and exit code, changed files with their hashes.
Then the item is done (run succeeded), requeued (failed, within budget, with a changed
condition) or blocked (conflict, lock, budget, or the same failure again).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tidegate.errors import ErrorClass, UsageError
from tidegate.flow.pipeline import PhaseObserver
from tidegate.flow.transaction import execute
from tidegate.ledger.atomic import TaskLock
from tidegate.ledger.errors import TransitionRefused
from tidegate.ledger.evidence import Draft, fingerprint
from tidegate.ledger.model import EvidenceKind, FailureType, Item, PlanSection
from tidegate.ledger.next_action import next_action, refresh
from tidegate.ledger.operations import Outcome
from tidegate.ledger.routes import micro_gates
from tidegate.ledger.setbacks import block, requeue
from tidegate.ledger.taskdir import Task, load_task, now, save_task
from tidegate.ledger.transitions import Change, claim, done, record
from tidegate.planners import planner_for
from tidegate.planners.objective import parse_objective
from tidegate.records.modes import DEFAULT_VERIFY_TIMEOUT_S
from tidegate.records.report import FlowReport
from tidegate.records.request import RunRequest
from tidegate.store import StoreRecorder, open_run_store
from tidegate.workspace.repo import discover


class RunOptions(msgspec.Struct, frozen=True):
    repo: Path
    planner: str = "structured"
    verify: str | None = None
    max_attempts: int = 3
    verify_timeout_s: float = DEFAULT_VERIFY_TIMEOUT_S
    assignee: str = "tidegate"
    state_root: str | None = None
    """Where the run is recorded (default: $TIDEGATE_STATE_ROOT or the user state dir)."""
    model: str | None = None
    """A model plans and patches the item (``--model``); the objective is the item's
    title and its plan section as prose."""
    max_cost_usd: float | None = None
    max_steps: int | None = None
    agent: str | None = None
    """An agent CLI works the item (``--agent``); its objective is prose, as for a model."""
    agent_model: str | None = None
    allow_uncontained: bool = False
    """The user's approval (``--allow-uncontained``) to run a plan's ``Verify:`` command
    uncontained where bubblewrap is unusable; without it the guard refuses it."""


class ItemRun(msgspec.Struct, frozen=True):
    item: str | None
    outcome: Outcome
    report: FlowReport | None = None


def objective_text(item: Item, section: PlanSection | None) -> str:
    lines = [f"{item.id}: {item.title}"]
    for first, text in section.edit_blocks if section else ():
        lines += [""] * max(0, first - 1 - len(lines))
        lines += text.split("\n")[:-1]
    return "\n".join(lines) + "\n"


MAX_SECTION_LINES = 200


def model_objective(task: Task, item: Item, section: PlanSection | None) -> str:
    """The item's title and its plan section (up to the next heading) for a model."""
    lines = [f"{item.id}: {item.title}", ""]
    if section is not None:
        try:
            text = (task.dir / task.state.plan_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        for line in text.splitlines()[section.line :][:MAX_SECTION_LINES]:
            if line.startswith("#"):
                break
            lines.append(line)
    return "\n".join(lines).rstrip() + "\n"


def _prepare(task: Task, item: Item, options: RunOptions) -> tuple[str, str, str | None]:
    """The objective, the name its errors use, and the verify command. Raises before any
    change if the item cannot run."""
    state = task.state
    section = state.plan.get(item.id)
    source = str(task.dir / state.plan_file)
    verify = options.verify or (section.verify if section else None)
    if micro_gates(state.route) and not verify:
        raise UsageError(
            f"route {state.route} runs a micro-gate before done: give --verify or a "
            f"'Verify:' line in the plan section of {item.id}"
        )
    if options.model is not None or options.agent is not None:
        return model_objective(task, item, section), source, verify
    text = objective_text(item, section)
    if options.planner == "structured":
        if section is None or not section.edit_blocks:
            where = f"{source}:{section.line}" if section else source
            raise UsageError(
                f"{where}: {item.id} has no ```tidegate block of edit blocks for the "
                "structured planner"
            )
        parse_objective(text, source)
    return text, source, verify


def run_next(task_dir: Path, options: RunOptions, observer: PhaseObserver | None = None) -> ItemRun:
    """Run the item the next action names; stop (exit 1) at a blocker or a person's gate."""
    with TaskLock(task_dir):
        task = load_task(task_dir)
        action = next_action(task.state)
        if action.kind == "decide" and action.item is not None:
            return _block_for_decision(task, action.item, options)
        if action.kind not in ("claim", "continue") or action.item is None:
            code = 1 if action.kind in ("blocked", "decide", "promote") else 0
            return ItemRun(None, Outcome([f"nothing to run: {action.text}"], action, code))
        item = task.state.item(action.item)
        assert item is not None
        if action.kind == "continue" and item.assignee != options.assignee:
            raise UsageError(
                f"{item.id} is claimed by {item.assignee}; ledger run continues only its own "
                f"claims (record and finish it, or requeue or block it first)"
            )
        objective, source, verify = _prepare(task, item, options)
        discover(options.repo)
        # The run is recorded like any other (task id = the item); a bad state root is
        # refused here, before the item is claimed.
        recorder = StoreRecorder(
            open_run_store(options.repo, options.state_root),
            task_id=item.id,
            kind="ledger",
            pausable=False,
        )
        request = _request(task_dir, options, objective, source, verify)
        # The planner (and a model's settings) are checked before the item is claimed, so a
        # bad --model changes nothing.
        planner = planner_for(request, recorder=recorder)
        try:
            if action.kind == "claim":
                change = claim(task.state, item.id, options.assignee)
                after = refresh(task.state)
                save_task(task)
                if change.stopped:
                    lines = [change.message, f"next: {after.text}"]
                    return ItemRun(item.id, Outcome(lines, after, 1))
            report = execute(request, observer=observer, planner=planner, recorder=recorder)
        finally:
            getattr(planner, "close", lambda: None)()
        task = load_task(task_dir)
        change = settle(task, item.id, report)
        after = refresh(task.state)
        save_task(task)
    lines = [*change.message.splitlines(), f"next: {after.text}"]
    return ItemRun(item.id, Outcome(lines, after, 1 if change.stopped else 0), report)


def _request(
    task_dir: Path, options: RunOptions, objective: str, source: str, verify: str | None
) -> RunRequest:
    """The guarded run's request for an item: its objective, where it came from, and
    the verify command (from the command line, else the item's 'Verify:' line)."""
    return RunRequest(
        repo=options.repo,
        objective=objective,
        objective_base=task_dir,
        objective_source=source,
        verify=verify,
        # a 'Verify:' line is a command from the task's files, not the command line
        origin="user" if options.verify or verify is None else "repository",
        uncontained_approval="--allow-uncontained" if options.allow_uncontained else None,
        planner=options.planner,
        max_attempts=options.max_attempts,
        verify_timeout_s=options.verify_timeout_s,
        model=options.model,
        agent=options.agent,
        agent_model=options.agent_model,
        max_cost_usd=options.max_cost_usd,
        max_steps=options.max_steps,
    )


def _block_for_decision(task: Task, item_id: str, options: RunOptions) -> ItemRun:
    """A human gate: claiming it records the block and the decision needed; nothing runs."""
    change = claim(task.state, item_id, options.assignee)
    after = refresh(task.state)
    save_task(task)
    return ItemRun(item_id, Outcome([change.message, f"next: {after.text}"], after, 1))


def run_items(
    task_dir: Path, options: RunOptions, all_items: bool, observer: PhaseObserver | None = None
) -> list[ItemRun]:
    """One item, or (``all_items``) items until one fails or the next action is not a run."""
    runs = [run_next(task_dir, options, observer)]
    while all_items and runs[-1].report is not None and runs[-1].outcome.exit_code == 0:
        action = runs[-1].outcome.action
        if action is None or action.kind not in ("claim", "continue"):
            break
        runs.append(run_next(task_dir, options, observer))
    return runs


def settle(task: Task, item_id: str, report: FlowReport) -> Change:
    """Record the run as evidence and move the item on according to its outcome."""
    state = task.state
    recorded = record(state, item_id, run_evidence(report), now())
    if report.status == "succeeded":
        try:
            moved = done(state, item_id)
        except TransitionRefused as exc:
            return Change(f"{recorded.message}\nnot done: {exc}", stopped=True)
        return Change(f"{recorded.message}\n{moved.message}")
    what = f"run {report.run_id} {report.status}"
    if report.status == "conflict":
        moved = block(
            state,
            item_id,
            f"{what}: apply-back conflict; resolve the .rej files under {report.rejects_dir}",
            FailureType.NEEDS_USER_DECISION,
        )
    elif report.error_class == ErrorClass.RESOURCE_LOCK_ERROR.value:
        moved = block(state, item_id, f"{what}: {report.message}", FailureType.AGENT_ERROR)
    else:
        retryable = report.error_class in {c.value for c in ErrorClass if c.retryable}
        failure = FailureType.VERIFICATION_FAILED if retryable else FailureType.AGENT_ERROR
        reason = f"{what}: {report.error_class} in {report.failure_phase}: {report.message[:200]}"
        try:
            moved = requeue(state, item_id, reason, failure)
        except TransitionRefused:
            again = f"{what} ({report.error_class} in {report.failure_phase}) failed again with "
            moved = block(state, item_id, again + "nothing changed since the last retry", failure)
    return Change(f"{recorded.message}\n{moved.message}", stopped=True)


def run_evidence(report: FlowReport) -> Draft:
    """Host-attested evidence from the run's own report (not from anything a model said)."""
    verify = report.verify
    shown = f"`{verify.command}` exit {verify.exit_code}" if verify else "not run"
    diff = report.diff_sha256 or "none"
    failure = f" ({report.error_class} in {report.failure_phase})" if report.error_class else ""
    ref = f"run {report.run_id} {report.status}{failure}; diff sha256 {diff[:12]}; verify {shown}"
    detail = [
        "- recorded by tidegate from the run report (host-attested)",
        f"- run id: {report.run_id} (T0 {report.t0_ref or 'none'} = {report.t0_commit or '-'})",
        f"- status: {report.status} after {report.attempts} attempt(s): {report.message}",
        f"- planner: {report.planner}",
        f"- final diff sha256: {diff}",
        f"- verify: {shown}" + (" (timed out)" if verify and verify.timed_out else ""),
        *(
            f"- changed: {f.path} ({f.action}) {f.before_sha256 or 'none'} -> {f.after_sha256 or 'none'}"
            for f in report.changed_files
        ),
    ]
    if report.rejects_dir:
        detail.append(f"- rejects: {report.rejects_dir}")
    return Draft(
        EvidenceKind.RUN,
        report.status == "succeeded",
        ref,
        fingerprint(
            "run",
            report.status,
            report.error_class or "",
            diff,
            verify.command if verify else "",
            str(verify.exit_code) if verify else "",
            report.planner,
        ),
        tuple(detail),
    )
