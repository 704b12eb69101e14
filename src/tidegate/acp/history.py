"""``session/load``: a session reopened in an editor is its runs replayed from the run store.

Every run a session starts is recorded with the task id ``acp-<session id>``, so the
repository's store knows a session's runs after ``tidegate acp`` (and the editor) restarted.
Loading replays each run, oldest first: the prompt as the user's message, each phase as a
message line, and how the run ended. A last run that is still held -- neither applied nor
discarded -- is replayed as the pending edit it was and stays offered: the next prompt in
the session asks for it again (apply or discard) before its own run starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import msgspec

from tidegate.records.report import FlowReport
from tidegate.text.sanitize import sanitize

MAX_RUNS = 1000
"""The newest runs of a repository looked through for a session's."""


def task_id(session_id: str) -> str:
    """The task id a session's runs are recorded under."""
    return f"acp-{session_id}"


class History(msgspec.Struct, frozen=True):
    updates: list[Any]
    """What the editor is sent, in order, to show the session as it was."""
    held: FlowReport | None
    """The last run, when its change is held and unanswered."""


def load(repo: Path, state_root: str | None, session_id: str) -> History | None:
    """The session's runs in ``repo``'s store; None when it has none. A store the read
    path refuses raises its ``TidegateError``."""
    from tidegate.store.locate import repository, repository_store
    from tidegate.store.views import listing, run_view

    root, common = repository(str(repo))
    store = repository_store(state_root, root, common)
    if store is None:
        return None
    try:
        rows = [r for r in listing(store, MAX_RUNS) if r["task_id"] == task_id(session_id)]
        views = [run_view(store, r["run_id"]) for r in reversed(rows)]
    finally:
        store.db.close()
    if not rows:
        return None
    updates: list[Any] = []
    held: FlowReport | None = None
    for row, view in zip(reversed(rows), views, strict=True):
        replayed, held = _replay(row, view)
        updates += replayed
    return History(updates, held)


def _replay(row: dict[str, Any], view: dict[str, Any]) -> tuple[list[Any], FlowReport | None]:
    """One run as updates; its report when its change is held and unanswered."""
    run_id = str(row["run_id"])
    out: list[Any] = [acp.update_user_message_text(sanitize(str(row["objective"])))]
    for p in view["phases"]:
        detail = f": {p['detail']}" if p["detail"] else ""
        line = f"[attempt {p['attempt']}] {p['phase']} {p['status']}{detail}\n"
        out.append(_say(line))
    if not view["report"]:
        out.append(_say(f"run {run_id} {row['status']}\n"))
        return out, None
    report = FlowReport.model_validate(view["report"])
    if report.status == "held" and row["landing"] is None:
        out.append(
            acp.start_tool_call(
                f"held-{run_id}",
                f"Apply the verified change of run {run_id}?",
                kind="edit",
                status="pending",
                content=[acp.tool_content(acp.text_block(report.diff))],
                raw_input={"run_id": run_id, "files": [f.path for f in report.changed_files]},
            )
        )
        out.append(
            _say(f"run {run_id} is held, not applied: the next prompt here asks for it again\n")
        )
        return out, report
    landing = f", then {row['landing']}" if row["landing"] else ""
    out.append(_say(f"run {run_id} {report.status}{landing}: {report.message or ''}\n"))
    return out, None


def _say(line: str) -> Any:
    return acp.update_agent_message_text(sanitize(line.rstrip("\n")) + "\n")
