"""``agent_dispatch``: a session hands a bounded sub-task to a sub-agent, isolated.

A session tool (offered by the session beside the executor's 21 canonical tools, never in
the host catalog). One call, in this order, nothing started before the last check:

1. the arguments (:class:`DispatchInput`); the depth limit (a sub-agent at
   ``max_depth`` is not offered the tool, and a call is refused anyway); the agent named
   (``tidegate``: a session of this same loop; or an agent CLI the host configured);
2. the shared budget: nothing starts when it is already spent; a CLI, whose model
   requests tidegate cannot see, is refused when the parent budgets tokens or dollars;
3. the sub-agent's profile: in a read-only parent (a read-only phase, a read-only task
   mode or write access denied) its dry run is forced and its profile filtered fail-closed
   (:mod:`tidegate.agent.sub_profile`); the audit events
   ``sub_agent.dispatch.read_only_forced_isolated`` and
   ``sub_agent.dispatch.read_only_tool_guard_filtered`` (the removed tools) go into the
   parent's trace before the sub-agent exists (:mod:`tidegate.agent.sub_audit`);
4. approval (:mod:`tidegate.agent.sub_approval`): the parent's approval profile judges
   the tool set the sub-agent could use; Ask goes to a grant, the approver, or becomes a
   pending approval that pauses the parent, exactly as a tool call's does;
5. isolation: the sub-agent works on a private copy of the parent workspace's HEAD (in a
   guarded run, T0) with a git directory of its own (``tidegate.agents.workspace``) --
   never the main workspace, never the parent's own tree;
6. the run; then its change is captured against that commit, and the copy removed.

The result is data (:mod:`tidegate.agent.sub_result`): the sub-agent's final text and its
diff (redacted, bounded, hashed) are the tool's output, and the call has no workspace
effect. A tidegate sub-agent's session is built in :mod:`tidegate.agent.sub_session`. Steps, tokens, dollars and
wall time are one budget: a tidegate sub-agent's guards count into the parent's usage
object itself, under the parent's limits (optionally tightened by ``max_steps``), and its
executor draws on the parent's remaining call budget; when the sub-agent leaves the budget
spent, the parent's round ends with the parent's own budget decision.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tidegate.agent.guards import HARD_CAP, Allow, Decision, Stop
from tidegate.agent.session_tools import SessionToolRun
from tidegate.agent.sub_approval import approve_dispatch
from tidegate.agent.sub_audit import dispatch_finished, dispatch_started, refused
from tidegate.agent.sub_profile import (
    FilteredProfile,
    cli_equivalents,
    cli_tool,
    read_only_profile,
)
from tidegate.agent.sub_result import (
    TOOL_ID,
    TOOL_NAME,
    SubAgentReport,
    dispatch_result,
    error_result,
)
from tidegate.agent.sub_session import SubTask, run_sub_session
from tidegate.agent.sub_settings import TIDEGATE, CliSubAgent, DispatchSettings
from tidegate.errors import CapabilityMismatch, GitError, PersistenceError, UsageError
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.calls import ToolResult as HostResult
from tidegate.tools.catalog import ToolDefinition
from tidegate.tools.effects import ApprovalEffect
from tidegate.tools.schemas.base import json_schema

if TYPE_CHECKING:
    from tidegate.agent.loop_outcome import LoopOutcome
    from tidegate.agent.session import AgentSession
    from tidegate.agents.workspace import AgentWorkspace


class DispatchInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str = Field(min_length=1, max_length=8_000)
    """The sub-task, self-contained: the sub-agent sees nothing of this conversation."""
    agent: str = Field(default=TIDEGATE, pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    """``tidegate`` (a session of the same loop) or the name of a configured agent CLI."""
    max_steps: int | None = Field(default=None, ge=1, le=200)
    """At most this many model requests of the shared budget (tidegate sub-agents)."""


class SubAgentDispatch(msgspec.Struct):
    """The ``agent_dispatch`` session tool of a session at ``depth`` (0: the parent)."""

    settings: DispatchSettings = msgspec.field(default_factory=DispatchSettings)
    depth: int = 0
    last: dict[str, Any] | None = None
    """What the last call did (for reports and tests): profile, events, the sub-session."""

    @property
    def offered(self) -> bool:
        return self.depth < self.settings.max_depth

    def tools(self) -> tuple[SubAgentDispatch, ...]:
        """This tool as a session's ``session_tools``: empty past the depth limit."""
        return (self,) if self.offered else ()

    @property
    def definition(self) -> ToolDefinition:
        agents = ", ".join([TIDEGATE, *(c.name for c in self.settings.clis)])
        return ToolDefinition(
            TOOL_NAME,
            TOOL_ID,
            "Hand a bounded, self-contained sub-task to a sub-agent working on its own "
            f"isolated copy of the workspace (agents: {agents}). Returns its final answer "
            "and any diff it made there, as data: nothing is applied to your workspace. "
            "It spends the same budget as you.",
            json_schema(DispatchInput),
        )

    # -- one call ----------------------------------------------------------------------

    def run(self, session: AgentSession, call: HostCall) -> SessionToolRun:
        started = time.monotonic()
        self.last = {}
        try:
            args = DispatchInput.model_validate(call.arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()[:5]
            )
            return SessionToolRun(error_result(call, "invalid_arguments", problems, started))
        if not self.offered:
            return self._refuse(session, call, "depth_limit", self._depth_reason(), started)
        cli = next((c for c in self.settings.clis if c.name == args.agent), None)
        if args.agent != TIDEGATE and cli is None:
            known = ", ".join([TIDEGATE, *(c.name for c in self.settings.clis)])
            why = f"no sub-agent named {args.agent!r}; available: {known}"
            return self._refuse(session, call, "unknown_agent", why, started)
        spent = session.guards.check_model_request()
        if not isinstance(spent, Allow):
            why = f"the shared budget is spent: {spent.reason}"
            return SessionToolRun(
                error_result(call, "budget_exhausted", why, started, retryable=False), spent
            )
        if cli is not None and (unmetered := _unmetered(session)) is not None:
            return self._refuse(session, call, "budget_unmetered", unmetered, started)
        read_only = _read_only(session)
        profile = self._profile(session, args, read_only)
        tools = profile.kept if args.agent == TIDEGATE else cli_equivalents(read_only)
        approval = approve_dispatch(session, call, args.model_dump(mode="json"), tools, started)
        if isinstance(approval, HostResult):
            return SessionToolRun(approval)
        dispatch_started(session, call, self.depth + 1, args.agent, profile, read_only)
        self.last = {"profile": profile, "read_only": read_only}
        from tidegate.workspace.owned_temp import SUBAGENT_PREFIX, make_owned_temp

        scratch = make_owned_temp(SUBAGENT_PREFIX)  # `tidegate recover` removes it if we die
        try:
            return self._isolated(
                session, call, args, cli, profile, read_only, approval, scratch, started
            )
        finally:
            from tidegate.exec.trees import remove_tree

            remove_tree(scratch)

    def _depth_reason(self) -> str:
        return (
            f"sub-agents may nest {self.settings.max_depth} level(s) deep; this session is "
            f"at depth {self.depth}"
        )

    def _refuse(
        self, session: AgentSession, call: HostCall, code: str, why: str, started: float
    ) -> SessionToolRun:
        return refused(session, call, self.depth + 1, code, why, started)

    def _profile(
        self, session: AgentSession, args: DispatchInput, read_only: bool
    ) -> FilteredProfile:
        if args.agent != TIDEGATE:
            requested: tuple[str, ...] = (cli_tool(args.agent),)
        else:
            requested = self.settings.profile
        filtered = read_only_profile(requested) if read_only else FilteredProfile(requested, ())
        if args.agent != TIDEGATE:
            return filtered
        offered = set(session.executor.registry.available)
        return FilteredProfile(
            tuple(t for t in filtered.kept if t in offered), filtered.removed, filtered.why
        )

    # -- the isolated run --------------------------------------------------------------

    def _isolated(
        self,
        session: AgentSession,
        call: HostCall,
        args: DispatchInput,
        cli: CliSubAgent | None,
        profile: FilteredProfile,
        read_only: bool,
        approval: ApprovalEffect,
        scratch: Path,
        started: float,
    ) -> SessionToolRun:
        from tidegate.agents.workspace import capture

        root = session.executor.context.root
        if cli is not None:
            return self._cli(session, call, cli, args, read_only, approval, root, started)
        ws = _private_copy(root, scratch)
        if isinstance(ws, str):
            return self._refuse(session, call, "no_isolation", ws, started)
        self.last = {**(self.last or {}), "workspace": ws.workdir}
        usage = session.guards.state.usage
        wall_before = usage.wall_seconds
        try:
            sub_task = SubTask(
                goal=args.task,
                max_steps=args.max_steps,
                model=self.settings.model,
                pricing=self.settings.pricing,
                session_tools=SubAgentDispatch(self.settings, depth=self.depth + 1).tools(),
            )
            outcome, sub = run_sub_session(
                sub_task, session, call, profile, read_only, ws.workdir, scratch
            )
        except (UsageError, CapabilityMismatch) as exc:
            return self._refuse(session, call, "sub_agent_unavailable", str(exc), started)
        self.last = {**self.last, "session": sub, "outcome": outcome}
        if outcome.error_class is not None and outcome.error_class.value == "PERSISTENCE_ERROR":
            raise PersistenceError(f"the sub-agent's record could not be stored: {outcome.reason}")
        report = SubAgentReport(
            agent=args.agent,
            depth=self.depth + 1,
            status=outcome.status,
            text=outcome.text,
            reason=outcome.reason,
            diff=_capture(capture, ws),
            read_only=read_only,
            kept=profile.kept,
            removed=profile.removed,
        )
        result = dispatch_result(call, report, approval, started)
        session.exclude_time(usage.wall_seconds - wall_before)
        session.executor.charge_calls(sub.executor.calls_made)
        dispatch_finished(session, call, self.depth + 1, result)
        halt = _halt(session, outcome)
        if outcome.status == "cancelled":
            result = result.model_copy(update={"status": "cancelled"})
        return SessionToolRun(result, halt)

    def _cli(
        self,
        session: AgentSession,
        call: HostCall,
        cli: CliSubAgent,
        args: DispatchInput,
        read_only: bool,
        approval: ApprovalEffect,
        root: Path,
        started: float,
    ) -> SessionToolRun:
        timeout = _cli_timeout(session, self.settings.cli_timeout_s)
        try:
            ran = cli.run(
                root,
                args.task,
                read_only=read_only,
                timeout_s=timeout,
                withheld=session.executor.context.workspace.secrets,
            )
        except (UsageError, CapabilityMismatch, GitError) as exc:
            return self._refuse(session, call, "sub_agent_unavailable", str(exc), started)
        self.last = {**(self.last or {}), "cli": ran}
        status = "timed out" if ran.timed_out else f"exited {ran.exit_code}"
        report = SubAgentReport(
            agent=args.agent,
            depth=self.depth + 1,
            status="completed" if ran.exit_code == 0 and not ran.timed_out else status,
            text=ran.text,
            reason=f"{cli.name} {status} after {ran.duration_s:.1f} s ({ran.containment})",
            diff=ran.diff,
            read_only=read_only,
            removed=(cli_tool(cli.name),) if read_only else (),
        )
        result = dispatch_result(call, report, approval, started)
        dispatch_finished(session, call, self.depth + 1, result)
        return SessionToolRun(result, session.guards.check_model_request())


