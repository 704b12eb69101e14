"""Input and output of git.exec (read-only git subcommands)."""

from __future__ import annotations

from pydantic import Field

from tidegate.tools.schemas.base import ToolInput, ToolOutput


class GitInput(ToolInput):
    args: list[str] = Field(
        min_length=1,
        max_length=64,
        description="git arguments, subcommand first, e.g. ['diff', '--stat']. Only "
        "allowlisted read-only subcommands and options; paths after '--'.",
    )
    max_bytes: int = Field(default=200_000, ge=1000, le=2_000_000)


class GitOutput(ToolOutput):
    argv: list[str]
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    complete_diff: bool
    """True when this was a diff action whose whole output is shown."""
    contained: bool = False
    """True when git ran in the read-only sandbox (repository read-only, nothing else
    visible, no network); False: uncontained, the allowlist alone held."""
    withheld: str | None = None
    """Set when git ran with secret-shaped files excluded: why some paths are missing."""
