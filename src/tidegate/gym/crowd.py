"""A crowd scenario: one real ``tidegate run`` process per lane, all on one seeded dirty
repository at once, each started through the one runner (``tidegate.exec.runner``).

The gym holds the landing lock (``workspace.lock.ApplyLock``) while the runs start, and
lets go once every run has taken its T0 (its registration under ``live/`` has left
BOOTSTRAP) or ended: so every T0 precedes every landing, whatever the machine's load, and
the lanes that contend for the same lines really meet in the merge. Then the runs land
one at a time in whatever order they reach the lock.

Scored: each lane landed or conflicted as designed (lanes on the same ``path`` and
``replace``: exactly one lands, every other conflicts with nothing of it written and a
``.rej`` naming its text); every changed file is exactly the user's version with the
winners' edits; no byte of other user work (staged, unstaged, untracked, ``.git/index``)
changed; the landing order is consistent (the landed runs' places are distinct, and each
run's ``landed_between`` is exactly the runs that landed before it).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tidegate.errors import UsageError
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import CommandResult, run_command
from tidegate.gym.checks import expand, run_check
from tidegate.gym.contestants import Contestant, contestant
from tidegate.gym.scenarios import Lane, Scenario
from tidegate.gym.scorecard import Unmeasured, assessment, seal
from tidegate.gym.seed import build, damage, user_bytes
from tidegate.workspace.lock import ApplyLock, live_runs
from tidegate.workspace.prep_slots import QUEUED
from tidegate.workspace.repo import discover

RUN_TIMEOUT_S = 300.0
GATE_TIMEOUT_S = 120.0


def run_crowd(
    scenario: Scenario, contestant_spec: str | None, run_dir: Path, *, keep: bool = False
) -> dict[str, Any]:
    """Run ``scenario``'s lanes at once on its seed and score them: the gym report, whose
    artifacts the caller writes (``runner.run_scenario``). The runs record into
    ``run_dir/state``."""
    started_ms = time.time_ns() // 1_000_000
    scratch = Path(tempfile.mkdtemp(prefix=f"tidegate-gym-{scenario.id}-"))
    try:
        who = contestant(contestant_spec or scenario.contestant, scratch)
        repo = scratch / "repo"
        build(scenario.seed, repo)
        before = user_bytes(repo)
        started = time.monotonic()
        reports, gate = _launch_all(scenario, who, repo, run_dir / "state", scratch)
        wall = time.monotonic() - started
        after = user_bytes(repo)
        lost = damage(before, after, {lane.path for lane in scenario.crowd})
        checks = score(scenario.crowd, reports, before, after, lost, repo)
        checks += [
            run_check(c, repo, None, clearance=Clearance.user(), spill_dir=scratch / "checks")
            for c in scenario.checks
        ]
        document = _document(scenario, who, reports, checks, wall, gate, started_ms, lost[0])
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return document


def _flags(who: Contestant) -> list[str]:
    if who.agent:
        model = ["--agent-model", who.agent_model] if who.agent_model else []
        return ["--agent", who.agent, *model]
    if who.model:
        return ["--model", who.model]
    if who.planner != "structured":
        raise UsageError(
            f"contestant {who.spec}: a crowd scenario gives each lane its own objective; "
            "one script cannot play every lane"
        )
    return []


def _launch_all(
    scenario: Scenario, who: Contestant, repo: Path, state: Path, scratch: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every lane's run at once, the landing lock held until each took T0 (or ended);
    returns each lane's report (or ``{"error": ...}``) and the gate's facts."""
    runtime = discover(repo).runtime_dir
    verify = expand(scenario.verify) if scenario.verify else "none"
    gate = ApplyLock(runtime, "gym-crowd-gate").acquire(wait_s=0)
    try:
        with ThreadPoolExecutor(max_workers=len(scenario.crowd)) as pool:
            futures = [
                pool.submit(_one, lane, who, repo, state, verify, scratch)
                for lane in scenario.crowd
            ]
            all_t0 = _await_t0(runtime, futures, time.monotonic() + GATE_TIMEOUT_S)
            gate.release()
            results = [f.result() for f in futures]
    finally:
        gate.release()
    facts = {"all_t0_before_any_landing": all_t0, "gate_held_s": round(gate.held_s, 3)}
    return [_report(lane, r) for lane, r in zip(scenario.crowd, results, strict=True)], facts


def _one(
    lane: Lane, who: Contestant, repo: Path, state: Path, verify: str, scratch: Path
) -> CommandResult:
    argv = [
        sys.executable, "-m", "tidegate", "run", "--repo", str(repo),
        "--objective", lane.objective, "--verify", verify, "--max-attempts", "1",
        "--state-root", str(state), "--json", *_flags(who),
    ]  # fmt: skip
    # The gym (the user) chose this command: tidegate itself, whose own guard then
    # decides how the lane's verify command and contestant run.
    return run_command(
        argv, scratch, RUN_TIMEOUT_S, scratch / "lanes", label=lane.name,
        clearance=Clearance.user(),
    )  # fmt: skip


