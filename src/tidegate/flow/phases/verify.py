"""VERIFY runs the user's checks in the shadow; SHRINK turns a failure into feedback."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path

from msgspec.structs import replace

from tidegate.errors import CapabilityMismatch, ErrorClass, PhaseError
from tidegate.exec.containment import (
    ContainmentPolicy,
    ContainmentReport,
    policy_for,
    probe,
    uncontained_reason,
)
from tidegate.exec.environment import command_environment
from tidegate.exec.guard import Clearance, GuardRefused, admit
from tidegate.exec.overlay import Overlay, mounts_below
from tidegate.exec.overlay.probe import probe as overlay_probe
from tidegate.exec.runner import CommandResult, run_command, shell_argv
from tidegate.exec.view import command_executables
from tidegate.flow.request import verify_clearance
from tidegate.flow.state import RunState
from tidegate.git.env import scrubbed_env
from tidegate.records.modes import Mode
from tidegate.records.report import ContainmentOut, SharedDir
from tidegate.workspace.fidelity import python_fidelity


def verify(state: RunState) -> str:
    proposal = state.attempt.proposal
    assert proposal is not None
    for check in proposal.checks:
        content = state.tree.read_bytes(check.path)
        if content is None or check.contains.encode("utf-8") not in content:
            raise PhaseError(
                ErrorClass.LOGIC,
                f"verify-contains failed: {check.path} does not contain {check.contains[:60]!r}",
            )
    command = state.request.verify
    if not command:
        state.notes.append("no --verify command: the change was validated but not verified")
        return f"{len(proposal.checks)} content check(s); no verify command"
    _shadow_intact(state, "before")
    result = run_verify(state, command, f"verify-{state.attempt.number}")
    state.attempt.verify = result
    _shadow_intact(state, "during")
    if not result.ok:
        from tidegate.feedback import diagnose  # loaded only when something failed

        # Here, before ROLLBACK resets the shadow: excerpts must show the candidate's lines.
        diag = diagnose(command, result, root=state.shadow.path)
        state.attempt.diagnosis = diag
        summary = diag.summary
        if diag.error_class is ErrorClass.DEPENDENCY_ERROR and (
            hint := _missing_in_shadow(state, command)
        ):
            summary += f" ({hint})"
        raise PhaseError(diag.error_class, summary, diag.feedback)
    return f"`{command}` passed in {result.duration_s:.2f}s"


def _shadow_intact(state: RunState, when: str) -> None:
    """A verification counts only if it ran on the shadow this run prepared, holding the
    candidate: another process (a ``recover`` elsewhere, the command itself) may have
    removed or changed it, and a command run in an emptied directory proves nothing."""
    reason = state.shadow.lost(state.attempt.changes)
    if reason is not None:
        raise PhaseError(
            ErrorClass.UNKNOWN,
            f"the shadow {state.shadow.path} {reason} {when} VERIFY; the change was not "
            "verified and nothing was applied",
            retryable=False,
        )


def _missing_in_shadow(state: RunState, command: str) -> str | None:
    """Explain a relative command path that only exists in the main work tree (ignored
    files such as .venv/ are not in the shadow)."""
    try:
        first = shlex.split(command)[0]
    except (ValueError, IndexError):
        return None
    if first.startswith("/") or "/" not in first:
        return None
    if (state.repo.root / first).exists() and not (state.shadow.path / first).exists():
        return (
            f"{first} exists in your work tree but is not tracked, so the shadow does not "
            f"have it; use its absolute path: {state.repo.root / first}"
        )
    return None


def run_verify(state: RunState, command: str, label: str) -> CommandResult:
    """Run a shell command through the published interpreter in the shadow.

    Contained by default where bubblewrap works: the command sees the system, its
    toolchains, the shadow and private TMPDIR/HOME (writable) and the main work tree
    (read-only); the network is off unless the request allows it. Ignored dependency
    directories of the main tree are shared read-only. Its environment is an allowlist
    plus ``[containment] env``: no provider key or other secret-shaped variable.
    """
    env, passthrough = _command_env(state)
    policy, contained, clearance = _guarded_policy(state, command)
    shared = _share(state, contained)
    if contained and policy is not None:
        policy = replace(
            policy,
            shares=tuple((Path(s.source), state.shadow.path / s.path) for s in shared),
        )
    _apply_fidelity(state, command, env, policy, clearance)
    layer = _throwaway_layer(state)
    if layer is None:
        state.shadow.unknown()  # the command writes the shadow itself
    try:
        result = run_command(
            shell_argv(command),
            cwd=state.shadow.path,
            timeout_s=state.request.verify_timeout_s,
            spill_dir=state.scratch / "output",
            env=env,
            label=label,
            clearance=clearance,
            containment=policy,
            workspace=state.shadow.path,
            passthrough=passthrough,
            spawn_hook=layer,
            output=state.command_output,
        )
    except CapabilityMismatch as exc:  # refused by the runner itself, before spawning
        raise PhaseError(ErrorClass.CAPABILITY_MISMATCH, str(exc), retryable=False) from exc
    finally:
        if layer is not None:
            layer.release()  # what the command wrote goes with the layer
    _record(state, result.containment, shared)
    return result


def _command_env(state: RunState) -> tuple[dict[str, str], tuple[str, ...]]:
    """The verify command's environment (an allowlist, no secret) and its passthrough."""
    env = scrubbed_env({"TIDEGATE_RUN_ID": state.run_id, "TIDEGATE_SHADOW": str(state.shadow.path)})
    for key in ("GIT_OPTIONAL_LOCKS", "GIT_PAGER", "PAGER", "LC_ALL"):
        # git's safety settings are for tidegate's own git calls, not the user's command.
        if key in os.environ:
            env[key] = os.environ[key]
        else:
            env.pop(key, None)
    passthrough = state.config.containment.env
    env = command_environment(env, passthrough)  # the fidelity probe gets no secret either
    return env, passthrough


