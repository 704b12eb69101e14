"""Terminal sessions: a bounded local shell on a real PTY, driven by the steps of an
objective, with an audit trail that the run and ``terminal-read`` render alike.

Objective lines (blank lines and ``#`` comments are ignored; anything else is refused by
number)::

    command: ls -la          # a line typed at the shell prompt
    input: yes               # a line typed to the program that is running
    key: ctrl-c              # a named key (ctrl-c, ctrl-d, ctrl-s, enter, escape)
    wait-for: total          # block until this text is visible (per-step timeout)
    expect: README           # must have been visible by the end of the session
    timeout: 60              # seconds each later wait may take (default 15, at most 600)

The whole objective is checked before anything runs (a bad line is refused by number and
no step runs). A ``wait-for`` is satisfied only by output that arrives after the step
before it: after the last line or key sent, or after the previous ``wait-for``'s match;
text already on the screen (an old prompt, the first of two identical lines) does not
count. An ``expect`` may have been visible at any time in the session. An unsatisfied
``wait-for``, or input the program does not read, fails the session there: the steps
after it are not run. The shell is ``bash --noprofile --norc --noediting -i`` (else
``sh -i``) with the PTY's echo off, so the transcript holds what programs printed rather
than the typed lines; it gets a private HOME and TMPDIR and a minimal environment (no
provider keys). Its transcript file, previews and last lines pass through
``tidegate.text.sanitize`` before they are written. A terminal session is the operator's own
commands, run uncontained like a terminal they opened; agents that a model drives run
contained (``tidegate run --agent``).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from tidegate.text.numbers import whole_number

KINDS = ("command", "input", "key", "wait-for", "expect", "timeout")
TRANSCRIPTS_DIR = "terminal_transcripts"
PROMPT = "tidegate$ "
_LINE = re.compile(r"^([a-z-]+):\s?(.*)$")
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
NEXT_STEP = (
    "terminal mode is a bounded local session: it changed no repository on tidegate's "
    "behalf; to change one, run `tidegate engineer run TOPOLOGY WORKSPACE_ROOT OBJECTIVE` "
    "explicitly"
)


@dataclass(frozen=True)
class Step:
    number: int
    kind: str
    text: str


def parse_steps(text: str) -> list[Step]:
    """Every step of ``text``, checked whole before anything runs: OperatorError (a usage
    error, exit 2) naming the first bad line."""
    steps = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        match = _LINE.match(raw.strip())
        if match is None or match.group(1) not in KINDS:
            raise OperatorError(f"objective line {number}: expected one of {', '.join(KINDS)}")
        kind, value = match.group(1), match.group(2)
        if not value.strip() and kind != "input":
            raise OperatorError(f"objective line {number}: {kind}: needs text")
        if "\x00" in value or "\r" in value:
            raise OperatorError(f"objective line {number}: control characters are not allowed")
        if kind == "timeout" and whole_number(value.strip(), 1, 600) is None:
            raise OperatorError(f"objective line {number}: timeout takes whole seconds, 1 to 600")
        if kind == "key":
            from tidegate.exec.terminal import KEYS

            if value.strip() not in KEYS:
                raise OperatorError(
                    f"objective line {number}: unknown key {value.strip()!r}; "
                    f"known: {', '.join(KEYS)}"
                )
        steps.append(Step(number, kind, value))
    if not any(s.kind == "command" for s in steps):
        raise OperatorError("a terminal objective needs at least one command: line")
    return steps


def _meaningful(lines: list[str]) -> str:
    """The last line a program printed: the prompt and the shell's own exit echo left out."""
    for line in reversed(lines):
        text = line.removeprefix(PROMPT).strip()
        while text.startswith(PROMPT.strip()):
            text = text.removeprefix(PROMPT.strip()).strip()
        if text and text != "exit":
            return text
    return ""


def shell_argv() -> list[str]:
    bash = shutil.which("bash", path="/usr/bin:/bin")
    if bash:
        return [bash, "--noprofile", "--norc", "--noediting", "-i"]
    return ["/bin/sh", "-i"]


