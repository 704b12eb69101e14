"""``engineer agent-submit``: drive an agent CLI's interactive flow on a real PTY, exactly
as its checked-in contract says, submit the one fixed payload, and classify what happened.

The flow: launch the contract's argv (contained read-only when bubblewrap works: the agent
may look at the repository but cannot change it); wait for the ordered startup
checkpoints; type the payload, then Enter; wait for the ordered completion checkpoints;
send the exit gesture; kill whatever is left. Every checkpoint is matched on the visible
terminal (the emulated screen or the escape-free stream), never on raw bytes. The first
checkpoint of each phase must be shown after the launch or the submit; each later one after
the one before it, or be on the screen then (a full-screen agent does not redraw a composer
that did not change). A later startup checkpoint shown before an earlier one is drift.

Outcomes:

``success``
    every startup and completion checkpoint was seen, in order;
``unsupported`` (exactly one reason code)
    the agent launched but its visible flow is not one the contract supports (an agent that
    exits during startup failed to start: ``process-exited-early``, and the detail gives
    its exit status and what it said after its last checkpoint):
    ``process-exited-early``, ``trust-confirmation-required``, ``submit-hotkey-required``,
    ``agent-wrapper-error``, ``workflow-wrapper-noise``, ``missing-startup-banner``,
    ``missing-guidance-checkpoint``, ``unexpected-startup-text``;
``runtime-failure``
    tidegate's side failed (the program is missing, the launch failed: the detail says
    ``launch failed:`` and gives the error, contained or not) or the agent showed nothing
    at all before the startup timeout (zero evidence).

Tracked files the agent rewrote are put back to their pre-launch bytes before returning,
and the audit says which.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from tidegate.agents.contracts import AgentContract, Interactive, expand
from tidegate.agents.launch import AgentEndpoint, agent_env, prepare_home
from tidegate.operator.tracked_files import TrackedFiles
from tidegate.text.sanitize import sanitize

REASONS = (
    "process-exited-early",
    "unexpected-startup-text",
    "missing-startup-banner",
    "missing-guidance-checkpoint",
    "trust-confirmation-required",
    "submit-hotkey-required",
    "agent-wrapper-error",
    "workflow-wrapper-noise",
)


class SubmitAudit(msgspec.Struct):
    contract: str
    contract_sha256: str
    payload_id: str
    steps: list[str] = msgspec.field(default_factory=list)
    checkpoints: list[str] = msgspec.field(default_factory=list)
    outcome: str = "runtime-failure"
    reason: str | None = None
    detail: str = ""
    last_output_line: str = ""
    transcript_preview: str = ""
    restored: list[str] = msgspec.field(default_factory=list)
    containment: str = "none"

    def as_dict(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)


class _Stop(Exception):
    def __init__(self, outcome: str, reason: str | None, detail: str) -> None:
        super().__init__(detail)
        self.outcome, self.reason, self.detail = outcome, reason, detail


def contract_digest(contract: AgentContract) -> str:
    raw = contract.model_dump_json(by_alias=True).encode()
    return hashlib.sha256(raw).hexdigest()


def submit(
    contract: AgentContract,
    repo_root: Path,
    *,
    model: str | None = None,
    startup_timeout_s: float = 60.0,
    completion_timeout_s: float = 180.0,
) -> SubmitAudit:
    """Run the interactive flow once in ``repo_root``; never raises for the agent's
    behaviour (that is the outcome), only for tidegate-side bugs."""
    flow = contract.interactive
    audit = SubmitAudit(contract.name, contract_digest(contract), flow.payload.id)
    program = contract.find_program()
    if program is None:
        audit.detail = (
            f"`{contract.program}` is not installed (install it with: {contract.install})"
        )
        return audit
    guard = TrackedFiles(repo_root)
    with tempfile.TemporaryDirectory(prefix=f"tidegate-{contract.name}-home-") as home_dir:
        home = Path(home_dir)
        endpoint = AgentEndpoint.of(contract, model)
        values = {
            "program": program,
            "home": str(home),
            "workdir": str(repo_root),
            "model": endpoint.model,
            "base_url": endpoint.base_url,
            "key_env": contract.model.key_env,
            "task": "",
        }
        prepare_home(contract, home, values)
        env = agent_env(contract, home, values) | {"TERM": "xterm-256color"}
        env.pop("NO_COLOR", None)
        argv = [expand(a, values) for a in flow.argv]
        try:
            _drive(
                contract, argv, env, repo_root, home, audit, startup_timeout_s, completion_timeout_s
            )
        finally:
            audit.restored = guard.restore()
    return audit


def _drive(
    contract: AgentContract,
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    home: Path,
    audit: SubmitAudit,
    startup_timeout_s: float,
    completion_timeout_s: float,
) -> None:
    from tidegate.errors import CapabilityMismatch
    from tidegate.exec.containment import ContainmentPolicy, launch
    from tidegate.exec.guard import Clearance, Origin
    from tidegate.exec.terminal import Terminal, TerminalLimits

    flow = contract.interactive
    # Required: the agent works in the user's real repository, which only containment
    # keeps read-only for it (uncontained, an agent deleted untracked files and unstaged
    # staged work). Without bubblewrap nothing is started.
    policy = ContainmentPolicy(
        required=True,
        network=True,
        writable=(home,),
        readonly_overlays=(cwd,),  # the repository: readable, never writable
        executables=(os.path.realpath(argv[0]),),
    )
    limits = TerminalLimits(deadline_s=startup_timeout_s + completion_timeout_s + 30)
    with contextlib.ExitStack() as stack:
        try:
            sandbox = stack.enter_context(
                launch(policy, cwd, clearance=Clearance(Origin.AGENT), path=env.get("PATH"))
            )
        except CapabilityMismatch as exc:  # nothing was started
            audit.outcome, audit.reason = "runtime-failure", None
            audit.detail = f"{exc}; the agent was not started"
            return
        audit.containment = sandbox.report.backend
        full_env = {**env, **sandbox.env, "HOME": str(home)}
        try:
            term = Terminal(argv, launched=sandbox, cwd=cwd, env=full_env, limits=limits)
        except (OSError, ValueError) as exc:
            audit.detail = f"launch failed: {exc}"
            return
        _converse(term, flow, audit, startup_timeout_s, completion_timeout_s)


def _converse(
    term: Any,
    flow: Interactive,
    audit: SubmitAudit,
    startup_timeout_s: float,
    completion_timeout_s: float,
) -> None:
    """The contract's flow on a started agent: startup, the payload, completion; then,
    however it ended, its screen read, the exit gesture sent and the terminal closed."""
    from tidegate.exec.terminal import TerminalTimeout

    try:
        audit.steps.append("launched")
        _startup(term, flow, audit, startup_timeout_s)
        _submit(term, flow.payload.text)
        audit.steps.append(f"submitted payload {flow.payload.id}")
        _completion(term, flow, audit, completion_timeout_s)
        audit.outcome = "success"
    except _Stop as stop:
        audit.outcome, audit.reason, audit.detail = stop.outcome, stop.reason, stop.detail
    finally:
        screen = term.screen_lines()  # an agent's TUI is read from its screen
        audit.last_output_line = _last_meaningful(screen, flow)
        audit.transcript_preview = "\n".join(screen)[-2000:]
        for key in flow.exit:
            with contextlib.suppress(TerminalTimeout):  # an agent that reads no more
                term.send_key(key, 1.0)
            term.settle(0.2, 1.0)
        audit.steps.append("exit gesture sent")
        term.wait_exit(5.0)
        term.close()


def _submit(term: Any, payload: str) -> None:
    """Type the payload, let the agent take it in, press Enter."""
    from tidegate.exec.terminal import TerminalTimeout

    try:
        term.send(payload)
        term.settle(0.3, 3.0)
        term.send("\r")
    except TerminalTimeout as exc:
        raise _Stop(
            "unsupported", "missing-guidance-checkpoint", f"the agent stalled: {exc}"
        ) from exc


def _said(term: Any, flow: Any) -> str:
    """The agent's own last words, sanitised: its last lines that are not checkpoint text,
    so an error is reported whether it came after its banner or before it."""
    chrome = (*flow.startup, *flow.completion)
    own = [ln for ln in term.last_lines(200) if not any(c in ln for c in chrome)]
    text = " | ".join(own[-5:])
    return text if len(text) <= 600 else "..." + text[-600:]


def _ending(term: Any, flow: Any) -> str:
    said = _said(term, flow)
    return f"{term.exit_description()}; " + (f"it said: {said}" if said else "it said nothing")


def _last_meaningful(screen: list[str], flow: Any) -> str:
    """The last screen line that is not the agent's own prompt or hint chrome."""
    chrome = {*flow.startup, *flow.completion}
    for line in reversed(screen):
        text = line.strip()
        if text and not any(c in text for c in chrome) and "shortcuts" not in text:
            return text
    return screen[-1].strip() if screen else ""


