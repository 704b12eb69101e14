"""What ``agent_dispatch`` is configured with (:class:`DispatchSettings`) and the port an
agent CLI sub-agent answers (:class:`CliSubAgent`, :class:`CliOutcome`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from tidegate.agent.sub_profile import DEFAULT_PROFILE
from tidegate.models.ports import ModelPort
from tidegate.models.pricing import ModelPricing

if TYPE_CHECKING:
    from tidegate.workspace.secret_files import SecretFiles


TIDEGATE = "tidegate"


class CliOutcome(msgspec.Struct, frozen=True):
    """What an agent CLI's run left, as data."""

    exit_code: int | None
    timed_out: bool
    duration_s: float
    text: str
    diff: str
    containment: str


class CliSubAgent(Protocol):
    """An agent CLI by its contract (``tidegate.planners.agent.CliSubAgent``)."""

    @property
    def name(self) -> str: ...

    def run(
        self,
        root: Path,
        task: str,
        *,
        read_only: bool,
        timeout_s: float,
        withheld: SecretFiles | None = None,
    ) -> CliOutcome:
        """One contained run on a private copy of ``root``'s HEAD; ``withheld`` files of
        the copy are masked from it."""
        ...


class DispatchSettings(msgspec.Struct, frozen=True):
    model: ModelPort | None = None
    """The sub-agent's model; None: the parent's (with the parent's pricing)."""
    pricing: ModelPricing | None = None
    profile: tuple[str, ...] = DEFAULT_PROFILE
    """Canonical tools a tidegate sub-agent may hold (intersected with what the parent's
    host offers; filtered in read-only phases)."""
    clis: tuple[CliSubAgent, ...] = ()
    max_depth: int = 1
    """How deep dispatch nests: 1 lets a session dispatch, and its sub-agents not."""
    cli_timeout_s: float = 900.0