def _env(home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    # Agent programs are found where their contracts find them (the agent recipes probe them).
    extra = os.environ.get("TIDEGATE_AGENT_PATH", "")
    if extra:
        env["PATH"] = f"{extra}:{env['PATH']}"
    env.setdefault("LANG", "C.UTF-8")
    env.update(HOME=str(home), TMPDIR=str(home), TERM="xterm-256color", PS1=PROMPT, PS2="")
    return env


def _send(term: Any, step: Step) -> None:
    if step.kind == "key":
        term.send_key(step.text.strip())
    else:
        term.send_line(step.text)


def drive(steps: list[Step], cwd: Path, spill: Path, limits: Any = None) -> dict[str, Any]:
    """Run ``steps`` in a fresh shell on a PTY; the audit of what happened."""
    from tidegate.exec.containment import host_launch
    from tidegate.exec.guard import Clearance
    from tidegate.exec.terminal import Terminal, TerminalTimeout

    argv = shell_argv()
    audit: list[dict[str, Any]] = [
        {"n": s.number, "kind": s.kind, "text": s.text, "status": "not-reached"} for s in steps
    ]
    checkpoints: list[str] = []
    failure = None
    with tempfile.TemporaryDirectory(prefix="tidegate-term-") as home:
        # the user's own terminal objective, in a shell on their machine, as they would type it
        launched = host_launch(Clearance.user())
        term = Terminal(
            argv,
            launched=launched,
            cwd=cwd,
            env=_env(Path(home)),
            limits=limits,
            spill=spill,
            echo=False,
        )
        last_line = ""
        exit_status = None
        step_timeout: float | None = None
        try:
            try:
                term.wait_for(PROMPT)
            except TerminalTimeout as exc:
                failure = f"the shell showed no prompt: {exc}"
            for step, entry in zip(steps, audit, strict=True):
                if failure is not None:
                    break
                if step.kind in ("command", "input", "key"):
                    try:
                        _send(term, step)
                    except TerminalTimeout as exc:
                        entry["status"] = "unread"
                        failure = f"line {step.number}: {step.kind} {exc}"
                        break
                    entry["status"] = "sent"
                elif step.kind == "timeout":
                    step_timeout = float(step.text)
                    entry["status"] = "set"
                elif step.kind == "wait-for":
                    try:
                        entry["waited_s"] = round(term.wait_for(step.text, step_timeout), 3)
                    except TerminalTimeout as exc:
                        entry["status"] = "unsatisfied"
                        failure = f"line {step.number}: wait-for {exc}"
                        break
                    entry["status"] = "satisfied"
                    checkpoints.append(step.text)
                else:
                    entry["status"] = "pending"
            term.settle()
            last_line = _meaningful(term.last_lines())
            for step, entry in zip(steps, audit, strict=True):
                if entry["status"] == "pending":
                    met = term.seen(step.text)
                    entry["status"] = "met" if met else "unmet"
                    if met:
                        checkpoints.append(step.text)
                    elif failure is None:
                        failure = f"line {step.number}: expect {step.text!r} was never visible"
            if not term.exited():
                with contextlib.suppress(TerminalTimeout):  # a shell that reads no more
                    term.send_line("exit")
            exit_status = term.wait_exit(2.0)
        finally:
            term.close()
    return {
        "shell": {
            "argv": argv,
            "cwd": str(cwd),
            "home": "private temporary directory",
            "size": f"{term.limits.cols}x{term.limits.rows}",
            "echo": "off",
        },
        "counts": {k: sum(1 for s in steps if s.kind == k) for k in KINDS},
        "steps": audit,
        "checkpoints": checkpoints,
        "last_output_line": last_line,
        "transcript_preview": term.preview(),
        "transcript_bytes": term.bytes_read,
        "shell_exit": exit_status,
        "outcome": "success" if failure is None else "failed",
        "failure": failure,
    }


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
    memory = [
        memory_record(
            "terminal",
            "terminal-session",
            "terminal-session",
            {"outcome": audit["outcome"], "recipe": recipe, "steps": len(steps)},
            source,
        )
    ]
    evidence = [
        evidence_record(
            "terminal", "terminal-step", f"line {s['n']} {s['kind']}: {s['status']}", source
        )
        for s in audit["steps"]
    ] + [evidence_record("terminal", "terminal-outcome", audit["failure"] or "success", source)]
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
        "shell": audit["shell"],
        "counts": audit["counts"],
        "steps": audit["steps"],
        "checkpoints": audit["checkpoints"],
        "last_output_line": audit["last_output_line"],
        "transcript_preview": audit["transcript_preview"],
        "outcome": audit["outcome"],
        "failure": audit["failure"],
        "next_step": NEXT_STEP,
        "records": {"handoff": "latest_terminal_handoff.json", "transcript_file": spill.name},
    }


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
            "cwd": str(repo.root),
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
                    "working_directory": str(repo.root),
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
    return {"selection": selection.as_dict(), "agent": contract.name, **summary}
