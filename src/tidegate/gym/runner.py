"""One scenario run, isolated: its own seed repository, state directory and temp dir, so
the result is the same whichever executor (or machine) ran it. Artifacts go under the
gym directory of the state root, never into a workspace:
``<gym>/runs/<scenario>/<started_ms>-<id>/{report.json,report.txt,review.json}``."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tidegate.exec.guard import Clearance
from tidegate.gym.checks import expand, run_check
from tidegate.gym.contestants import Contestant, contestant
from tidegate.gym.crowd import run_crowd
from tidegate.gym.places import gym_dir, write_artifact
from tidegate.gym.scenarios import Scenario, load_scenario
from tidegate.gym.scorecard import (
    Unmeasured,
    assessment,
    model_spend,
    observed_counts,
    seal,
    shown,
)
from tidegate.gym.seed import build, damage, user_bytes

REPORT_SCHEMA = "tidegate.gym-report/1"


class _ConcurrentEdit:
    """A phase observer that makes the scenario's user edit when its phase starts."""

    def __init__(self, repo: Path, scenario: Scenario) -> None:
        self.repo, self.edit, self.done = repo, scenario.concurrent_edit, False

    def phase_started(self, attempt: int, phase: Any) -> None:
        if self.edit and not self.done and str(getattr(phase, "value", phase)) == self.edit.phase:
            (self.repo / self.edit.path).write_text(self.edit.content, encoding="utf-8")
            self.done = True

    def phase_finished(self, event: Any) -> None:
        pass


def run_scenario(
    name: str,
    contestant_spec: str | None,
    gym_root: Path,
    *,
    keep: bool = False,
    allow_uncontained: bool = False,
) -> dict[str, Any]:
    """Run one scenario, isolated, and score it. ``allow_uncontained``: the user's
    approval (``--allow-uncontained``) to run the contestant's code without containment
    where bubblewrap is unusable; without it such a run is refused by the guard."""
    scenario = load_scenario(name)
    started_ms = time.time_ns() // 1_000_000
    run_name = f"{started_ms}-{secrets.token_hex(3)}"
    records = "operator" if scenario.mode == "composite-review" else "state"
    run_dir = _make_run_dir(gym_root, scenario.id, run_name, records)
    if scenario.crowd:
        document = run_crowd(scenario, contestant_spec, run_dir, keep=keep)
        _write_artifacts(gym_root, run_dir, document)
        return {**document, "artifacts": str(run_dir)}
    scratch = Path(tempfile.mkdtemp(prefix=f"tidegate-gym-{scenario.id}-"))
    try:
        who = contestant(contestant_spec or scenario.contestant, scratch)
        approval = "--allow-uncontained" if allow_uncontained else None
        clearance = Clearance(who.code_origin, approval)
        repo = scratch / "repo"
        before = _seed(scenario, repo)
        started = time.monotonic()
        report, state, tool_calls, usage = _contest(scenario, repo, run_dir, who, approval)
        wall = time.monotonic() - started
        spill = scratch / "checks"
        checks = [
            run_check(c, repo, report, state, clearance=clearance, spill_dir=spill)
            for c in scenario.checks
        ]
        damaged, damaged_paths = damage(before, user_bytes(repo), set(scenario.changes))
        document = _document(
            scenario,
            who,
            report,
            checks,
            tool_calls,
            usage,
            wall,
            damaged,
            damaged_paths,
            started_ms,
        )
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    _write_artifacts(gym_root, run_dir, document)
    document["artifacts"] = str(run_dir)
    return document


def _seed(scenario: Scenario, repo: Path) -> dict[str, bytes]:
    """Build the scenario's seed repository at ``repo``; returns the user's work in it
    (``user_bytes``) with the scenario's concurrent edit as it will be made: what
    ``damage`` compares the end state with."""
    build(scenario.seed, repo)
    before = user_bytes(repo)
    if scenario.concurrent_edit is not None:
        before[scenario.concurrent_edit.path] = scenario.concurrent_edit.content.encode()
    return before


def _contest(
    scenario: Scenario, repo: Path, run_dir: Path, who: Contestant, approval: str | None
) -> tuple[Any, Path | None, Any, Any]:
    """The contestant's run: (report, the operator root of a composite review or None,
    tool calls, model usage)."""
    if scenario.mode == "composite-review":
        return _composite(scenario, repo, run_dir, who)
    report, tool_calls, usage = _engine(scenario, repo, run_dir, who, approval)
    return report, None, tool_calls, usage


def _make_run_dir(gym_root: Path, scenario_id: str, name: str, records: str) -> Path:
    """A new ``<gym>/runs/<scenario>/<name>`` and in it the ``records`` directory (the
    run store's state root, or the operator root), none made through a link."""
    with gym_dir(gym_root, "runs", scenario_id, create=True) as runs:
        os.mkdir(name, 0o700, dir_fd=runs)
    with gym_dir(gym_root, "runs", scenario_id, name, records, create=True):
        pass
    return gym_root / "runs" / scenario_id / name


