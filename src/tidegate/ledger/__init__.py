"""The task ledger: a task's state kept in markdown files in a task directory, and the
loop that drives work from them (routes, the status state machine, retry budgets, evidence
rules, human gates, and ``ledger run`` on top of the guarded engine).

The files, read in this order, are the source of truth — never chat memory:
``checkpoint.md`` (where the task stands, the resume pointer), ``ledger.md`` (one row per
item), ``implementation-notes.md`` (decisions, failures, evidence), ``plan.md`` or
``brief.md`` (what each item is), ``review-report.md`` (the review verdict) and, on the epic
route, ``roadmap.md``. Formats: docs/ledger.md.
"""

from tidegate.ledger.engine import ItemRun, RunOptions, run_items, run_next
from tidegate.ledger.errors import (
    EvidenceRejected,
    LedgerFormatError,
    LedgerLockedError,
    TransitionRefused,
)
from tidegate.ledger.model import (
    FailureType,
    Gate,
    ItemStatus,
    Route,
    StageStatus,
    TaskState,
)
from tidegate.ledger.next_action import Action, next_action
from tidegate.ledger.operations import (
    Outcome,
    block,
    claim,
    discard,
    done,
    init,
    load,
    record,
    requeue,
    route,
    ship,
    status_view,
)
from tidegate.ledger.transitions import EDGES

__all__ = [
    "EDGES",
    "Action",
    "EvidenceRejected",
    "FailureType",
    "Gate",
    "ItemRun",
    "ItemStatus",
    "LedgerFormatError",
    "LedgerLockedError",
    "Outcome",
    "Route",
    "RunOptions",
    "StageStatus",
    "TaskState",
    "TransitionRefused",
    "block",
    "claim",
    "discard",
    "done",
    "init",
    "load",
    "next_action",
    "record",
    "requeue",
    "route",
    "run_items",
    "run_next",
    "ship",
    "status_view",
]
