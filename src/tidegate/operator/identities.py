"""Identities, base types and topologies: the data that says which operator modes may run
on which backend. Nothing here branches on an identity's name; a command asks
:func:`select` and gets back a :class:`Selection` or one :class:`OperatorError` line that
names the accepted values.

An identity is a role profile: the modes it may run, its tool subset and its prompt
modules. A base type is a backend; its *implementation* is what actually serves it, and is
what every record and rendering reports (reflection: nothing claims a backend that did not
run).
"""

from __future__ import annotations

import msgspec

from tidegate.operator.errors import OperatorError

_READ_TOOLS = (
    "workspace.read",
    "workspace.list",
    "workspace.glob",
    "workspace.grep",
    "git.exec",
    "project.detect",
    "plan.note",
)


class Identity(msgspec.Struct, frozen=True):
    name: str
    modes: tuple[str, ...]
    base_types: tuple[str, ...]
    tools: tuple[str, ...]
    prompt_modules: tuple[str, ...]


class BaseType(msgspec.Struct, frozen=True):
    name: str
    implementation: str
    """What serves it; a model base type adds the endpoint host at selection time."""
    needs_model: bool = False


_MODEL_BASES = ("local-harness", "openai", "anthropic")

IDENTITIES: dict[str, Identity] = {
    i.name: i
    for i in (
        Identity(
            "engineer",
            ("engineer", "terminal", "review"),
            (*_MODEL_BASES, "terminal-shell"),
            (*_READ_TOOLS, "workspace.write", "workspace.edit", "command.run"),
            ("identity", "workspace", "editing", "verification"),
        ),
        Identity("meeting", ("meeting",), _MODEL_BASES, (), ("identity", "meeting")),
        Identity("goal-curator", ("goal-curation",), _MODEL_BASES, (), ("identity", "goals")),
        Identity(
            "improvement-curator",
            ("improvement-curation", "review"),
            _MODEL_BASES,
            _READ_TOOLS,
            ("identity", "review", "improvement"),
        ),
        Identity("gym", ("gym",), _MODEL_BASES, _READ_TOOLS, ("identity", "gym")),
        Identity(
            "composite-engineer",
            ("review", "improvement-curation", "engineer", "meeting", "goal-curation"),
            _MODEL_BASES,
            (*_READ_TOOLS, "workspace.write", "workspace.edit", "command.run"),
            ("identity", "workspace", "editing", "verification", "review", "improvement"),
        ),
    )
}

BASE_TYPES: dict[str, BaseType] = {
    b.name: b
    for b in (
        BaseType("local-harness", "local-harness::structured-planner"),
        BaseType("openai", "openai::openai-sdk", needs_model=True),
        BaseType("anthropic", "anthropic::anthropic-sdk", needs_model=True),
        BaseType("terminal-shell", "terminal-shell::local-pty"),
    )
}

TOPOLOGIES = ("single-process", "ray")
"""``ray`` is accepted only by the gym, the one mode that scales out."""


class Selection(msgspec.Struct, frozen=True):
    identity: Identity
    base_type: BaseType
    topology: str

    def as_dict(self, implementation: str | None = None) -> dict[str, str]:
        return {
            "identity": self.identity.name,
            "base_type": self.base_type.name,
            "implementation": implementation or self.base_type.implementation,
            "topology": self.topology,
        }


def _one_of(what: str, value: str, accepted: tuple[str, ...] | list[str]) -> OperatorError:
    return OperatorError(f"unknown {what} {value!r}; accepted: {', '.join(accepted)}")


def select(identity: str, base_type: str, topology: str, mode: str) -> Selection:
    """The selection for ``mode``, or an error naming the accepted values. Checked before
    anything is read or written."""
    ident = IDENTITIES.get(identity)
    if ident is None:
        raise _one_of("identity", identity, list(IDENTITIES))
    base = BASE_TYPES.get(base_type)
    if base is None:
        raise _one_of("base type", base_type, list(BASE_TYPES))
    if topology not in TOPOLOGIES:
        raise _one_of("topology", topology, TOPOLOGIES)
    if mode not in ident.modes:
        raise OperatorError(
            f"identity {identity!r} does not run {mode} mode; it runs: {', '.join(ident.modes)}"
        )
    if base_type not in ident.base_types:
        raise OperatorError(
            f"identity {identity!r} does not accept base type {base_type!r}; "
            f"accepted: {', '.join(ident.base_types)}"
        )
    if mode != "terminal" and base_type == "terminal-shell":
        raise OperatorError(
            f"base type 'terminal-shell' serves terminal sessions only, not {mode} mode; "
            f"accepted for {mode}: {', '.join(b for b in ident.base_types if b != 'terminal-shell')}"
        )
    if topology == "ray" and mode != "gym":
        raise OperatorError(f"topology 'ray' is for the gym only; {mode} runs: single-process")
    return Selection(ident, base, topology)