def _blocked(term: Any, flow: Any) -> _Stop | None:
    """A visible sign that the flow cannot go on as the contract says."""
    for texts, reason in (
        (flow.trust, "trust-confirmation-required"),
        (flow.submit_hotkey, "submit-hotkey-required"),
        (flow.wrapper_errors, "agent-wrapper-error"),
        (flow.noise, "workflow-wrapper-noise"),
    ):
        for text in texts:
            if term.seen(text):
                return _Stop("unsupported", reason, f"the agent showed: {_line_with(term, text)}")
    return None


def _line_with(term: Any, text: str) -> str:
    """The whole (sanitised) line that shows ``text``: the agent's own message, not only
    the contract's marker for it."""
    lines = [*term.last_lines(200), *term.screen_lines()]
    line = next((ln.strip() for ln in reversed(lines) if text in ln), sanitize(text))
    return line if len(line) <= 600 else line[:600] + "..."


def _startup(term: Any, flow: Any, audit: SubmitAudit, timeout_s: float) -> None:
    from tidegate.exec.terminal import TerminalTimeout

    for index, checkpoint in enumerate(flow.startup):
        try:
            _wait(term, flow, checkpoint, timeout_s, shown=index > 0)
        except TerminalTimeout as exc:
            raise _classify_startup(term, flow, index, exc, audit) from exc
        early = [c for c in flow.startup[index + 1 :] if c in term.before]
        if early:
            raise _Stop(
                "unsupported", "unexpected-startup-text",
                f"{early[0]!r} appeared before {checkpoint!r}: the flow drifted",
            )  # fmt: skip
        audit.checkpoints.append(checkpoint)
        audit.steps.append(f"startup checkpoint {index + 1}/{len(flow.startup)}")


