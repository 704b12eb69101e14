"""A planner that proposes exactly the change it was given (``change_propose`` over MCP:
another agent's diff or SEARCH/REPLACE blocks). It decides nothing; the engine validates,
verifies and merges the change like any other proposal."""

from __future__ import annotations

import msgspec

from tidegate.errors import ErrorClass, PhaseError
from tidegate.records.proposal import Finding, Plan, PlanRequest, Proposal, TreeView


class GivenProposalPlanner(msgspec.Struct):
    proposal: Proposal
    summary: str = "the change the client proposed"
    name: str = "given"

    def plan(self, request: PlanRequest, tree: TreeView) -> Plan:
        return Plan(summary=self.summary)

    def patch(self, request: PlanRequest, plan: Plan, tree: TreeView) -> Proposal:
        if request.attempt > 1:
            raise PhaseError(ErrorClass.LOGIC, "a given change has one attempt", retryable=False)
        return self.proposal

    def review(self, request: PlanRequest, tree: TreeView) -> list[Finding]:
        return []
