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

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tidegate.agents.contracts import AgentContract
from tidegate.agents.launch import AgentEndpoint, AgentRun, run_batch
from tidegate.agents.workspace import capture, prepare
from tidegate.errors import ErrorClass, PhaseError
from tidegate.exec.trees import remove_tree
from tidegate.records.proposal import Finding, Plan, PlanRequest, Proposal, TreeView
from tidegate.workspace.owned_temp import AGENT_PREFIX, make_owned_temp

if TYPE_CHECKING:
    from tidegate.agent.sub_settings import CliOutcome
    from tidegate.workspace.secret_files import SecretFiles

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


def run_isolated(
    contract: AgentContract,
    endpoint: AgentEndpoint,
    root: Path,
    task: str,
    *,
    containment: Literal["auto", "required", "none"],
    timeout_s: float,
    home_root: Path | None = None,
    read_only: bool = False,
    withheld: SecretFiles | None = None,
) -> tuple[AgentRun, str]:
    """Run the agent CLI once on a private copy of ``root``'s HEAD (in a guarded run, T0)
    and return its run and its change against that commit as a diff. The copy, the agent's
    git directory and (without ``home_root``) its home are removed before this returns;
    nothing it did reaches ``root``. ``read_only``: its tree is bound read-only.
    ``withheld``: the secret-shaped files of the copy it must not read are masked (seen
    empty, under containment)."""
    scratch = make_owned_temp(AGENT_PREFIX)  # `recover` sweeps it if this process dies
    try:
        (scratch / "ws").mkdir()
        ws = prepare(root, scratch / "ws")
        home = (home_root or scratch) / f"{contract.name}-home"
        run = run_batch(
            contract,
            ws,
            task,
            endpoint,
            home=home,
            timeout_s=timeout_s,
            containment=containment,
            spill_dir=scratch / "spill",
            read_only=read_only,
            masked=tuple(withheld.find_in(ws.workdir)) if withheld is not None else (),
        )
        return run, capture(ws)
    finally:
        remove_tree(scratch)


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

        try:
            run, diff = run_isolated(
                self.contract,
                self.endpoint,
                root,
                agent_task(request),
                containment=self.containment,
                timeout_s=self.timeout_s,
                home_root=self.home_root,
            )
        except CapabilityMismatch as exc:
            raise PhaseError(ErrorClass.CAPABILITY_MISMATCH, str(exc), retryable=False) from exc
        self._record(request, run, diff)
        if run.timed_out:
            raise PhaseError(
                ErrorClass.DEPENDENCY_ERROR,
                f"agent {self.contract.name} did not finish within {self.timeout_s:.0f} s",
                retryable=False,
            )
        if not diff.strip() and run.exit_code not in (0, None):
            # It failed (to start, or to reach its model): retrying with "you changed
            # nothing" cannot help, and its own error is what the user needs to see.
            raise PhaseError(
                ErrorClass.CAPABILITY_MISMATCH,
                f"agent {self.contract.name} failed (exit {run.exit_code}): "
                f"{_error_text(run.stderr_tail or run.stdout_tail)}",
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
        from tidegate.text.sanitize import sanitize

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


_ERROR_WORDS = ("error", "cannot", "can't", "not found", "no such", "enoent", "traceback",
                "denied", "failed", "fatal", "panic", "exception")  # fmt: skip


def _error_text(text: str) -> str:
    """What a failed agent said about why, sanitised: its lines that read as errors (a
    banner or progress line printed last must not hide them), else its last lines."""
    from tidegate.text.sanitize import sanitize

    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if any(w in line.lower() for w in _ERROR_WORDS)]
    chosen = errors[:3] if errors else lines[-3:]
    return sanitize(" | ".join(chosen)[:600]) or "it printed nothing"


class CliSubAgent:
    """An agent CLI a session may hand sub-tasks to (``agent_dispatch`` with its name):
    the same isolated, contained run as the planner's, returned as data
    (``tidegate.agent.sub_settings.CliOutcome``). Contained unless the user chose ``none``;
    a read-only run always is."""

    def __init__(
        self,
        contract: AgentContract,
        endpoint: AgentEndpoint,
        *,
        containment: Literal["auto", "required", "none"] = "required",
    ) -> None:
        self.contract = contract
        self.endpoint = endpoint
        self.containment = containment

    @property
    def name(self) -> str:
        return self.contract.name

    def run(
        self,
        root: Path,
        task: str,
        *,
        read_only: bool,
        timeout_s: float,
        withheld: SecretFiles | None = None,
    ) -> CliOutcome:
        from tidegate.agent.sub_settings import CliOutcome
        from tidegate.text.sanitize import sanitize

        run, diff = run_isolated(
            self.contract,
            self.endpoint,
            root,
            task,
            containment="required" if read_only else self.containment,
            timeout_s=timeout_s,
            read_only=read_only,
            withheld=withheld,
        )
        return CliOutcome(
            exit_code=run.exit_code,
            timed_out=run.timed_out,
            duration_s=run.duration_s,
            text=sanitize(run.stdout_tail[-OUTPUT_KEPT:]),
            diff=diff,
            containment=str(run.containment.get("backend", "unknown")),
        )
