"""REVIEW, REPORT and ANALYZE_ISSUES: findings without touching the main work tree."""

from __future__ import annotations

from tidegate.flow.phases.planning import _request
from tidegate.flow.phases.verify import run_verify
from tidegate.flow.state import RunState
from tidegate.records.proposal import Finding


def review(state: RunState) -> str:
    """Ask the planner for findings and run the configured checks in the shadow (at T0)."""
    if state.attempt.number > 1:
        return f"reusing the {len(state.findings)} finding(s) of attempt 1"
    findings = list(state.planner.review(_request(state), state.tree))
    command = state.request.verify
    if command:
        result = run_verify(state, command, "review")
        if result.ok:
            state.notes.append(f"review: `{command}` passes at T0")
        else:
            from tidegate.feedback import diagnose  # loaded only when a check failed

            diag = diagnose(command, result, root=state.shadow.path)
            findings.append(Finding(f"`{command}`: {diag.summary}", source="verify"))
            findings.extend(
                Finding(f"failing test {t}", source="verify") for t in diag.failing_tests
            )
            findings.extend(
                Finding(
                    d.message if not d.code else f"{d.code} {d.message}",
                    path=d.path,
                    line=d.line,
                    severity="error" if d.severity == "error" else "warning",
                    source=d.tool,
                )
                for d in diag.diagnostics
                if d.path is not None
            )
        state.shadow.reset()  # what the checks wrote in the shadow goes
    state.findings = findings
    return f"{len(findings)} finding(s)"


def report(state: RunState) -> str:
    by_severity: dict[str, int] = {}
    for f in state.findings:
        by_severity[f.severity] = by_severity.get(f.severity, 0) + 1
    summary = ", ".join(f"{n} {sev}" for sev, n in sorted(by_severity.items())) or "no findings"
    return summary


def analyze_issues(state: RunState) -> str:
    """Order the findings for the planner: errors first, then by location."""
    rank = {"error": 0, "warning": 1, "info": 2}
    state.findings.sort(key=lambda f: (rank.get(f.severity, 3), f.path or "", f.line or 0))
    located = sum(1 for f in state.findings if f.path)
    return f"{len(state.findings)} issue(s) to address, {located} with a location"