def _guarded_policy(
    state: RunState, command: str
) -> tuple[ContainmentPolicy | None, bool, Clearance]:
    """The command's containment policy, whether it is contained, and its clearance;
    raises when containment is required but missing or the guard refuses running it
    uncontained (before anything is linked into the shadow)."""
    policy = _policy(state)
    if policy is not None and state.request.origin in ("user", "benchmark"):
        # programs named by the user's own command, or by the one the gym builds around
        # an interpreter it chose, are made visible; never a path an MCP client or a
        # repository's file chose
        policy = replace(policy, executables=tuple(command_executables(shell_argv(command))))
    contained = policy is not None and probe(policy.bwrap).verified
    if policy is not None and policy.required and not contained:
        reason = probe(policy.bwrap).reason
        raise PhaseError(
            ErrorClass.CAPABILITY_MISMATCH,
            f"containment is required but {reason}; the verify command was not run",
            retryable=False,
        )
    clearance = verify_clearance(state.request, state.config.containment.mode)
    why = uncontained_reason(policy)
    if why is not None:
        try:  # the guard's answer, before anything is linked into the shadow
            admit(clearance, why)
        except GuardRefused as exc:
            raise PhaseError(ErrorClass.CAPABILITY_MISMATCH, str(exc), retryable=False) from exc
    return policy, contained, clearance


def _apply_fidelity(
    state: RunState,
    command: str,
    env: dict[str, str],
    policy: ContainmentPolicy | None,
    clearance: Clearance,
) -> None:
    """Check once per run which shadow paths the command's interpreter must import
    first, and put them at the front of ``env``'s PYTHONPATH."""
    if state.fidelity is None:
        state.fidelity = python_fidelity(
            command,
            state.repo.root,
            state.shadow.path,
            env,
            probe_in=_prober(state, policy, clearance),
        )
        if note := state.fidelity.note():
            state.notes.append(note)
    if state.fidelity.pythonpath:
        existing = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join(
            state.fidelity.pythonpath + ([existing] if existing else [])
        )


def _prober(
    state: RunState, policy: ContainmentPolicy | None, clearance: Clearance
) -> Callable[[list[str], dict[str, str]], bytes | None]:
    """How the fidelity check runs the verify command's interpreter: through the runner,
    under the same guard and containment as the command itself (the interpreter, and the
    site-packages it loads, are the command's)."""

    def run(argv: list[str], env: dict[str, str]) -> bytes | None:
        result = run_command(
            argv,
            cwd=Path("/") if policy is None else state.shadow.path,
            timeout_s=20,
            spill_dir=state.scratch / "output",
            env=env,
            label="fidelity-probe",
            clearance=clearance,
            containment=policy,
            stdout_limit=1 << 20,
        )
        return result.stdout_file.read_bytes() if result.ok else None

    return run


def _throwaway_layer(state: RunState) -> Overlay | None:
    """An overlay over the shadow for the command to write into, dropped afterwards, so
    that the shadow keeps only what APPLY wrote and the next cleaning is an undo of that.
    None (the command then writes the shadow itself) when ``[shadow] verify_layer`` is
    off, the shadow is kept for inspection (``--keep-shadow``: what the command left is
    part of what there is to see), the host has no working overlay, a mount point lies
    inside the shadow (the overlay would hide it) or the mount fails."""
    if state.config.shadow.verify_layer == "off" or state.request.keep_shadow:
        return None
    support = overlay_probe()
    if not support.available or mounts_below(state.shadow.path):
        return None
    try:
        return Overlay(state.shadow.path, support, parent=state.scratch)
    except OSError:
        return None


def _policy(state: RunState) -> ContainmentPolicy | None:
    mode = state.request.containment or state.config.containment.mode
    return policy_for(
        mode,
        network=state.request.network,
        writable=(state.shadow.path,),
        readonly_overlays=(state.repo.root,),
    )


