"""``tidegate undo --call ID`` / ``--session ID``: put back what tool calls replaced or
deleted, from the bytes kept in the state root (``tidegate.tools.undo``)."""

from __future__ import annotations

import json
from pathlib import Path

from msgspec.structs import asdict

from tidegate.text.sanitize import sanitize

EXIT_CONFLICT = 3


def undo_tool_calls(
    repo: Path,
    state_root: str | None,
    *,
    call_id: str | None,
    session_id: str | None,
    as_json: bool,
) -> tuple[str, int]:
    """The text (or JSON) to print and the exit code: 0 undone, 3 a conflict (nothing
    changed, ``.rej`` notes written). Usage errors (unknown IDs, a tampered blob, an
    undone call) are raised."""
    from tidegate.store.blobs import ByteStore
    from tidegate.store.state_root import repository_store, resolve_state_root
    from tidegate.tools.undo import undo_calls
    from tidegate.workspace.repo import discover

    found = discover(repo)
    state = resolve_state_root(state_root, found.root, git_dir=found.common_dir)
    store = ByteStore(repository_store(state, found.common_dir, found.root.name))
    report = undo_calls(store, found.root, call_id=call_id, session_id=session_id)
    code = 0 if report.applied else EXIT_CONFLICT
    if as_json:
        data = {
            "session": report.session,
            "calls": report.calls,
            "applied": report.applied,
            "paths": [asdict(o) for o in report.outcomes],
            "rejects": report.rejects,
        }
        return json.dumps(data, indent=2) + "\n", code
    what = f"call {call_id}" if call_id else f"{len(report.calls)} call(s) of {report.session}"
    lines = []
    for outcome in report.outcomes:
        note = f" ({outcome.note})" if outcome.note else ""
        if not report.applied and outcome.action not in ("conflict", "unchanged", "skipped"):
            note += " -- not done: the undo conflicts"
        lines.append(f"  {outcome.action:<9} {outcome.path}{note}")
    if report.applied:
        head = f"undid {what}"
    else:
        head = f"undo of {what} conflicts: nothing changed"
        lines += [f"  wrote {r}" for r in report.rejects]
    return sanitize("\n".join([head, *lines])) + "\n", code


def undo_tool_calls_command(
    repo: Path,
    state_root: str | None,
    call_id: str | None,
    session_id: str | None,
    as_json: bool,
) -> int:
    """``tidegate undo --call/--session``: prints, returns the exit code (``--call`` with
    ``--session`` names a call of that session)."""
    import sys

    from tidegate.errors import UsageError

    if call_id is None and session_id is None:
        raise UsageError("undo: give --call ID or --session ID")
    text, code = undo_tool_calls(
        repo, state_root, call_id=call_id, session_id=session_id, as_json=as_json
    )
    sys.stdout.write(text)
    return code