def _engine(
    scenario: Scenario, repo: Path, run_dir: Path, who: Contestant, approval: str | None
) -> tuple[Any, Any, Any]:
    from tidegate.flow.transaction import execute
    from tidegate.planners import planner_for
    from tidegate.records.modes import Mode
    from tidegate.records.request import RunRequest
    from tidegate.store import StoreRecorder, open_run_store

    request = RunRequest(
        repo=repo,
        mode=Mode(scenario.mode),
        objective=scenario.objective,
        objective_base=repo,
        verify=expand(scenario.verify) if scenario.verify else None,
        planner=who.planner,
        model=who.model,
        agent=who.agent,
        agent_model=who.agent_model,
        max_attempts=1 if scenario.mode == "review" else scenario.max_attempts,
        uncontained_approval=approval,
    )
    store = open_run_store(repo, str(run_dir / "state"))
    recorder = StoreRecorder(store)
    planner = planner_for(request, recorder=recorder) if (who.model or who.agent) else None
    try:
        report = execute(
            request, observer=_ConcurrentEdit(repo, scenario), planner=planner, recorder=recorder
        )
        tool_calls = recorder.tool_calls() if who.model else None
        usage = planner_spend(planner) if who.model else None
    finally:
        getattr(planner, "close", lambda: None)()
        store.close()
    return report, tool_calls, usage


def planner_spend(planner: Any) -> tuple[Any, Any]:
    """(tokens, cost) of the model planner's recorded turns (see ``model_spend``)."""
    history = getattr(planner, "history", None)
    turns = None if history is None else [t for r in history for t in r.transcript.turns]
    pricing = getattr(planner, "pricing", None)
    return model_spend(turns, getattr(pricing, "source", "no pricing recorded"))


def _composite(
    scenario: Scenario, repo: Path, run_dir: Path, who: Contestant
) -> tuple[Any, Path, Any, Any]:
    """A review, then improvement curation of its first proposal, on one operator root."""
    from tidegate.operator.guarded import Backend
    from tidegate.operator.identities import select
    from tidegate.operator.runs import improvement_run, review_run

    state = run_dir / "operator"
    base = "local-harness" if who.base_type.startswith("agent") else who.base_type
    review = review_run(
        select("composite-engineer", base, "single-process", "review"),
        Backend(model=who.model, planner=who.planner),
        repo,
        scenario.objective,
        str(state),
        verify=expand(scenario.verify) if scenario.verify else None,
    )
    if review["proposals"]:
        decision = f"approve: {review['proposals'][0]['id']} | priority=1"
        improvement_run(
            select("improvement-curator", base, "single-process", "improvement-curation"),
            decision,
            str(state),
        )
    return _ReviewReport(review), state, None, None


class _ReviewReport:
    """The composite session seen as a report (status, findings, attempts)."""

    def __init__(self, review: dict[str, Any]) -> None:
        from tidegate.records.proposal import Finding

        self.status = review["run"]["status"]
        self.run_id = review["run"]["run_id"]
        self.findings = [
            Finding(
                f["message"],
                f.get("path"),
                f.get("line"),
                f.get("severity", "error"),
                f.get("source", "planner"),
            )
            for f in review["findings"]
        ]
        self.attempt_events: list[Any] = []
        self.phases: list[Any] = []
        self.verify = None
        self.error_class = None
        self.message = f"review {self.status}; {len(review['proposals'])} proposal(s)"


def _phase_seconds(report: Any, phases: set[str]) -> float:
    return float(sum(p.duration_ms for p in report.phases if str(p.phase) in phases)) / 1000


