"""Terminal mode's operator runs: ``terminal run`` (the objective's steps in a local shell,
:mod:`tidegate.operator.terminal_session`) and ``engineer agent-submit`` (an agent
contract's interactive flow, :mod:`tidegate.operator.agent_submit`), each with its memory
and evidence records and the terminal handoff."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.operator.errors import OperatorError
from tidegate.operator.handoff import objective_metadata, write_handoff
from tidegate.operator.identities import Selection
from tidegate.operator.records import (
    EVIDENCE_FILE,
    MEMORY_FILE,
    append_records,
    evidence_record,
    make_record_dir,
    memory_record,
    now_ms,
)
from tidegate.operator.terminal_session import drive, parse_steps

if TYPE_CHECKING:
    from tidegate.agents.contracts import AgentContract
    from tidegate.operator.agent_submit import SubmitAudit

TRANSCRIPTS_DIR = "terminal_transcripts"
NEXT_STEP = (
    "terminal mode is a bounded local session: it changed no repository on tidegate's "
    "behalf; to change one, run `tidegate engineer run TOPOLOGY WORKSPACE_ROOT OBJECTIVE` "
    "explicitly"
)


_VIEWED = (
    "shell",
    "counts",
    "steps",
    "checkpoints",
    "last_output_line",
    "transcript_preview",
    "outcome",
    "failure",
)
"""The parts of a session's audit its view shows, in order."""


def terminal_run(
    selection: Selection,
    objective: str,
    root: Path,
    *,
    cwd: Path,
    recipe: str | None = None,
) -> dict[str, Any]:
    steps = parse_steps(objective)
    if not cwd.is_dir():
        raise OperatorError(f"--cwd {cwd}: not a directory")
    transcripts = root / TRANSCRIPTS_DIR
    make_record_dir(root, TRANSCRIPTS_DIR)
    spill = transcripts / f"{now_ms()}-{secrets.token_hex(4)}.log"  # created new, never reused
    audit = drive(steps, cwd.resolve(), spill)
    source = f"terminal::{selection.base_type.implementation}"
    sel = selection.as_dict()
    summary = {
        "recipe": recipe,
        "working_directory": str(cwd.resolve()),
        "transcript_file": spill.name,
        **audit,
        "next_step": NEXT_STEP,
    }
    memory, evidence = _session_records(audit, recipe, len(steps), source)
    append_records(root, MEMORY_FILE, "memory", memory)
    append_records(root, EVIDENCE_FILE, "evidence", evidence)
    write_handoff(
        root,
        "terminal",
        {
            "selection": sel,
            "session_phase": "complete" if audit["outcome"] == "success" else "failed",
            "objective_metadata": objective_metadata(objective),
            "memory": memory,
            "evidence": evidence,
            "summary": summary,
        },
    )
    return {
        "selection": sel,
        "objective": objective_metadata(objective),
        **{k: summary[k] for k in ("recipe", "working_directory")},
        **{k: audit[k] for k in _VIEWED},
        "next_step": NEXT_STEP,
        "records": {"handoff": "latest_terminal_handoff.json", "transcript_file": spill.name},
    }


def _session_records(
    audit: dict[str, Any], recipe: str | None, steps: int, source: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A terminal session's memory record and its evidence: each step, then the outcome."""
    memory = [
        memory_record(
            "terminal",
            "terminal-session",
            "terminal-session",
            {"outcome": audit["outcome"], "recipe": recipe, "steps": steps},
            source,
        )
    ]
    evidence = [
        evidence_record(
            "terminal", "terminal-step", f"line {s['n']} {s['kind']}: {s['status']}", source
        )
        for s in audit["steps"]
    ] + [evidence_record("terminal", "terminal-outcome", audit["failure"] or "success", source)]
    return memory, evidence


def agent_submit_run(
    selection: Selection, agent: str, root: Path, *, cwd: Path, model: str | None = None
) -> dict[str, Any]:
    """``engineer agent-submit``: the contract's interactive flow, audited and persisted.
    A handoff is written for ``success`` and ``unsupported`` (truthful terminal evidence);
    a ``runtime-failure`` leaves its evidence records but no submit summary."""
    from tidegate.agents.contracts import load_contract
    from tidegate.operator.agent_submit import submit
    from tidegate.workspace.repo import discover

    contract = load_contract(agent)
    repo = discover(cwd)
    audit = submit(contract, repo.root, model=model)
    source = f"terminal::{selection.base_type.implementation}"
    summary = {
        "flow_asset": f"agents/contracts/{contract.name}.json",
        "flow_sha256": audit.contract_sha256,
        "payload_id": audit.payload_id,
        "outcome": audit.outcome,
        "reason": audit.reason,
        "detail": audit.detail,
        "steps": audit.steps,
        "checkpoints": audit.checkpoints,
        "last_output_line": audit.last_output_line,
        "transcript_preview": audit.transcript_preview,
        "restored_files": audit.restored,
        "containment": audit.containment,
    }
    evidence = [
        evidence_record(
            "terminal",
            "agent-submit",
            f"{contract.name}: {audit.outcome}" + (f" ({audit.reason})" if audit.reason else ""),
            source,
        )
    ]
    append_records(root, EVIDENCE_FILE, "evidence", evidence)
    if audit.outcome != "runtime-failure":
        _submit_handoff(root, selection, contract, repo.root, audit, evidence, summary, source)
    return {"selection": selection.as_dict(), "agent": contract.name, **summary}


def _submit_handoff(
    root: Path,
    selection: Selection,
    contract: AgentContract,
    repo_root: Path,
    audit: SubmitAudit,
    evidence: list[dict[str, Any]],
    summary: dict[str, Any],
    source: str,
) -> None:
    """The memory record and the terminal handoff of a submit that ran (``success`` or
    ``unsupported``)."""
    memory = [
        memory_record(
            "terminal",
            "agent-submit",
            "agent-submit",
            {"agent": contract.name, "outcome": audit.outcome, "reason": audit.reason},
            source,
        )
    ]
    append_records(root, MEMORY_FILE, "memory", memory)
    shell = {
        "argv": [contract.program, "(contract interactive argv)"],
        "cwd": str(repo_root),
        "home": "private temporary directory",
        "size": "120x40",
        "echo": "on",
    }
    write_handoff(
        root,
        "terminal",
        {
            "selection": selection.as_dict(),
            "session_phase": audit.outcome,
            "objective_metadata": objective_metadata(""),
            "memory": memory,
            "evidence": evidence,
            "summary": {
                "recipe": None,
                "working_directory": str(repo_root),
                "shell": shell,
                "counts": {"checkpoints": len(audit.checkpoints)},
                "steps": [
                    {"n": i + 1, "kind": "agent", "text": s, "status": "done"}
                    for i, s in enumerate(audit.steps)
                ],
                "checkpoints": audit.checkpoints,
                "last_output_line": audit.last_output_line,
                "transcript_preview": audit.transcript_preview,
                "outcome": audit.outcome,
                "failure": audit.detail or None,
                "agent": summary,
                "next_step": NEXT_STEP,
            },
        },
    )
