"""VERIFY runs the user's checks in the shadow; SHRINK turns a failure into feedback."""

from __future__ import annotations

import os
import shlex

from tidegate.errors import ErrorClass, PhaseError
from tidegate.exec.runner import CommandResult, run_command, shell_argv
from tidegate.flow.modes import Mode
from tidegate.flow.state import RunState
from tidegate.git import scrubbed_env
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
    result = run_verify(state, command, f"verify-{state.attempt.number}")
    state.attempt.verify = result
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
    """Run a shell command through the published interpreter in the shadow."""
    env = scrubbed_env({"TIDEGATE_RUN_ID": state.run_id, "TIDEGATE_SHADOW": str(state.shadow.path)})
    for key in ("GIT_OPTIONAL_LOCKS", "GIT_PAGER", "PAGER", "LC_ALL"):
        # git's safety settings are for tidegate's own git calls, not the user's command.
        if key in os.environ:
            env[key] = os.environ[key]
        else:
            env.pop(key, None)
    if state.fidelity is None:
        state.fidelity = python_fidelity(command, state.repo.root, state.shadow.path, env)
        if note := state.fidelity.note():
            state.notes.append(note)
    if state.fidelity.pythonpath:
        existing = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join(
            state.fidelity.pythonpath + ([existing] if existing else [])
        )
    return run_command(
        shell_argv(command),
        cwd=state.shadow.path,
        timeout_s=state.request.verify_timeout_s,
        spill_dir=state.scratch / "output",
        env=env,
        label=label,
    )


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
