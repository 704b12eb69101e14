"""Checking an adapter's answer against its tool's contract; what a call whose outcome
cannot be established raises."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from tidegate.tools.adapters.base import AdapterResult
from tidegate.tools.catalog import ToolSpec
from tidegate.tools.effects import HOST_CAPTURED_FIELDS, ApprovalEffect, Effects, undeclared


class UnknownOutcome(Exception):
    """The outcome of the call in progress cannot be established."""

    def __init__(self, reason: str, effects: Effects | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.effects = effects


def check_answer(
    spec: ToolSpec, outcome: AdapterResult, approval: ApprovalEffect, observed: Effects
) -> tuple[dict[str, Any], Effects]:
    """The output (validated against the tool's output schema) and the effects of a
    successful call: the adapter's claims with the approval and the observed writes. Raises
    UnknownOutcome when the adapter answered for another tool, claimed host-only evidence,
    broke the output schema or reported an effect outside the tool's profile."""
    if outcome.tool != spec.tool_id:
        raise UnknownOutcome(
            f"the adapter answered as {outcome.tool}, not {spec.tool_id}", observed
        )
    forged = sorted(set(outcome.claims.present()) & HOST_CAPTURED_FIELDS)
    if forged:
        raise UnknownOutcome(
            f"the adapter claimed host-only evidence: {', '.join(forged)}", observed
        )
    try:
        raw_output = (
            outcome.output.model_dump(mode="json")
            if isinstance(outcome.output, BaseModel)
            else dict(outcome.output)
        )
        output = spec.output_model.model_validate(raw_output).model_dump(mode="json")
    except (ValidationError, TypeError, ValueError) as exc:
        raise UnknownOutcome(
            f"the output does not match {spec.tool_id}'s schema: {exc}", observed
        ) from exc
    effects = outcome.claims.model_copy(
        update={"approval": approval, "write": observed.write, "derived": observed.derived}
    )
    bad = undeclared(spec.tool_id, effects)
    if bad:
        raise UnknownOutcome(f"{spec.tool_id} may not report {', '.join(bad)}", observed)
    return output, effects
