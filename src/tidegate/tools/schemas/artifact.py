"""Inputs and outputs of the artifact tools (a store outside the workspace)."""

from __future__ import annotations

from pydantic import Field

from tidegate.tools.schemas.base import SHA256_PATTERN, ToolInput, ToolOutput

ARTIFACT_ID_PATTERN = r"^art_[0-9a-f]{16}$"


class CreateInput(ToolInput):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
    content: str = Field(max_length=1_000_000)
    media_type: str = Field(default="text/plain", pattern=r"^[a-z]+/[A-Za-z0-9.+-]+$")


class ArtifactInfo(ToolOutput):
    artifact_id: str = Field(pattern=ARTIFACT_ID_PATTERN)
    name: str
    media_type: str
    sha256: str = Field(pattern=SHA256_PATTERN)
    size: int


class CreateOutput(ToolOutput):
    artifact: ArtifactInfo


class ListInput(ToolInput):
    limit: int = Field(default=100, ge=1, le=1000)


class ListOutput(ToolOutput):
    artifacts: list[ArtifactInfo]
    truncated: bool


class ReadInput(ToolInput):
    artifact_id: str = Field(pattern=ARTIFACT_ID_PATTERN)
    max_bytes: int = Field(default=64_000, ge=1, le=1_000_000)


class ReadOutput(ToolOutput):
    artifact: ArtifactInfo
    content: str
    truncated: bool
