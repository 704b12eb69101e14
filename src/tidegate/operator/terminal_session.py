"""Terminal sessions: a bounded local shell on a real PTY, driven by the steps of an
objective, with an audit trail that the run (:mod:`tidegate.operator.terminal`) and
``terminal-read`` render alike.

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
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from tidegate.operator.errors import OperatorError
from tidegate.text.numbers import whole_number

KINDS = ("command", "input", "key", "wait-for", "expect", "timeout")
PROMPT = "tidegate$ "
_LINE = re.compile(r"^([a-z-]+):\s?(.*)$")
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


class Step(msgspec.Struct, frozen=True):
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
        try:
            try:
                term.wait_for(PROMPT)
            except TerminalTimeout as exc:
                failure = f"the shell showed no prompt: {exc}"
            if failure is None:
                failure = _run_steps(term, steps, audit, checkpoints)
            term.settle()
            last_line = _meaningful(term.last_lines())
            failure = _check_expects(term, steps, audit, checkpoints, failure)
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


def _run_steps(
    term: Any, steps: list[Step], audit: list[dict[str, Any]], checkpoints: list[str]
) -> str | None:
    """Send, set and wait step by step, marking each step's audit entry; the first
    failure ends the steps and is returned. ``expect`` steps are left pending."""
    from tidegate.exec.terminal import TerminalTimeout

    step_timeout: float | None = None
    for step, entry in zip(steps, audit, strict=True):
        if step.kind in ("command", "input", "key"):
            try:
                _send(term, step)
            except TerminalTimeout as exc:
                entry["status"] = "unread"
                return f"line {step.number}: {step.kind} {exc}"
            entry["status"] = "sent"
        elif step.kind == "timeout":
            step_timeout = float(step.text)
            entry["status"] = "set"
        elif step.kind == "wait-for":
            try:
                entry["waited_s"] = round(term.wait_for(step.text, step_timeout), 3)
            except TerminalTimeout as exc:
                entry["status"] = "unsatisfied"
                return f"line {step.number}: wait-for {exc}"
            entry["status"] = "satisfied"
            checkpoints.append(step.text)
        else:
            entry["status"] = "pending"
    return None


def _check_expects(
    term: Any,
    steps: list[Step],
    audit: list[dict[str, Any]],
    checkpoints: list[str],
    failure: str | None,
) -> str | None:
    """Each pending ``expect``: met if its text was visible at any time; the session's
    failure (the first unmet expect when nothing failed before)."""
    for step, entry in zip(steps, audit, strict=True):
        if entry["status"] == "pending":
            met = term.seen(step.text)
            entry["status"] = "met" if met else "unmet"
            if met:
                checkpoints.append(step.text)
            elif failure is None:
                failure = f"line {step.number}: expect {step.text!r} was never visible"
    return failure
