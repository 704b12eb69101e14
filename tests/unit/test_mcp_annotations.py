"""The MCP hints come from what the catalog and the policy declare, not from a table of
their own: every catalog tool gets all four, a descriptor's declared capabilities move its
hints, and commands are open-world unless verified containment keeps the network out."""

from __future__ import annotations

import msgspec
import pytest

from tidegate.mcp.annotations import hints, traits
from tidegate.mcp.change import TRAITS as CHANGE
from tidegate.tools.catalog import CATALOG
from tidegate.tools.policy import EXECUTABLE, NETWORKED, PolicyContext

SEALED = PolicyContext(containment_verified=True, network="denied")
OPEN = PolicyContext(containment_verified=False, network="policy_gated")
SPECS = {spec.tool_id: spec for spec in CATALOG}


@pytest.mark.parametrize("policy", [SEALED, OPEN], ids=["sealed", "open"])
def test_every_catalog_tool_has_all_four_hints(policy: PolicyContext) -> None:
    for spec in CATALOG:
        got = hints(traits(spec), policy)
        values = (
            got.read_only_hint,
            got.destructive_hint,
            got.idempotent_hint,
            got.open_world_hint,
        )
        assert None not in values, spec.tool_id
        if got.read_only_hint:  # read-only: nothing to destroy, repeating changes nothing
            assert not got.destructive_hint and got.idempotent_hint, spec.tool_id
        if "write" in spec.capabilities:
            assert not got.read_only_hint and got.destructive_hint, spec.tool_id


def test_commands_are_open_world_unless_sealed() -> None:
    for tool in EXECUTABLE:
        spec = SPECS[tool]
        assert hints(traits(spec), OPEN).open_world_hint is True
        assert hints(traits(spec), SEALED).open_world_hint is False
        allowed = PolicyContext(containment_verified=True, network="allowed")
        assert hints(traits(spec), allowed).open_world_hint is True
        assert not hints(traits(spec), SEALED).idempotent_hint
    for tool in NETWORKED:
        assert hints(traits(SPECS[tool]), SEALED).open_world_hint is True
    assert hints(CHANGE, SEALED).destructive_hint and not hints(CHANGE, SEALED).read_only_hint


def test_the_declared_capabilities_decide() -> None:
    read = SPECS["workspace.read"]
    assert hints(traits(read), SEALED).read_only_hint
    writing = msgspec.structs.replace(read, declared=frozenset({"approval", "write"}))
    assert not hints(traits(writing), SEALED).read_only_hint
    assert hints(traits(writing), SEALED).destructive_hint
    keeping = msgspec.structs.replace(read, declared=frozenset({"approval", "state_version"}))
    got = hints(traits(keeping), SEALED)
    assert (got.read_only_hint, got.destructive_hint) == (False, False)