def _wait(term: Any, flow: Any, text: str, timeout_s: float, *, shown: bool) -> None:
    """Wait for ``text`` in slices, checking for blocking signs between them; ``shown``:
    the screen as it is now may show it (see ``Terminal.wait_for``)."""
    from tidegate.exec.terminal import TerminalTimeout

    waited = 0.0
    while True:
        if (blocked := _blocked(term, flow)) is not None:
            raise blocked
        try:
            term.wait_for(text, min(0.5, timeout_s - waited), shown=shown)
            return
        except TerminalTimeout as exc:
            waited += 0.5
            if exc.exited or exc.which == "deadline" or waited >= timeout_s:
                if (blocked := _blocked(term, flow)) is not None:
                    raise blocked from exc
                raise


def _classify_startup(term: Any, flow: Any, index: int, exc: Any, audit: SubmitAudit) -> _Stop:
    if exc.exited:
        shown = term.last_lines(200)
        first = shown[0] if shown else ""
        if index == 0 and audit.containment == "bubblewrap" and first.startswith("bwrap: "):
            # The sandbox started, the agent did not: bubblewrap could not run it.
            audit.steps[audit.steps.index("launched")] = "launch failed"
            return _Stop("runtime-failure", None, f"launch failed: {first}")
        return _Stop(
            "unsupported", "process-exited-early",
            f"the agent failed to start: before {flow.startup[index]!r}, {_ending(term, flow)}",
        )  # fmt: skip
    if term.bytes_read == 0 or (not term.preview().strip() and not term.screen_text().strip()):
        return _Stop("runtime-failure", None, "the agent showed nothing before the startup timeout")
    later = [c for c in flow.startup[index + 1 :] if term.seen(c)]
    if later:
        return _Stop(
            "unsupported", "unexpected-startup-text",
            f"{later[0]!r} appeared before {flow.startup[index]!r}: the flow drifted",
        )  # fmt: skip
    if index == 0:
        return _Stop("unsupported", "missing-startup-banner", f"no {flow.startup[0]!r}")
    return _Stop("unsupported", "missing-guidance-checkpoint", f"no {flow.startup[index]!r}")


def _completion(term: Any, flow: Any, audit: SubmitAudit, timeout_s: float) -> None:
    from tidegate.exec.terminal import TerminalTimeout

    for index, checkpoint in enumerate(flow.completion):
        try:
            _wait(term, flow, checkpoint, timeout_s, shown=index > 0)
        except TerminalTimeout as exc:
            if exc.exited:
                raise _Stop(
                    "unsupported", "process-exited-early",
                    f"the agent exited mid-turn: {_ending(term, flow)}",
                ) from exc  # fmt: skip
            raise _Stop(
                "unsupported", "missing-guidance-checkpoint",
                f"after the submit, {checkpoint!r} never appeared",
            ) from exc  # fmt: skip
        audit.checkpoints.append(checkpoint)
        audit.steps.append(f"completion checkpoint {index + 1}/{len(flow.completion)}")
