"""Correctness checks, each with a name: a command (exit 0 passes, run in the repository
after the run), a file that must or must not contain a text, a file that must be absent,
the run's status, or a review finding that names a real path (and line)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from tidegate.errors import CapabilityMismatch
from tidegate.exec.containment import policy_for
from tidegate.exec.guard import Clearance
from tidegate.exec.runner import run_command, shell_argv
from tidegate.gym.scenarios import Check

CHECK_TIMEOUT_S = 300.0


def expand(command: str) -> str:
    return command.replace("{python}", sys.executable)


def run_check(
    check: Check,
    repo: Path,
    report: Any,
    state: Path | None = None,
    *,
    clearance: Clearance,
    spill_dir: Path,
) -> dict[str, Any]:
    """One check's verdict. A command check runs through the one runner, contained where
    bubblewrap works (the run's repository writable, no network), else only as
    ``clearance`` allows: it runs the contestant's code."""
    if check.kind == "active_goal":
        passed, detail = _active_goal(check, state)
    elif check.kind == "command":
        passed, detail = _command(check, repo, clearance, spill_dir)
    else:
        passed, detail = _evaluate(check, repo, report)
    return {"name": check.name, "kind": check.kind, "passed": passed, "detail": detail}


def _text(repo: Path, rel: str | None) -> str | None:
    try:
        return (repo / str(rel)).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _command(check: Check, repo: Path, clearance: Clearance, spill_dir: Path) -> tuple[bool, str]:
    assert check.run is not None
    policy = policy_for("auto", network=False, writable=(repo,))
    assert policy is not None
    policy = replace(policy, executables=(sys.executable,))
    try:
        res = run_command(
            shell_argv(expand(check.run)),
            repo,
            CHECK_TIMEOUT_S,
            spill_dir,
            label="check-" + re.sub(r"[^A-Za-z0-9_.-]", "_", check.name)[:60],
            clearance=clearance,
            containment=policy,
        )
    except CapabilityMismatch as exc:  # the guard refused it: nothing ran
        return False, f"not run: {exc}"
    if res.timed_out:
        return False, f"timed out after {CHECK_TIMEOUT_S:.0f} s"
    return res.exit_code == 0, f"exit {res.exit_code} ({res.containment.backend})"


def _evaluate(check: Check, repo: Path, report: Any) -> tuple[bool, str]:
    if check.kind == "file_contains":
        text = _text(repo, check.path)
        return text is not None and str(check.text) in text, f"{check.path} contains {check.text!r}"
    if check.kind == "file_lacks":
        text = _text(repo, check.path)
        return text is not None and str(
            check.text
        ) not in text, f"{check.path} lacks {check.text!r}"
    if check.kind == "file_absent":
        # lexists: a link left where the file was (even a dangling one) is not absence
        return not os.path.lexists(repo / str(check.path)), f"{check.path} is absent"
    if check.kind == "status":
        return report.status == check.status, f"status {report.status} (expected {check.status})"
    # finding_at: a finding names a path that exists, with a line inside the file
    for finding in report.findings:
        if finding.path is None or (check.path and finding.path != check.path):
            continue
        text = _text(repo, finding.path)
        if text is None:
            continue
        if finding.line is None or 1 <= finding.line <= len(text.splitlines()):
            return True, f"finding at {finding.path}:{finding.line}"
    return False, f"no finding names a real line of {check.path or 'any file'}"


def _active_goal(check: Check, state: Path | None) -> tuple[bool, str]:
    from tidegate.operator.goals import active_top

    if state is None:
        return False, "no operator state root in this run"
    titles = [g["title"] for g in active_top(state)]
    return any(str(check.text) in t for t in titles), f"active goals: {titles}"
