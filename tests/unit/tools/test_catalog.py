"""The catalog: canonical IDs, provider-safe names, self-contained schemas, activation."""

from __future__ import annotations

import json
import re

from tidegate.tools.adapters.catalog import CatalogSearch
from tidegate.tools.adapters.doubles import ResearchSearchDouble
from tidegate.tools.adapters.workspace import WorkspaceRead, WorkspaceWrite
from tidegate.tools.catalog import CATALOG, SPECS, ToolRegistry, canonical_id, model_name
from tidegate.tools.effects import PROFILE_SHA256, profile_digest
from tidegate.tools.policy import TaskMode
from tidegate.tools.schemas.base import json_schema

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_names_map_both_ways_and_suit_every_provider() -> None:
    assert len(CATALOG) == 21
    for spec in CATALOG:
        assert PROVIDER_NAME.match(spec.model_name), spec.model_name
        assert canonical_id(spec.model_name) == spec.tool_id
        assert canonical_id(spec.tool_id) == spec.tool_id
        assert model_name(spec.tool_id) == spec.model_name
    assert model_name("workspace.read") == "workspace_read"
    assert canonical_id("workspace-read") is None
    assert canonical_id("shell") is None


def test_schemas_are_self_contained_objects_that_forbid_extra_keys() -> None:
    for spec in CATALOG:
        schema = json_schema(spec.input_model)
        text = json.dumps(schema)
        assert "$ref" not in text and "$defs" not in text, spec.tool_id
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, spec.tool_id


def _registry(mode: TaskMode = TaskMode.PATCH) -> ToolRegistry:
    adapters = {
        a.tool_id: a
        for a in (WorkspaceRead(), WorkspaceWrite(), CatalogSearch(), ResearchSearchDouble())
    }
    return ToolRegistry(adapters, mode=mode)  # type: ignore[arg-type]


def test_lazy_tools_start_inactive_and_activation_changes_only_the_registry_hash() -> None:
    registry = _registry()
    assert registry.active == ["catalog.search", "workspace.read", "workspace.write"]
    before = registry.active_hash
    assert registry.activate(["research.search", "research.fetch"]) == ["research.search"]
    assert registry.is_active("research.search")
    assert registry.active_hash != before
    assert profile_digest() == PROFILE_SHA256
    assert registry.effect_metadata()["effect_profile_sha256"] == PROFILE_SHA256
    assert len(registry.effect_metadata()["effect_capabilities"]) == 21


def test_doubles_are_labelled_in_their_definition() -> None:
    registry = _registry()
    registry.activate(["research.search"])
    (defn,) = [d for d in registry.definitions() if d.canonical_id == "research.search"]
    assert defn.label and defn.label.startswith("double:")
    assert defn.description.startswith(f"[{defn.label}]")


def test_read_only_mode_exposes_no_writer() -> None:
    registry = _registry(TaskMode.REVIEW)
    assert "workspace.write" not in registry.available
    assert registry.activate(["workspace.write"]) == []
    assert all(not SPECS[t].writes for t in registry.active)


def test_search_finds_by_keyword() -> None:
    found = {s.tool_id for s in _registry().search("web documentation")}
    assert {"research.search", "research.fetch"} <= found
