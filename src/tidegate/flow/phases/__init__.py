"""One function per phase. Each takes the run state, reads or mutates exactly what its
declared effect allows (``tidegate.records.modes.EFFECTS``), and raises ``PhaseError`` to fail."""

from __future__ import annotations

from collections.abc import Callable

from tidegate.flow.phases import apply, apply_back, base, planning, review, validate, verify
from tidegate.flow.state import RunState
from tidegate.records.modes import Phase

PhaseFn = Callable[[RunState], str]

PHASES: dict[Phase, PhaseFn] = {
    Phase.PREFLIGHT: base.preflight,
    Phase.CONTEXT: base.context,
    Phase.EXPLORE: base.explore,
    Phase.REVIEW: review.review,
    Phase.REPORT: review.report,
    Phase.ANALYZE_ISSUES: review.analyze_issues,
    Phase.PLAN: planning.plan,
    Phase.PATCH: planning.patch,
    Phase.VALIDATE: validate.validate,
    Phase.AST_VALIDATE: validate.ast_validate,
    Phase.APPLY: apply.apply,
    Phase.VERIFY: verify.verify,
    Phase.ROLLBACK: apply.rollback,
    Phase.SHRINK: verify.shrink,
    Phase.APPLY_BACK: apply_back.apply_back,
}

__all__ = ["PHASES", "PhaseFn"]
