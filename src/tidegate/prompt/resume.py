"""Resume compatibility: a checkpoint continues only under the exact contract it recorded.

A checkpoint stores :class:`PromptHashes`. On resume the runtime reassembles the prompt
from the structured configuration, the restored tool snapshot and a fresh model probe, and
compares every hash. Any difference means the run would continue under a different
contract, so the checkpoint is refused rather than silently adopted. Probe timestamps never
reach these hashes (see :data:`tidegate.prompt.hashing.VOLATILE_KEYS`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tidegate.errors import UsageError


class PromptHashes(BaseModel):
    """The seven hashes that bind a run to its prompt, task, tools and model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str
    system_prompt: str
    task_contract: str
    registry: str
    effect_policy: str
    model_identity: str
    model_capability: str


def check_resume(recorded: PromptHashes, current: PromptHashes) -> list[str]:
    """The names of the hashes that differ, in field order; empty means compatible."""
    return [
        name
        for name in PromptHashes.model_fields
        if getattr(recorded, name) != getattr(current, name)
    ]


class ResumeIncompatible(UsageError):
    """The checkpoint was recorded under a different prompt contract than the current one."""

    def __init__(self, changed: list[str]) -> None:
        self.changed = changed
        super().__init__(
            "cannot resume: the checkpoint was recorded under a different "
            + ", ".join(n.replace("_", "-") for n in changed)
            + " hash; start a new run or restore the original configuration"
        )


def require_resume_compatible(recorded: PromptHashes, current: PromptHashes) -> None:
    """Raise :class:`ResumeIncompatible` unless every hash matches."""
    changed = check_resume(recorded, current)
    if changed:
        raise ResumeIncompatible(changed)