def _await_t0(runtime: Path, futures: list[Future[CommandResult]], deadline: float) -> bool:
    """Wait until every run has left BOOTSTRAP (T0 taken) or ended; False on timeout. A
    run waiting for a preparation slot (``QUEUED``) has not taken T0 yet."""
    while time.monotonic() < deadline:
        ended = sum(1 for f in futures if f.done())
        before_t0 = (None, QUEUED, "BOOTSTRAP")
        past_t0 = sum(1 for phase in _phases(runtime) if phase not in before_t0)
        if ended + past_t0 >= len(futures):
            return True
        time.sleep(0.02)
    return False


def _phases(runtime: Path) -> list[Any]:
    """The phase each live run's registration names (``workspace.lock.live_runs``: a
    registration is born locked, so a run starting is never missed)."""
    return [record.get("phase") for record in live_runs(runtime)]


def _report(lane: Lane, result: CommandResult) -> dict[str, Any]:
    try:
        report = json.loads(result.stdout_file.read_bytes())
    except (OSError, ValueError):
        tail = result.stderr_tail.strip().splitlines()[-1:] or ["no output"]
        return {"lane": lane.name, "status": "error", "error": tail[0], "exit": result.exit_code}
    if not isinstance(report, dict):
        return {"lane": lane.name, "status": "error", "error": "not a report"}
    return {**report, "lane": lane.name, "exit": result.exit_code}


def designed_winners(lanes: tuple[Lane, ...], reports: list[dict[str, Any]]) -> set[str]:
    """The lanes that should land: every lane alone on its lines, and of each group on the
    same lines the one that did land (the first lane when none or several did)."""
    winners: set[str] = set()
    groups: dict[tuple[str, str], list[int]] = {}
    for i, lane in enumerate(lanes):
        groups.setdefault((lane.path, lane.replace), []).append(i)
    for members in groups.values():
        landed = [i for i in members if reports[i].get("status") == "succeeded"]
        winners.add(lanes[landed[0] if len(landed) == 1 else members[0]].name)
    return winners


def score(
    lanes: tuple[Lane, ...],
    reports: list[dict[str, Any]],
    before: dict[str, bytes],
    after: dict[str, bytes],
    damaged: tuple[int, list[str]],
    repo: Path,
) -> list[dict[str, Any]]:
    """The crowd's checks (see the module's docstring); ``damaged``: the bytes and paths
    of user work changed outside the lanes' files (``seed.damage``)."""
    winners = designed_winners(lanes, reports)
    checks = [
        _outcome(lane, r, lane.name in winners, repo)
        for lane, r in zip(lanes, reports, strict=True)
    ]
    expected = dict(before)
    for lane in lanes:
        if lane.name in winners:
            text = expected[lane.path].decode()
            expected[lane.path] = text.replace(lane.replace, lane.with_, 1).encode()
    wrong = [p for p in sorted({lane.path for lane in lanes}) if after.get(p) != expected[p]]
    checks.append(_check("changed files are the user's version plus the winners' edits",
                         not wrong, f"differ: {', '.join(wrong)}" if wrong else "exact"))  # fmt: skip
    lost, paths = damaged
    checks.append(_check("no byte of other user work lost (staged, unstaged, untracked, index)",
                         lost == 0, f"{lost} bytes in {', '.join(paths)}" if lost else "0 bytes"))  # fmt: skip
    checks.append(_order(reports))
    return checks


def _check(name: str, passed: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "kind": "crowd", "passed": passed, "detail": detail}


def _outcome(lane: Lane, report: dict[str, Any], wins: bool, repo: Path) -> dict[str, Any]:
    status = report.get("status")
    if wins:
        return _check(f"{lane.name} lands", status == "succeeded", f"status {status}{_why(report)}")
    applied = report.get("applied_files")
    rej = Path(str(report.get("rejects_dir"))) / f"{lane.path}.rej"
    explained = rej.is_file() and lane.with_ in rej.read_text(encoding="utf-8", errors="replace")
    unwritten = lane.with_ not in (repo / lane.path).read_text(encoding="utf-8", errors="replace")
    passed = status == "conflict" and applied == [] and explained and unwritten
    detail = (
        f"status {status}{_why(report) if status != 'conflict' else ''}, applied {len(applied) if isinstance(applied, list) else '?'} files, "
        f".rej {'explains it' if explained else 'missing or silent'}, "
        f"{'nothing of it written' if unwritten else 'its text is in the work tree'}"
    )
    return _check(f"{lane.name} conflicts (same lines), nothing written", passed, detail)


def _why(report: dict[str, Any]) -> str:
    """What a run that did not land said of it: its failing phase, error class and
    message (or the lane's own error), for a check's detail; empty when it landed."""
    if report.get("status") == "succeeded":
        return ""
    said = [str(report[k]) for k in ("failure_phase", "error_class") if report.get(k)]
    message = str(report.get("message") or report.get("error") or "").strip()
    if message:
        said.append(message.splitlines()[0][:300])
    return f" ({': '.join(said)})" if said else ""


