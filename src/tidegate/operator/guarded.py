"""One guarded engine run on behalf of an operator command, recorded in the run store of
the same state root. The engine does the work (shadow, VERIFY, apply-back as unstaged
edits); this module builds the request and the planner for a base type, and names the
implementation that actually served it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from tidegate.flow.request import absolute_script
from tidegate.operator.errors import OperatorError
from tidegate.operator.identities import Selection


class Backend(msgspec.Struct, frozen=True):
    """What to ask the engine for: a model spec (model base types) or a planner spec."""

    model: str | None
    planner: str

    @classmethod
    def of(cls, selection: Selection, model: str | None, planner: str | None) -> Backend:
        base = selection.base_type.name
        if selection.base_type.needs_model:
            if not model:
                raise OperatorError(f"base type {base!r} needs --model NAME (e.g. --model gpt-4.1)")
            if planner:
                raise OperatorError(f"base type {base!r} plans with its model; drop --planner")
            return cls(model=f"{base}:{model}", planner="structured")
        if model:
            raise OperatorError(
                f"base type {base!r} runs no model; use base type openai or anthropic for --model"
            )
        if planner and planner != "structured" and not planner.startswith("scripted:"):
            raise OperatorError("--planner takes 'structured' or 'scripted:PATH'")
        return cls(model=None, planner=str(absolute_script(planner or "structured")))


def served_by(selection: Selection, planner: Any) -> str:
    """The implementation behind the run: the model's endpoint and name when a model
    planned, else which local planner did."""
    base = selection.base_type
    if planner is not None and hasattr(planner, "model"):
        ident = planner.model.identity
        return f"{base.implementation} {ident.endpoint} model={ident.model}"
    return base.implementation


def run_engine(
    repo: Path,
    state_root: Path,
    selection: Selection,
    backend: Backend,
    *,
    mode: str,
    objective: str,
    verify: str | None,
    max_attempts: int = 3,
) -> tuple[Any, str]:
    """Run the engine; returns its FlowReport (recorded in the state root's run store) and
    the implementation that served it."""
    from tidegate.flow.transaction import execute
    from tidegate.planners import planner_for
    from tidegate.records.modes import Mode
    from tidegate.records.request import RunRequest
    from tidegate.store import StoreRecorder, open_run_store

    request = RunRequest(
        repo=repo,
        mode=Mode(mode),
        objective=objective,
        verify=verify,
        model=backend.model,
        planner=backend.planner,
        max_attempts=1 if mode == "review" else max_attempts,
    )
    store = open_run_store(request.repo, str(state_root))
    recorder = StoreRecorder(store)
    planner = planner_for(request, recorder=recorder) if request.model else None
    served = served_by(selection, planner)
    if served == "local-harness::structured-planner" and backend.planner.startswith("scripted:"):
        served = "local-harness::scripted-planner"
    try:
        return execute(request, planner=planner, recorder=recorder), served
    finally:
        getattr(planner, "close", lambda: None)()
        store.close()  # the store's files are settled before the command's records
