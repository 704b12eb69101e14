"""Inputs and outputs of the workspace tools: read, write, edit, list, glob, grep."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tidegate.tools.schemas.base import PRECONDITION_PATTERN, SHA256_PATTERN, ToolInput, ToolOutput

PathField = Field(min_length=1, max_length=4096, description="Path relative to the workspace root.")


class ReadInput(ToolInput):
    path: str = PathField
    start_line: int = Field(default=1, ge=1, description="First line to return (1-based).")
    max_lines: int | None = Field(default=None, ge=1, le=2000, description="Lines to return.")


class ReadOutput(ToolOutput):
    path: str
    content: str
    sha256: str = Field(pattern=SHA256_PATTERN)
    """The whole file's hash: pass it as ``expect`` to write or edit this file."""
    size: int
    start_line: int
    end_line: int
    total_lines: int
    truncated: bool
    next_start_line: int | None


class WriteInput(ToolInput):
    path: str = PathField
    content: str = Field(max_length=2_000_000)
    expect: str = Field(
        pattern=PRECONDITION_PATTERN,
        description="'must_not_exist' to create, or the sha256 you last read to replace.",
    )


class WriteOutput(ToolOutput):
    path: str
    created: bool
    sha256: str = Field(pattern=SHA256_PATTERN)
    size: int


class EditInput(ToolInput):
    path: str = PathField
    old: str = Field(min_length=1, max_length=200_000, description="Exact text to replace.")
    new: str = Field(max_length=200_000, description="Replacement text.")
    expect: str = Field(pattern=SHA256_PATTERN, description="The sha256 you last read.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


class EditOutput(ToolOutput):
    path: str
    before_sha256: str = Field(pattern=SHA256_PATTERN)
    sha256: str = Field(pattern=SHA256_PATTERN)


class EntryOut(ToolOutput):
    path: str
    kind: Literal["missing", "file", "dir", "symlink", "special"]
    size: int | None


class ListInput(ToolInput):
    path: str = Field(default=".", min_length=1, max_length=4096)
    depth: int = Field(default=1, ge=1, le=12)
    cursor: str | None = Field(default=None, max_length=4096)
    limit: int | None = Field(default=None, ge=1, le=1000)
    include_ignored: bool = False


class ListingOutput(ToolOutput):
    entries: list[EntryOut]
    truncated: bool
    next_cursor: str | None
    excluded: list[str]
    """Traversal exclusions the host applied (.git, ignored paths ...)."""


class GlobInput(ToolInput):
    pattern: str = Field(min_length=1, max_length=1024)
    cursor: str | None = Field(default=None, max_length=4096)
    limit: int | None = Field(default=None, ge=1, le=1000)
    include_ignored: bool = False


class GrepInput(ToolInput):
    pattern: str = Field(min_length=1, max_length=1024)
    path: str = Field(default=".", min_length=1, max_length=4096)
    glob: str | None = Field(default=None, max_length=1024)
    regex: bool = False
    case_sensitive: bool = True
    cursor: str | None = Field(default=None, max_length=4096)
    limit: int | None = Field(default=None, ge=1, le=500)
    include_ignored: bool = False


class GrepMatchOut(ToolOutput):
    path: str
    line: int
    text: str


class GrepOutput(ToolOutput):
    matches: list[GrepMatchOut]
    files_scanned: int
    truncated: bool
    next_cursor: str | None
    excluded: list[str]
