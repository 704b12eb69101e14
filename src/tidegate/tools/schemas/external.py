"""Inputs and outputs of the tools whose backends are external: research, preview, perception.

Every output names its ``provider``; a deterministic double says so there.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tidegate.tools.schemas.base import ToolInput, ToolOutput


class ResearchSearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=400)
    max_results: int = Field(default=5, ge=1, le=10)


class ResearchHit(ToolOutput):
    url: str
    title: str
    snippet: str


class ResearchSearchOutput(ToolOutput):
    provider: str
    results: list[ResearchHit]
    untrusted: Literal[True] = True


class ResearchFetchInput(ToolInput):
    url: str = Field(pattern=r"^https?://\S+$", max_length=2000)
    max_bytes: int = Field(default=32_000, ge=256, le=256_000)


class ResearchFetchOutput(ToolOutput):
    provider: str
    url: str
    title: str | None
    content: str
    sha256: str
    truncated: bool
    untrusted: Literal[True] = True


class PreviewInput(ToolInput):
    action: Literal["start", "status", "stop"]
    target: str | None = Field(default=None, max_length=200, description="For start.")
    preview_id: str | None = Field(default=None, max_length=64, description="For status/stop.")


class PreviewOutput(ToolOutput):
    provider: str
    preview_id: str
    status: Literal["running", "stopped"]
    url: str | None


class PerceptionInput(ToolInput):
    artifact_id: str = Field(pattern=r"^art_[0-9a-f]{16}$")
    question: str = Field(min_length=1, max_length=2000)


class PerceptionOutput(ToolOutput):
    provider: str
    artifact_id: str
    observations: list[str]
