"""``change_propose`` over MCP: tidegate as the safe edit engine of another agent.

The client sends a unified diff or SEARCH/REPLACE blocks (and optionally a verify command);
tidegate runs its guarded transaction on the workspace repository with one attempt: T0
snapshot, shadow worktree, VALIDATE and AST_VALIDATE, APPLY, VERIFY, then the three-way
apply-back as unstaged edits (or, on a conflict, nothing and ``.rej`` files). The answer is
the report: status, per-file hashes, the verify result, the feedback when it failed, the
reject paths on a conflict. It is refused in review mode (which never writes) and asks for
approval under the ``strict`` profile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from tidegate.mcp.annotations import Traits

NAME = "change_propose"
DESCRIPTION = (
    "Propose a change to the workspace repository: a unified diff (`diff`) or SEARCH/REPLACE "
    "blocks (`search_replace`), and optionally a `verify` shell command (run via /bin/sh -c in "
    "a shadow worktree; exit 0 means verified). tidegate validates it, verifies it in a shadow "
    "worktree and merges it into the work tree as unstaged edits (never the index); with "
    "`hold` it keeps the verified change for the user to review and apply instead. One attempt."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "diff": {"type": "string", "description": "A unified diff, as git diff writes it."},
        "search_replace": {"type": "string", "description": "SEARCH/REPLACE edit blocks."},
        "verify": {"type": "string", "description": "A verification command."},
        "summary": {"type": "string", "description": "What the change is for (one line)."},
        "hold": {
            "type": "boolean",
            "description": "Verify, then hold the change instead of merging it: the user "
            "reviews it (`tidegate diff RUN`) and lands it (`tidegate apply RUN`) or drops it.",
        },
    },
    "additionalProperties": False,
}
_MAX_CHARS = 5 * 1024 * 1024
TRAITS = Traits(writes=True, keeps_state=True, runs_code=True, networked=False)
"""It merges into the work tree, records a run and runs the client's verify command."""


class ChangeTool(msgspec.Struct, frozen=True):
    workspace: Path
    state_root: str | None
    mode: str
    approval: str

    def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The report as JSON data; refusals are ``{"ok": false, "error": ...}``."""
        problem = self._refusal(arguments)
        if problem is not None:
            return {"ok": False, "status": "refused", "error": problem}
        try:
            report = self._run(arguments)
        except Exception as exc:  # a usage error of the engine: one line back to the client
            from tidegate.errors import TidegateError

            if not isinstance(exc, TidegateError):
                raise
            return {"ok": False, "status": "refused", "error": str(exc)}
        return {"ok": report.status in ("succeeded", "held"), **_summary(report)}

    def _refusal(self, arguments: dict[str, Any]) -> str | None:
        if self.mode == "review":
            return "change_propose writes the work tree; this session is in review mode"
        if self.approval == "strict":
            return "change_propose needs approval under the strict profile (nobody can grant it over stdio)"
        unknown = set(arguments) - set(SCHEMA["properties"])
        if unknown:
            return f"unknown argument(s): {', '.join(sorted(unknown))}"
        if not isinstance(arguments.get("hold", False), bool):
            return "hold must be a boolean"
        for key in SCHEMA["properties"]:
            if key == "hold":
                continue
            value = arguments.get(key)
            if value is not None and not isinstance(value, str):
                return f"{key} must be a string"
            if isinstance(value, str) and (len(value) > _MAX_CHARS or "\x00" in value):
                return f"{key} is too long or holds a NUL byte"
        given = [k for k in ("diff", "search_replace") if arguments.get(k)]
        if len(given) != 1:
            return "give exactly one of diff and search_replace"
        return None

    def _run(self, arguments: dict[str, Any]) -> Any:
        from tidegate.flow.transaction import execute
        from tidegate.planners.given import GivenProposalPlanner
        from tidegate.records.modes import Mode
        from tidegate.records.proposal import Proposal
        from tidegate.records.request import RunRequest
        from tidegate.store import StoreRecorder, open_run_store

        proposal = Proposal(
            diff=arguments.get("diff"), search_replace=arguments.get("search_replace")
        )
        summary = (arguments.get("summary") or "the change the client proposed").strip()[:200]
        request = RunRequest(
            repo=self.workspace,
            mode=Mode.PATCH,
            objective=summary,
            verify=arguments.get("verify"),
            planner="given",
            max_attempts=1,
            hold=bool(arguments.get("hold", False)),
            # the client chose the change and the command: contained, or refused
            origin="mcp-client",
        )
        store = open_run_store(request.repo, self.state_root)
        try:
            planner = GivenProposalPlanner(proposal, summary)
            return execute(request, planner=planner, recorder=StoreRecorder(store))
        finally:
            store.close()


def _summary(report: Any) -> dict[str, Any]:
    data = report.model_dump(mode="json")
    keep = (
        "status", "run_id", "failure_phase", "error_class", "message", "diff_sha256",
        "changed_files", "applied_files", "rejects", "rejects_dir", "feedback", "verify",
        "containment", "notes",
    )  # fmt: skip
    out = {k: data.get(k) for k in keep}
    if data.get("status") == "held":
        out["diff"] = data.get("diff")  # for the client to show; the user applies it
    return out
