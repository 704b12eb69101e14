"""Adapters of command.run and command.session over the command port.

Both run a command string only as ``host_interpreter().argv(command)``: the interpreter
the prompt publishes. The working directory is checked lexically here and resolved inside
the workspace by the runner. Containment follows the context: ``none`` runs uncontained,
``auto`` uses bubblewrap when its probe passed, ``required`` refuses to spawn without it
(a structured failure: nothing ran). A non-zero exit is a normal result, never a tool
error. Neither adapter claims writes: the executor inventories the workspace itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
from msgspec.structs import replace

from tidegate.errors import CapabilityMismatch
from tidegate.exec.containment import ContainmentPolicy, policy_for
from tidegate.exec.guard import Clearance
from tidegate.exec.interpreter import host_interpreter
from tidegate.exec.runner import CommandResult, CwdRefused, confine_cwd, run_command
from tidegate.exec.sessions import SessionError, SessionRead
from tidegate.tools.adapters.base import AdapterResult, Dispatch, ToolFailure
from tidegate.tools.context import ToolContext
from tidegate.tools.schemas import command as cmd


def containment_policy(ctx: ToolContext) -> ContainmentPolicy | None:
    """The containment a command of this context runs under: the workspace is writable
    (its ``.git`` stays read-only), the network only when the run allows it, and the
    workspace's secret-shaped files, withheld from the workspace tools, read as empty. The
    list is exact at each call, with no cap: the workspace's ``SecretFiles`` keeps an
    index of them for the session and re-lists only the directories that changed.
    Directories the index could not list are covered whole (an empty read-only tmpfs); a
    workspace root it cannot list refuses the command (``containment_unavailable``)."""
    policy = policy_for(
        ctx.containment, network=ctx.network == "allowed", writable=(ctx.root.resolve(),)
    )
    if policy is None:
        return None
    from tidegate.workspace.secret_index import UnlistableRoot

    try:
        masked = ctx.workspace.secrets.find_in(ctx.root.resolve())
    except UnlistableRoot as exc:
        raise ToolFailure("containment_unavailable", str(exc), retryable=False) from exc
    return replace(policy, masked=tuple(masked))


def checked_cwd(ctx: ToolContext, cwd: str) -> Path:
    """A relative working directory, refused lexically and then resolved in the root."""
    from tidegate.workspace.confine.refusal import PathRefused, check_relative

    try:
        rel = check_relative(cwd)
        return confine_cwd(ctx.root, str(rel))
    except PathRefused as exc:
        raise ToolFailure("cwd_refused", str(exc)) from exc
    except CwdRefused as exc:
        raise ToolFailure("cwd_refused", str(exc)) from exc


def clearance_of(call: Dispatch) -> Clearance:
    """The executor's clearance for this call; a dispatch made outside the executor is
    the context's origin, unapproved."""
    return call.clearance or Clearance(call.context.origin)


def spill_label(call_id: str) -> str:
    return "call-" + re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:80]


def command_status(result: CommandResult) -> str:
    if result.cancelled:
        return "cancelled"
    if result.timed_out:
        return "timed_out"
    return "succeeded" if result.exit_code == 0 else "failed"


def run_contained(
    ctx: ToolContext, command: str, cwd: Path, timeout_s: float, call: Dispatch
) -> CommandResult:
    try:
        return run_command(
            host_interpreter().argv(command),
            cwd,
            timeout_s,
            call.scratch_dir,
            label=spill_label(call.call_id),
            clearance=clearance_of(call),
            containment=containment_policy(ctx),
            deadline=ctx.deadline,
            cancel=ctx.cancel,
            stdout_limit=ctx.limits.output_bytes,
            stderr_limit=ctx.limits.output_bytes,
            workspace=ctx.root,
            spawn_hook=call.spawn_hook,
        )
    except CapabilityMismatch as exc:  # raised before anything was spawned
        raise ToolFailure("containment_unavailable", str(exc), retryable=False) from exc
    except CwdRefused as exc:
        raise ToolFailure("cwd_refused", str(exc)) from exc


class CommandRun(msgspec.Struct):
    tool_id: str = "command.run"
    label: str | None = None

    def run(self, args: cmd.RunInput, call: Dispatch) -> AdapterResult:
        ctx = call.context
        cwd = checked_cwd(ctx, args.cwd)
        result = run_contained(ctx, args.command, cwd, args.timeout_s, call)
        output = cmd.RunOutput(
            status=command_status(result),  # type: ignore[arg-type]
            exit_code=result.exit_code,
            stdout=result.stdout_tail,
            stderr=result.stderr_tail,
            stdout_truncated=result.stdout_truncated,
            stderr_truncated=result.stderr_truncated,
            duration_s=round(result.duration_s, 3),
            interpreter=host_interpreter().describe(),
            containment=result.containment.to_json(),
        )
        return AdapterResult(self.tool_id, output)


class CommandSession(msgspec.Struct):
    tool_id: str = "command.session"
    label: str | None = None

    def run(self, args: cmd.SessionInput, call: Dispatch) -> AdapterResult:
        ctx = call.context
        sessions = call.sessions
        sessions.stop_expired(ctx.deadline)
        try:
            if args.action == "start":
                assert args.command is not None
                cwd = checked_cwd(ctx, args.cwd)
                try:
                    session = sessions.start(
                        host_interpreter().argv(args.command),
                        args.command,
                        cwd,
                        containment_policy(ctx),
                        clearance=clearance_of(call),
                    )
                except CapabilityMismatch as exc:
                    raise ToolFailure("containment_unavailable", str(exc), retryable=False) from exc
                sid = session.session_id
                got = sessions.read(sid, args.wait_s, args.max_bytes)
            else:
                assert args.session_id is not None
                sid = args.session_id
                session = sessions.get(sid)
                if args.action == "send":
                    assert args.input is not None
                    sessions.send(sid, args.input)
                    got = sessions.read(sid, args.wait_s, args.max_bytes)
                elif args.action == "read":
                    got = sessions.read(sid, args.wait_s, args.max_bytes)
                else:
                    got = sessions.stop(sid, args.max_bytes)
        except SessionError as exc:
            raise ToolFailure(exc.code, str(exc)) from exc
        output = _session_output(sid, args.action, got, session.containment.to_json())
        return AdapterResult(self.tool_id, output, state_changed=args.action != "read")


def _session_output(
    sid: str, action: cmd.SessionAction, got: SessionRead, containment: dict[str, object]
) -> cmd.SessionOutput:
    return cmd.SessionOutput(
        session_id=sid,
        action=action,
        running=got.running,
        exit_code=got.exit_code,
        stdout=got.stdout,
        stderr=got.stderr,
        dropped_bytes=got.dropped_bytes,
        pending_bytes=got.pending_bytes,
        containment=dict(containment),
    )