def _share(state: RunState, contained: bool) -> list[SharedDir]:
    """Make the configured ignored directories of the main tree visible in the shadow,
    read-only: bubblewrap binds them (returned for the policy); uncontained, a symlink
    is the only way, and nothing enforces read-only then."""
    shared: list[SharedDir] = []
    candidates: list[str] = []
    linked: set[str] = set()
    for rel in state.config.containment.share:
        source = state.repo.root / rel
        target = state.shadow.path / rel
        if not source.is_dir() or not target.parent.is_dir():
            continue
        if os.path.islink(target) and os.readlink(target) == str(source):
            linked.add(rel)  # linked by an earlier attempt that ROLLBACK has not cleaned yet
        elif os.path.lexists(target) and not _empty_dir(target):
            continue  # the shadow has its own (tracked, or built by the command)
        candidates.append(rel)
    unlinked = [rel for rel in candidates if rel not in linked]
    absent = [rel for rel in unlinked if not os.path.lexists(state.shadow.path / rel)]
    ignored = _ignored(state, absent, index=False)
    ignored |= _ignored(state, [rel for rel in unlinked if rel not in absent], index=True)
    for rel in candidates:
        if rel not in linked and rel not in ignored:
            continue
        source = state.repo.root / rel
        target = state.shadow.path / rel
        if not contained:
            if os.path.lexists(target) and not os.path.islink(target):
                state.shadow.unknown()  # an empty directory git does not know of
            elif not os.path.lexists(target):
                state.shadow.will_create(rel)
            if os.path.islink(target):
                os.unlink(target)
            elif os.path.isdir(target):
                os.rmdir(target)
            os.symlink(source, target)
        shared.append(
            SharedDir(path=rel, source=str(source), how="ro-bind" if contained else "symlink")
        )
    return shared


def _empty_dir(path: Path) -> bool:
    """An empty directory: a mount point left by an earlier contained run."""
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())


def _ignored(state: RunState, rels: list[str], *, index: bool) -> set[str]:
    """Which of ``rels`` git ignores in the main work tree (one ``check-ignore`` for all).

    ``index=False`` for paths the shadow lacks altogether: T0 has no entry there, so the
    index has none git would count as tracked (a gitlink would be in T0, and the shadow
    would have its empty directory), and reading the index (megabytes, most of the
    call's time on a large repository) can be skipped."""
    if not rels:
        return set()
    payload = b"".join(os.fsencode(rel) + b"\0" for rel in rels)
    args = ["check-ignore", "-z", "--stdin"] + ([] if index else ["--no-index"])
    res = state.repo.git.run(*args, input=payload, check=False)
    return {os.fsdecode(p) for p in res.stdout.split(b"\0") if p}


def _record(state: RunState, report: ContainmentReport, shared: list[SharedDir]) -> None:
    state.containment = ContainmentOut(
        backend=report.backend,
        verified=report.verified,
        network=report.network,
        writable=list(report.writable),
        readonly=list(report.readonly),
        private_dirs=list(report.private_dirs),
        shared=shared,
        reason=report.reason,
    )
    if report.backend == "bubblewrap":
        note = (
            "VERIFY ran under bubblewrap: it saw only the system, its toolchains and the "
            "shadow; writable only the shadow and a private TMPDIR/HOME, the main work tree "
            f"read-only, network {'on' if report.network else 'off'}"
        )
    else:
        note = (
            f"VERIFY ran uncontained ({report.reason}): the command could write anywhere "
            "you can and reach the network"
        )
    if shared:
        how = "read-only" if report.backend == "bubblewrap" else "by symlink, not enforced"
        note += f"; shared from the main work tree ({how}): {', '.join(s.path for s in shared)}"
    if note not in state.notes:
        state.notes.append(note)


def shrink(state: RunState) -> str:
    """Patch/debug: keep the failure's precise feedback for the next attempt.
    Review: condense the findings."""
    if state.request.mode is Mode.REVIEW:
        errors = sum(1 for f in state.findings if f.severity == "error")
        return f"{len(state.findings)} finding(s), {errors} error(s)"
    attempt = state.attempt
    error = attempt.error
    if error is None:
        return "nothing to shrink"
    diag = attempt.diagnosis
    head = f"Attempt {attempt.number} failed in {attempt.failed_phase}"
    if diag is not None and attempt.failed_phase == "VERIFY":
        text = f"{head}.\n{diag.feedback}"
        state.focus_files = tuple(diag.files_involved)
    else:
        text = f"{head} ({error.error_class.value}): {error.message}"
        if error.feedback and error.feedback != error.message:
            text += "\n" + error.feedback
    state.feedback.append(text)
    attempt.feedback_chars = len(text)
    focus = f"; focus on {len(state.focus_files)} file(s)" if state.focus_files else ""
    tokens = (len(text) + 3) // 4  # the same estimate as tidegate.feedback.estimate_tokens
    return f"~{tokens} tokens of feedback for the next attempt{focus}"
