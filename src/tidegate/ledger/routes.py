"""What each route asks for: its stages, the files it needs, and whether review gates ship.

Stage names follow the loop contract; ``clarify`` is completed by ``init`` (the brief).
"""

from __future__ import annotations

from tidegate.ledger.model import Route

CHECKPOINT = "checkpoint.md"
LEDGER = "ledger.md"
NOTES = "implementation-notes.md"
PLAN = "plan.md"
REVIEW = "review-report.md"
BRIEF = "brief.md"
ROADMAP = "roadmap.md"

FLOWS: dict[Route, tuple[str, ...]] = {
    Route.SMALL: ("clarify", "execute", "self_verify", "ship_summary"),
    Route.MEDIUM: ("clarify", "plan", "execute", "review", "re_execute", "ship"),
    Route.HIGH: (
        "clarify",
        "plan",
        "execute_with_micro_gates",
        "review",
        "re_execute",
        "ship",
        "long_run_extract",
    ),
    Route.EPIC: (
        "clarify",
        "plan",
        "roadmap",
        "milestone_loop",
        "review",
        "ship_per_milestone",
        "long_run_extract",
    ),
}

REQUIRED_FILES: dict[Route, tuple[str, ...]] = {
    Route.SMALL: (CHECKPOINT, LEDGER, NOTES, BRIEF),
    Route.MEDIUM: (CHECKPOINT, LEDGER, NOTES, PLAN, REVIEW),
    Route.HIGH: (CHECKPOINT, LEDGER, NOTES, PLAN, REVIEW),
    Route.EPIC: (CHECKPOINT, LEDGER, NOTES, PLAN, REVIEW, ROADMAP),
}

_EXECUTE = {
    Route.SMALL: "execute",
    Route.MEDIUM: "execute",
    Route.HIGH: "execute_with_micro_gates",
    Route.EPIC: "milestone_loop",
}
_START = {Route.SMALL: "execute", Route.MEDIUM: "plan", Route.HIGH: "plan", Route.EPIC: "roadmap"}


def execute_stage(route: Route) -> str:
    return _EXECUTE[route]


def start_stage(route: Route) -> str:
    """The stage a task is in after ``init``, before any item was claimed."""
    return _START[route]


def ship_stage(route: Route) -> str:
    return {Route.SMALL: "ship_summary", Route.EPIC: "ship_per_milestone"}.get(route, "ship")


def final_stage(route: Route) -> str:
    return FLOWS[route][-1]


def review_required(route: Route) -> bool:
    """Independent review gates ship on every route but small."""
    return route is not Route.SMALL


def micro_gates(route: Route) -> bool:
    """High and epic need an executed, passing check before an item is done."""
    return route in (Route.HIGH, Route.EPIC)


def plan_file(route: Route, has_plan: bool) -> str:
    """Where item plans are read: plan.md, or brief.md on small when there is no plan."""
    return PLAN if has_plan or route is not Route.SMALL else BRIEF
