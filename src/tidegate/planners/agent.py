"""``--agent NAME``: an external coding-agent CLI as the planner.

For each attempt the agent works the task (the objective, plus the previous attempt's
shrunk feedback) on an isolated copy of T0 (``tidegate.agents.workspace``), contained
(``tidegate.agents.launch``); its resulting change against T0 is the attempt's proposal,
which then goes through VALIDATE, AST_VALIDATE, APPLY and VERIFY like any other. The agent
never sees the user's work tree, index or refs, so nothing it does there — commits, stashes,
resets — can reach them. Its run (exit, timing, containment, the tail of its output,
sanitised) is recorded as an ``agent.run`` event.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from tidegate.agents.contracts import AgentContract
from tidegate.agents.launch import AgentEndpoint, run_batch
from tidegate.agents.workspace import capture, prepare
from tidegate.errors import ErrorClass, PhaseError
from tidegate.planners.base import Finding, Plan, PlanRequest, Proposal, TreeView

OUTPUT_KEPT = 4000
DEFAULT_TIMEOUT_S = 900.0


def agent_task(request: PlanRequest) -> str:
    task = request.objective.strip()
    if request.feedback:
        task += (
            "\n\nYour previous attempt was verified and failed. What the verification said:\n"
            + request.feedback.strip()
            + "\n\nFix the cause; keep what was right."
        )
    return task


class AgentPlanner:
    def __init__(
        self,
        contract: AgentContract,
        endpoint: AgentEndpoint,
        *,
        containment: Literal["auto", "required", "none"] = "auto",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        recorder: Any = None,
        home_root: Path | None = None,
    ) -> None:
        self.contract = contract
        self.endpoint = endpoint
        self.containment = containment
        self.timeout_s = timeout_s
        self.recorder = recorder
        self.home_root = home_root
        self.name = f"agent:{contract.name}"
        self.runs: list[dict[str, object]] = []

    def plan(self, request: PlanRequest, tree: TreeView) -> Plan:
        return Plan(
            summary=f"{self.contract.name} ({self.endpoint.model}) works the task on an "
            "isolated copy of T0; its change is verified here"
        )

    def review(self, request: PlanRequest, tree: TreeView) -> list[Finding]:
        return []  # the review phase's own checks produce the findings

    def patch(self, request: PlanRequest, plan: Plan, tree: TreeView) -> Proposal:
        root = getattr(tree, "root", None)
        if not isinstance(root, Path):
            raise PhaseError(
                ErrorClass.CAPABILITY_MISMATCH,
                "an agent planner needs the shadow worktree as its tree view",
                retryable=False,
            )
        from tidegate.errors import CapabilityMismatch

        scratch = Path(tempfile.mkdtemp(prefix="tidegate-agent-"))
        try:
            (scratch / "ws").mkdir()
            ws = prepare(root, scratch / "ws")
            home = (self.home_root or scratch) / f"{self.contract.name}-home"
            run = run_batch(
                self.contract,
                ws,
                agent_task(request),
                self.endpoint,
                home=home,
                timeout_s=self.timeout_s,
                containment=self.containment,
                spill_dir=scratch / "spill",
            )
            diff = capture(ws)
        except CapabilityMismatch as exc:
            raise PhaseError(ErrorClass.CAPABILITY_MISMATCH, str(exc), retryable=False) from exc
        finally:
            _remove(scratch)
        self._record(request, run, diff)
        if run.timed_out:
            raise PhaseError(
                ErrorClass.DEPENDENCY_ERROR,
                f"agent {self.contract.name} did not finish within {self.timeout_s:.0f} s",
                retryable=False,
            )
        if not diff.strip():
            why = f"exit {run.exit_code}" + (
                f": {_last_line(run.stderr_tail)}" if run.stderr_tail else ""
            )
            raise PhaseError(
                ErrorClass.LOGIC,
                f"agent {self.contract.name} changed nothing ({why})",
                "Your previous attempt changed no file. Make the change in the files.",
            )
        return Proposal(diff=diff)

    def _record(self, request: PlanRequest, run: Any, diff: str) -> None:
        from tidegate.sanitize import sanitize

        entry: dict[str, object] = {
            "agent": self.contract.name,
            "program": run.argv0,
            "model": self.endpoint.model,
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "duration_ms": int(run.duration_s * 1000),
            "containment": run.containment,
            "diff_sha256": hashlib.sha256(diff.encode("utf-8", "surrogateescape")).hexdigest(),
            "stdout_tail": sanitize(run.stdout_tail[-OUTPUT_KEPT:]),
            "stderr_tail": sanitize(run.stderr_tail[-OUTPUT_KEPT:]),
        }
        self.runs.append(entry)
        if self.recorder is not None and hasattr(self.recorder, "event"):
            self.recorder.event("agent.run", attempt=request.attempt, phase="PATCH", payload=entry)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _remove(path: Path) -> None:
    """Remove a scratch tree even if the agent left read-only directories in it."""
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            child = Path(dirpath) / name
            if not child.is_symlink():
                with contextlib.suppress(OSError):
                    child.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)