def landing_order(reports: list[dict[str, Any]]) -> list[str]:
    """The landed runs' ids in their landing order."""
    landed = [r for r in reports if (r.get("landing") or {}).get("seq") is not None]
    return [str(r["run_id"]) for r in sorted(landed, key=lambda r: r["landing"]["seq"])]


def _order(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Distinct places; a landed run names exactly the runs before it; a conflicting one
    names a prefix of that order (those that landed before it took the lock)."""
    order = landing_order(reports)
    seqs = [r["landing"]["seq"] for r in reports if (r.get("landing") or {}).get("seq")]
    bad = [] if len(set(seqs)) == len(seqs) else ["places repeat"]
    for r in reports:
        landing = r.get("landing")
        if not landing:
            continue
        between = landing.get("landed_between")
        if landing.get("seq") is not None:
            ok = between == order[: order.index(str(r["run_id"]))]
        else:
            ok = isinstance(between, list) and between == order[: len(between)]
        if not ok:
            bad.append(f"{r['lane']} names {between}")
    detail = "; ".join(bad) if bad else f"{len(order)} landings, each naming those before it"
    return _check("landing order consistent (landed_between)", not bad, detail)


def _document(
    scenario: Scenario, who: Contestant, reports: list[dict[str, Any]],
    checks: list[dict[str, Any]], wall: float, gate: dict[str, Any], started_ms: int, lost: int,
) -> dict[str, Any]:  # fmt: skip
    passed = sum(1 for c in checks if c["passed"])
    lanes = [_lane_summary(r) for r in reports]
    evidence = [
        {"kind": "check", "source": "runtime::gym-crowd",
         "detail": f"{c['name']}: {'passed' if c['passed'] else 'failed'} ({c['detail']})"}
        for c in checks
    ] + [{"kind": "lane", "source": f"{who.base_type}::{who.spec}", "detail": json.dumps(s)}
         for s in lanes]  # fmt: skip
    now = time.time_ns() // 1_000_000
    memory = [{"kind": "scenario-run", "created_at_unix_ms": now, "status": "crowd"}]
    retries = sum(max(0, int(r.get("attempts") or 1) - 1) for r in reports)
    model: Any = (
        0 if not (who.model or who.agent) else Unmeasured("crowd lanes' usage is not summed")
    )
    held = [s["held_s"] for s in lanes if s.get("held_s") is not None]
    card = seal({
        "correctness_checks_passed": passed,
        "correctness_checks_total": len(checks),
        "evidence_quality": "sufficient" if len(evidence) >= 4 else "thin",
        "evidence_quality_assessment": assessment(
            checks, evidence, memory, who.base_type, 0, retries
        ),
        "unnecessary_action_count": 0,
        "retry_count": retries,
        "human_review_notes": [f"check {c['name']!r} failed: {c['detail']}"
                               for c in checks if not c["passed"]],
        "measurement_notes": [
            f"{len(reports)} runs started at once; the landing lock was held by the gym "
            f"until each took T0 ({gate['gate_held_s']} s)",
            f"landing lock: longest hold {max(held, default=0.0)} s over {len(held)} landings",
        ],
        "wall_time_s": round(wall, 3),
        "tidegate_overhead_s": Unmeasured("the lanes overlap: no one run's overhead is the crowd's"),
        "model_tokens": model,
        "model_cost_usd": model,
        "workspace_damage": lost,
    })  # fmt: skip
    status = "succeeded" if passed == len(checks) else "failed"
    return {
        "schema": "tidegate.gym-report/1", "scenario": scenario.id, "covers": scenario.covers,
        "contestant": who.spec, "identity": scenario.identity, "base_type": who.base_type,
        "mode": scenario.mode, "started_at_unix_ms": started_ms, "completed_at_unix_ms": now,
        "status": status, "run_id": " ".join(str(r.get("run_id")) for r in reports),
        "message": f"{len(reports)} runs at once: "
        + ", ".join(f"{s['lane']} {s['status']}" for s in lanes),
        "checks": checks, "scorecard": card, "evidence": evidence, "memory": memory,
        "crowd": {"lanes": lanes, "landing_order": landing_order(reports), "gate": gate},
    }  # fmt: skip


def _lane_summary(report: dict[str, Any]) -> dict[str, Any]:
    landing = report.get("landing") or {}
    return {
        "lane": report["lane"],
        "run_id": report.get("run_id"),
        "status": report.get("status"),
        "seq": landing.get("seq"),
        "landed_between": landing.get("landed_between"),
        "waited_s": landing.get("waited_s"),
        "held_s": landing.get("held_s"),
        **({"error": report["error"]} if "error" in report else {}),
        **({"why": _why(report).strip(" ()")} if report.get("status") != "succeeded" else {}),
    }
