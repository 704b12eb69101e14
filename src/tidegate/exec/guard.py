"""The one guard: whose command this is, and whether it may run outside containment.

Every process tidegate starts on someone's behalf starts through
``tidegate.exec.containment.launch``, and ``launch`` asks :func:`admit` whenever the
command would run uncontained (containment off, or bubblewrap missing or failing its
probe). The answer depends on who chose the command or wrote the code it runs:

==============================  =========================================================
the command would run ...       outcome
==============================  =========================================================
contained (bubblewrap works)    it runs, whoever chose it
uncontained, origin ``user``    it runs; the report says it ran uncontained
uncontained, approved           it runs; the report names who approved it
uncontained, anyone else        :class:`GuardRefused`: nothing is spawned
==============================  =========================================================

``user`` means the person running tidegate chose both the command line and the code it
runs: their own ``--verify`` on a change their own planner file proposed, their own
terminal objective. A model, an agent CLI, an MCP client, a repository's files (a task
ledger's commands) and a benchmark instance are never ``user``: their commands run
uncontained only with an approval, and an approval is the user's own act -- an answer at
an approval prompt, ``--containment none`` on the command line, ``--allow-uncontained``
for a gym suite. A repository's configuration never approves anything (it may tighten
containment, never loosen it: ``tidegate.config``).

The decision is a pure function of its inputs; ``launch`` applies it, and the
architecture test (``tests/architecture``) keeps every process start inside
``tidegate.exec`` and the git wrapper, so there is no second path around it.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from tidegate.errors import CapabilityMismatch


class Origin(StrEnum):
    """Who chose a command, or wrote the code it runs (the least trusted of the two)."""

    USER = "user"
    MODEL = "model"
    AGENT = "agent"
    MCP_CLIENT = "mcp-client"
    REPOSITORY = "repository"
    BENCHMARK = "benchmark"


_DESCRIBED = {
    Origin.USER: "your own command",
    Origin.MODEL: "a model's command or code",
    Origin.AGENT: "an agent CLI",
    Origin.MCP_CLIENT: "an MCP client's command or code",
    Origin.REPOSITORY: "a command from the repository's files",
    Origin.BENCHMARK: "a benchmark instance's code and tests",
}


def least_trusted(*origins: Origin) -> Origin:
    """``USER`` only when every origin is the user; else the first one that is not."""
    return next((o for o in origins if o is not Origin.USER), Origin.USER)


class Clearance(msgspec.Struct, frozen=True):
    """What the guard needs to know about one command: its origin, and who (if anyone)
    approved running it outside containment."""

    origin: Origin
    approved_by: str | None = None
    """The user's act that approved running it uncontained (``"--containment none"``, an
    approval prompt's answer); None: nobody did."""

    @classmethod
    def user(cls) -> Clearance:
        return cls(Origin.USER)

    def describe(self) -> str:
        return _DESCRIBED[self.origin]


class GuardRefused(CapabilityMismatch):
    """A command that is not the user's would have run uncontained without approval;
    nothing was spawned."""

    def __init__(self, clearance: Clearance, why_uncontained: str) -> None:
        super().__init__(
            f"refused to run {clearance.describe()} uncontained ({why_uncontained}) without "
            "your approval; nothing was run. Install bubblewrap so it runs contained, or "
            "approve running it on your machine (--containment none, or an approval prompt)"
        )
        self.clearance = clearance
        self.why_uncontained = why_uncontained


def admit(clearance: Clearance, why_uncontained: str) -> str:
    """The reason to put in the report for a command that will run uncontained (why, and
    on whose word), or GuardRefused when it may not run that way."""
    if clearance.origin is Origin.USER:
        return why_uncontained
    if clearance.approved_by:
        return f"{why_uncontained}; {clearance.describe()}, approved by {clearance.approved_by}"
    raise GuardRefused(clearance, why_uncontained)


_STATE_ROOTS: set[str] = set()


def hide_state_root(path: str) -> None:
    """Hide a state root this process uses from every command it contains, however the
    root was named (``--state-root``, ``$TIDEGATE_STATE_ROOT``, the default): it holds the
    run records and the key that signs them. Called by the state-root resolvers."""
    _STATE_ROOTS.add(path)


def hidden_state_roots() -> frozenset[str]:
    return frozenset(_STATE_ROOTS)