# -- helpers -----------------------------------------------------------------------------


def _read_only(session: AgentSession) -> bool:
    ctx = session.executor.context
    return session.options.read_only or ctx.mode.read_only or ctx.write_access == "denied"


def _unmetered(session: AgentSession) -> str | None:
    budget = session.guards.limits.budget
    if budget.max_tokens is not None or budget.max_dollars is not None:
        return "an agent CLI's tokens and cost are not visible to tidegate; this run budgets them"
    if budget.hard_dollar_cap is not None:
        return "an agent CLI's cost is not visible to tidegate; this run has a hard cost cap"
    return None


def _cli_timeout(session: AgentSession, default: float) -> float:
    """The CLI's time: at most what is left of the shared wall budget and the deadline."""
    left = [default]
    budget = session.guards.limits.budget
    if budget.max_wall_seconds is not None:
        left.append(budget.max_wall_seconds - session.guards.state.usage.wall_seconds)
    deadline = session.executor.context.deadline
    if deadline is not None:
        left.append(deadline - time.monotonic())
    return max(1.0, min(left))


def _private_copy(root: Path, scratch: Path) -> AgentWorkspace | str:
    """The sub-agent's private copy of ``root``'s HEAD under ``scratch``, or why there
    cannot be one."""
    from tidegate.agents.workspace import prepare
    from tidegate.disk.faults import maybe_crash

    try:
        (scratch / "ws").mkdir()
        ws = prepare(root, scratch / "ws")
        maybe_crash("dispatch.copy_made")  # crash tests: die while the copy exists
    except (GitError, OSError) as exc:
        return f"a sub-agent needs the workspace to be a git work tree with a commit: {exc}"
    return ws


def _halt(session: AgentSession, outcome: LoopOutcome) -> Decision | None:
    """The parent's budget decision after a tidegate sub-agent, or a stop when the
    sub-agent reached the hard cost cap."""
    halt: Decision | None = session.guards.check_model_request()
    if outcome.status == "stopped" and outcome.guard == HARD_CAP:
        halt = Stop(HARD_CAP, f"the sub-agent reached the hard cost cap: {outcome.reason}")
    return halt


def _capture(capture: Any, ws: AgentWorkspace) -> str:
    try:
        return str(capture(ws))
    except GitError as exc:
        return f"(the sub-agent's change could not be captured: {exc})"