def _document(
    scenario: Scenario, who: Contestant, report: Any, checks: list[dict[str, Any]],
    tool_calls: Any, usage: Any, wall: float, damaged: int, damaged_paths: list[str], started_ms: int,
) -> dict[str, Any]:  # fmt: skip
    unnecessary, retries = observed_counts(report, tool_calls)
    source = f"{who.base_type}::{who.spec}"
    evidence = _evidence(report, checks, source)
    now = time.time_ns() // 1_000_000
    memory = [{"kind": "scenario-run", "created_at_unix_ms": now, "status": report.status}]
    tokens, cost, notes = _usage(who, usage, tool_calls)
    overhead: Any = Unmeasured("no phase timings were observed")
    if report.phases:
        overhead = round(
            max(0.0, wall - _phase_seconds(report, {"VERIFY", "PLAN", "PATCH", "REVIEW"})), 3
        )
    review_notes = [f"check {c['name']!r} failed: {c['detail']}" for c in checks if not c["passed"]]
    if damaged:
        review_notes.append(
            f"user work changed outside the scenario's paths: {', '.join(damaged_paths[:10])}"
        )
    scorecard = seal({
        "correctness_checks_passed": sum(1 for c in checks if c["passed"]),
        "correctness_checks_total": len(checks),
        "evidence_quality": "sufficient" if len(evidence) >= 4 else "thin",
        "evidence_quality_assessment": assessment(
            checks, evidence, memory, who.base_type, unnecessary, retries
        ),
        "unnecessary_action_count": unnecessary,
        "retry_count": retries,
        "human_review_notes": review_notes,
        "measurement_notes": notes,
        "wall_time_s": round(wall, 3),
        "tidegate_overhead_s": overhead,
        "model_tokens": tokens,
        "model_cost_usd": cost,
        "workspace_damage": damaged,
    })  # fmt: skip
    return {
        "schema": REPORT_SCHEMA,
        "scenario": scenario.id,
        "covers": scenario.covers,
        "contestant": who.spec,
        "identity": scenario.identity,
        "base_type": who.base_type,
        "mode": scenario.mode,
        "started_at_unix_ms": started_ms,
        "completed_at_unix_ms": now,
        "status": report.status,
        "run_id": report.run_id,
        "message": report.message,
        "checks": checks,
        "scorecard": scorecard,
        "evidence": evidence,
        "memory": memory,
    }


def _evidence(report: Any, checks: list[dict[str, Any]], source: str) -> list[dict[str, str]]:
    """The scenario's evidence: each check, each attempt, the first ten findings."""
    return [
        {"kind": "check", "detail": f"{c['name']}: {'passed' if c['passed'] else 'failed'} ({c['detail']})",
         "source": "runtime::gym-runner"}
        for c in checks
    ] + [
        {"kind": "attempt", "detail": f"attempt {e.attempt}: {e.status}"
         + (f" {e.error_class} in {e.failure_phase}" if e.error_class else "")
         + (f", proposal {e.proposal_sha256[:12]}" if e.proposal_sha256 else ""), "source": source}
        for e in report.attempt_events
    ] + [
        {"kind": "finding", "detail": f"{f.path}:{f.line} {f.message}", "source": source}
        for f in report.findings[:10]
    ]  # fmt: skip


def _usage(who: Contestant, usage: Any, tool_calls: Any) -> tuple[Any, Any, list[str]]:
    """Tokens and cost (or why they are unmeasured), and the measurement notes."""
    notes = []
    tokens: Any = 0
    cost: Any = 0
    if who.agent:
        tokens = cost = Unmeasured("an agent CLI reports no token usage to tidegate")
    elif who.model and usage is None:
        tokens = cost = Unmeasured("the composite review session records no model usage")
    elif who.model:
        tokens, cost = usage
    else:
        notes.append("no model ran: tokens and cost are observed zero")
    if tool_calls is None and who.model is None:
        notes.append(
            "unnecessary_action_count counts refused attempts (no model tool calls to observe)"
        )
    return tokens, cost, notes


def render_text(document: dict[str, Any]) -> str:
    card = document["scorecard"]
    lines = [
        f"scenario {document['scenario']} ({document['covers']})",
        f"contestant {document['contestant']}  status {document['status']}  run {document['run_id']}",
        f"checks {card['correctness_checks_passed']}/{card['correctness_checks_total']}",
    ]
    lines += [
        f"  {'ok  ' if c['passed'] else 'FAIL'} {c['name']}: {c['detail']}"
        for c in document["checks"]
    ]
    ev = card["evidence_quality_assessment"]
    lines += [
        f"evidence {card['evidence_quality']}, assessment {ev['overall']} ({ev['category']})",
        f"unnecessary actions {shown(card['unnecessary_action_count'])}, "
        f"retries {shown(card['retry_count'])}",
        f"workspace damage {card['workspace_damage']} bytes",
        f"wall {card['wall_time_s']} s, tidegate overhead {shown(card['tidegate_overhead_s'])} s, "
        f"model tokens {shown(card['model_tokens'])}, cost {shown(card['model_cost_usd'])}",
    ]
    lines += [f"review: {n}" for n in card["human_review_notes"]]
    lines += [f"note: {n}" for n in card["measurement_notes"]]
    lines += [f"note: {k} unmeasured: {why}" for k, why in card.get("unmeasured", {}).items()]
    return "\n".join(lines) + "\n"


def _write_artifacts(gym_root: Path, run_dir: Path, document: dict[str, Any]) -> None:
    from tidegate.operator.records import write_json

    write_json(run_dir / "report.json", document, within=gym_root.parent)
    write_artifact(gym_root, run_dir, "report.txt", render_text(document).encode("utf-8"))
    review = {
        "schema": "tidegate.gym-review/1",
        "scenario": document["scenario"],
        "run_id": document["run_id"],
        "findings": [c for c in document["checks"] if not c["passed"]],
        "human_review_notes": document["scorecard"]["human_review_notes"],
    }
    write_json(run_dir / "review.json", review, within=gym_root.parent)
