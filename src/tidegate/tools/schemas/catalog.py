"""Input and output of catalog.search (find and activate more tools)."""

from __future__ import annotations

from pydantic import Field

from tidegate.tools.schemas.base import ToolInput, ToolOutput


class SearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=200)
    activate: bool = Field(default=True, description="Activate the available matches.")


class CatalogEntry(ToolOutput):
    name: str
    canonical_id: str
    summary: str
    active: bool
    available: bool
    label: str | None


class SearchOutput(ToolOutput):
    matches: list[CatalogEntry]
    activated: list[str]
    registry_hash: str
