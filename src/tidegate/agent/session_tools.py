"""The tools a session shows the model: the executor's active tools its phase allows
(:func:`tidegate.agent.session_options.phase_tools`), then its own session tools, each
with the spec the model reads. Rebuilt only when the active set changes: rendering a
tool's JSON schema is not cheap."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from tidegate.agent.guards import Decision
from tidegate.agent.session_options import phase_tools
from tidegate.models.messages import ToolSpec as ModelToolSpec
from tidegate.tools.calls import ToolResult as HostResult
from tidegate.tools.catalog import ToolDefinition
from tidegate.tools.executor import ToolExecutor


class SessionToolRun(msgspec.Struct, frozen=True):
    """What a session tool's call produced: the result the model sees and, when the call
    must end the round (a shared budget spent by a sub-agent), the decision that does."""

    result: HostResult
    halt: Decision | None = None


class PhaseTools:
    """The tool set a session in ``phase`` shows, beside its own tools (``own``)."""

    def __init__(self, executor: ToolExecutor, phase: str, own: Sequence[ToolDefinition]) -> None:
        self._executor = executor
        self._phase = phase
        self._own = list(own)
        self._active: tuple[str, ...] | None = None
        self._definitions: list[ToolDefinition] = []
        self._specs: tuple[ModelToolSpec, ...] = ()

    def definitions(self) -> list[ToolDefinition]:
        """The active tools the phase exposes, then the session's own."""
        self._refresh()
        return list(self._definitions)

    def specs(self) -> tuple[ModelToolSpec, ...]:
        """The same tools as the model reads them."""
        self._refresh()
        return self._specs

    def current(self) -> bool:
        """Whether the set was built for the registry's active tools as they are now."""
        return self._active == tuple(self._executor.registry.active)

    def _refresh(self) -> None:
        if self.current():
            return
        allowed = phase_tools(self._phase)
        definitions = [
            d for d in self._executor.definitions() if allowed is None or d.canonical_id in allowed
        ]
        definitions += self._own
        self._active = tuple(self._executor.registry.active)
        self._definitions = definitions
        self._specs = tuple(
            ModelToolSpec(d.name, d.description, d.input_schema) for d in definitions
        )
