"""The scripted planner: a labelled contract double that replays a JSON file.

Used by tests and the demo to drive exact attempt sequences without a model::

    {
      "planner": "scripted",
      "attempts": [
        {"plan": "first try", "diff": "--- a/calc.py\\n+++ b/calc.py\\n..."},
        {"plan": "second try", "objective": "edit-file: calc.py\\nreplace: ...\\nwith: ...",
         "expect_feedback": "test_add"}
      ],
      "findings": [{"message": "add() subtracts", "path": "calc.py", "line": 2}]
    }

Attempt N replays ``attempts[N-1]``. Each entry gives a unified ``diff``, a ``diff_file``
(relative to the script), ``search_replace`` edit blocks (see
``tidegate.validate.edit_blocks``), or an ``objective`` in the structured edit-block format.
``expect_feedback`` makes the planner fail unless the previous attempt's feedback contains
that text: proof that SHRINK's feedback reached the planner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidegate.errors import ErrorClass, PhaseError, UsageError
from tidegate.planners.structured import StructuredPlanner
from tidegate.records.proposal import Finding, Plan, PlanRequest, Proposal, TreeView
from tidegate.text.jsonparse import parse_json


class ScriptedPlanner:
    name = "scripted"

    def __init__(self, script: dict[str, Any], base_dir: Path) -> None:
        attempts = script.get("attempts")
        if not isinstance(attempts, list) or not attempts:
            raise UsageError("scripted planner: the script needs a non-empty 'attempts' list")
        self.attempts: list[dict[str, Any]] = attempts
        self.findings = [Finding(**f) for f in script.get("findings", [])]
        self.base_dir = base_dir

    @classmethod
    def load(cls, path: Path) -> ScriptedPlanner:
        try:
            script = parse_json(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"scripted planner: {path}: {exc.strerror}") from exc
        except ValueError as exc:
            raise UsageError(f"scripted planner: {path}: invalid JSON: {exc}") from exc
        if not isinstance(script, dict):
            raise UsageError(f"scripted planner: {path}: expected a JSON object")
        return cls(script, path.parent)

    def _entry(self, attempt: int) -> dict[str, Any]:
        if attempt > len(self.attempts):
            raise PhaseError(
                ErrorClass.UNKNOWN, f"scripted planner has no entry for attempt {attempt}"
            )
        return self.attempts[attempt - 1]

    def plan(self, request: PlanRequest, tree: TreeView) -> Plan:
        entry = self._entry(request.attempt)
        expected = entry.get("expect_feedback")
        if expected and expected not in (request.feedback or ""):
            raise PhaseError(
                ErrorClass.UNKNOWN,
                f"scripted planner expected feedback containing {expected!r}",
            )
        return Plan(summary=str(entry.get("plan", f"scripted attempt {request.attempt}")))

    def patch(self, request: PlanRequest, plan: Plan, tree: TreeView) -> Proposal:
        entry = self._entry(request.attempt)
        if "objective" in entry:
            inner = StructuredPlanner.from_text(
                entry["objective"], self.base_dir, f"script attempt {request.attempt}"
            )
            return inner.patch(request, plan, tree)
        if "search_replace" in entry:
            return Proposal(search_replace=entry["search_replace"], diff=entry.get("diff"))
        if "diff_file" in entry:
            data = (self.base_dir / entry["diff_file"]).read_bytes()
            return Proposal(diff=data.decode("utf-8", "surrogateescape"))
        return Proposal(diff=entry.get("diff"))

    def review(self, request: PlanRequest, tree: TreeView) -> list[Finding]:
        return list(self.findings)
