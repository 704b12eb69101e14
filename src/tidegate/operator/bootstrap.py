"""``tidegate bootstrap run IDENTITY BASE_TYPE TOPOLOGY OBJECTIVE [STATE_ROOT]``: every
value explicit, checked together before anything is read or written, then the identity's
primary mode runs exactly as its own command would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidegate.operator.errors import OperatorError
from tidegate.operator.guarded import Backend
from tidegate.operator.identities import IDENTITIES, select

PRIMARY = {
    "engineer": "engineer",
    "meeting": "meeting",
    "goal-curator": "goal-curation",
    "improvement-curator": "improvement-curation",
    "gym": "gym",
    "composite-engineer": "engineer",
}


def bootstrap(
    identity: str,
    base_type: str,
    topology: str,
    objective: str,
    state_root: str | None,
    repo: Path,
    model: str | None,
    planner: str | None,
    verify: str | None,
) -> dict[str, Any]:
    if identity not in IDENTITIES:
        select(identity, base_type, topology, "engineer")  # raises, naming the accepted ones
    mode = PRIMARY[identity]
    selection = select(identity, base_type, topology, mode)
    if mode == "gym":
        raise OperatorError("identity 'gym' runs through `tidegate gym`, not bootstrap")
    from tidegate.operator import runs

    if mode in ("meeting", "goal-curation", "improvement-curation"):
        capture = {
            "meeting": runs.meeting_run,
            "goal-curation": runs.goal_curation_run,
            "improvement-curation": runs.improvement_run,
        }[mode]
        return {"mode": mode, **capture(selection, objective, state_root)}
    from tidegate.operator.engineer import engineer_run

    backend = Backend.of(selection, model, planner)
    if identity != "composite-engineer":
        view = engineer_run(selection, backend, repo, objective, state_root, verify=verify)
        return {"mode": mode, **view}
    # The composite session: a review of the repository first (its findings become
    # proposals for improvement curation), then the engineer's one bounded action.
    review_selection = select(identity, base_type, topology, "review")
    review = runs.review_run(review_selection, backend, repo, objective, state_root, verify=verify)
    engineer = engineer_run(selection, backend, repo, objective, state_root, verify=verify)
    return {
        "mode": "composite: review, engineer",
        "review": review,
        "engineer": engineer,
        "exit_code": review["exit_code"] or engineer["exit_code"],
    }
