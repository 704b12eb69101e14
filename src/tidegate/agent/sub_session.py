"""A tidegate sub-agent: a session of the same loop, over its own isolated copy.

Built from the parent session and nothing the model chose beyond the task: the parent's
approval profile, network, containment, grants, approver, protected paths, validation
command, deadline and cancellation; the parent's guard limits over the parent's own usage
object (so every step, token, dollar and second is counted once, in one budget); the
parent's remaining call budget. Its executor holds only the filtered profile's tools,
built over the copy, and in a read-only parent its write access is denied as well. Its
events and tool calls go into the parent's trace (phase ``SUB_AGENT``, call ids under the
dispatch call's id); the parent owns the checkpoints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from tidegate.agent.guards import GuardState, LoopGuards
from tidegate.agent.loop import run_loop
from tidegate.agent.loop_outcome import LoopOutcome
from tidegate.agent.session import AgentSession
from tidegate.agent.session_options import SUB_AGENT_PHASE, SessionOptions
from tidegate.agent.session_prompt import default_prompt_configuration
from tidegate.prompt import RunTask
from tidegate.records.modes import Mode
from tidegate.tools.adapters import default_adapters
from tidegate.tools.calls import ToolCall as HostCall
from tidegate.tools.context import ToolContext
from tidegate.tools.executor import ToolExecutor
from tidegate.workspace.port import WorkspacePort

if TYPE_CHECKING:
    from tidegate.agent.session import SessionTool
    from tidegate.agent.sub_profile import FilteredProfile
    from tidegate.models.ports import ModelPort
    from tidegate.models.pricing import ModelPricing


class SubTask(msgspec.Struct, frozen=True):
    """What the dispatcher hands a sub-session: the goal, its step cap, the model and
    pricing it runs on (None: the parent's), and the dispatch tools it may use itself
    (one level deeper)."""

    goal: str
    max_steps: int | None
    model: ModelPort | None
    pricing: ModelPricing | None
    session_tools: tuple[SessionTool, ...]


def run_sub_session(
    sub_task: SubTask,
    parent: AgentSession,
    call: HostCall,
    profile: FilteredProfile,
    read_only: bool,
    workdir: Path,
    scratch: Path,
) -> tuple[LoopOutcome, AgentSession]:
    """Run the sub-agent's loop to its end; its executor is closed before this returns."""
    (scratch / "spill").mkdir(exist_ok=True)
    (scratch / "plans").mkdir(exist_ok=True)
    context = _context(parent, workdir, scratch, read_only)
    adapters = {t: a for t, a in default_adapters(context).items() if t in profile.kept}
    with ToolExecutor(context, adapters=adapters) as executor:
        limits = parent.guards.limits
        if sub_task.max_steps is not None:
            usage = parent.guards.state.usage
            cap = usage.steps + sub_task.max_steps
            if limits.budget.max_steps is not None:
                cap = min(cap, limits.budget.max_steps)
            limits = limits.model_copy(
                update={"budget": limits.budget.model_copy(update={"max_steps": cap})}
            )
        model = sub_task.model or parent.model
        pricing = parent.pricing if sub_task.model is None else sub_task.pricing
        active = set(executor.registry.active)
        sub = AgentSession.start(
            model=model,
            executor=executor,
            config=default_prompt_configuration(
                write=not read_only and bool(active & {"workspace.write", "workspace.edit"}),
                commands="command.run" in active,
                approval=context.approval_profile.value,
                network=context.network,
            ),
            task=RunTask(
                task_id=_task_id(parent, call),
                workspace_root=str(workdir),
                goal=sub_task.goal,
                mode=Mode.REVIEW if read_only else parent.task.mode,
            ),
            options=SessionOptions(
                phase=SUB_AGENT_PHASE,
                run_id=parent.run_id,
                attempt=parent.options.attempt,
                record_scope=f"{parent.record_id(call.call_id)}.",
                expect_changes=False if read_only else None,
                guard_limits=limits,
                settings=parent.options.settings,
                checkpoints=False,
                dry_run=read_only,
            ),
            recorder=parent.recorder,
            pricing=pricing,
            guards=LoopGuards(limits, GuardState(usage=parent.guards.state.usage)),
            session_tools=sub_task.session_tools,
        )
        return run_loop(sub), sub


def _context(parent: AgentSession, workdir: Path, scratch: Path, read_only: bool) -> ToolContext:
    ctx = parent.executor.context
    limits = ctx.limits
    if limits.max_calls is not None:
        left = max(0, limits.max_calls - parent.executor.calls_made)
        limits = msgspec.structs.replace(limits, max_calls=left)
    return ToolContext(
        workspace=WorkspacePort(workdir, secrets=ctx.workspace.secrets),
        mode=ctx.mode,
        approval_profile=ctx.approval_profile,
        network=ctx.network,
        write_access="denied" if read_only else ctx.write_access,
        containment=ctx.containment,
        approver=ctx.approver,
        grants=ctx.grants,
        user=ctx.user,
        cancel=ctx.cancel,
        deadline=ctx.deadline,
        scratch_dir=scratch / "spill",
        task_state_path=scratch / "plans" / "plan.json",
        validation_command=ctx.validation_command,
        protected=ctx.protected,
        limits=limits,
    )


def _task_id(parent: AgentSession, call: HostCall) -> str:
    base = f"{parent.task.task_id}.sub.{call.call_id}"
    cleaned = "".join(c if c.isalnum() or c in "._:-" else "-" for c in base)
    return cleaned[:128]
