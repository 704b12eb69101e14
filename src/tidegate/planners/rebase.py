"""The planner of a rebase: another run's verified change, re-applied on this run's T0.

A run whose change conflicts at APPLY_BACK with what landed since its T0 may try again
(``--rebase``) as a new run on a fresh T0. Its proposal is the old run's verified change as
a unified diff (old T0 -> its candidate), with as much context as still matches the new
T0: three lines, then one, then none. Each is tried with VALIDATE's own tolerant hunk
matching (``validate.hunks``: exact lines first, a line-number hint, never an ambiguous
place), and the first that applies is proposed; VALIDATE and VERIFY then judge it like any
other change. Without context, a hunk that only inserts has nothing left to anchor it, so
that level is refused for such a change rather than guessed.
"""

from __future__ import annotations

import re

import msgspec

from tidegate.errors import ErrorClass, PhaseError
from tidegate.records.proposal import Finding, Plan, PlanRequest, Proposal, TreeView
from tidegate.validate.hunks import HunkError, apply_tolerantly

_INSERT_ONLY = re.compile(r"^@@ -\d+,0 ", re.MULTILINE)


class RebasePlanner(msgspec.Struct):
    diffs: tuple[tuple[int, str], ...]
    """(context lines, the change as a diff with that much context), most context first."""
    origin: str
    """The run whose change this is."""
    name: str = "rebase"
    used_context: int | None = None

    def plan(self, request: PlanRequest, tree: TreeView) -> Plan:
        return Plan(summary=f"the verified change of run {self.origin}, on a fresh T0")

    def patch(self, request: PlanRequest, plan: Plan, tree: TreeView) -> Proposal:
        if request.attempt > 1:
            raise PhaseError(ErrorClass.LOGIC, "a rebased change has one attempt", retryable=False)
        why = ""
        for context, diff in self.diffs:
            if context == 0 and _INSERT_ONLY.search(diff):
                why = "an insertion's surrounding lines changed since its T0"
                continue
            try:
                apply_tolerantly(diff, tree.read_bytes, tree.is_executable)
            except HunkError as exc:
                why = str(exc).splitlines()[0]
                continue
            self.used_context = context
            return Proposal(diff=diff)
        raise PhaseError(
            ErrorClass.CONFLICT,
            f"the change of run {self.origin} does not apply on the fresh T0 ({why}); "
            "nothing was changed",
            retryable=False,
        )

    def review(self, request: PlanRequest, tree: TreeView) -> list[Finding]:
        return []
