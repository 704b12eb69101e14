"""catalog.search: find tools by keyword and activate the available ones.

Activation changes the active registry (and its hash: the prompt must be reassembled);
the effect profile stays as it is. Tools without an adapter are listed as unavailable and
never activated.
"""

from __future__ import annotations

import msgspec

from tidegate.tools.adapters.base import AdapterResult, Dispatch
from tidegate.tools.schemas.catalog import CatalogEntry, SearchInput, SearchOutput


class CatalogSearch(msgspec.Struct):
    tool_id: str = "catalog.search"
    label: str | None = None

    def run(self, args: SearchInput, call: Dispatch) -> AdapterResult:
        registry = call.registry
        found = registry.search(args.query)
        available = set(registry.available)
        activated = (
            registry.activate(s.tool_id for s in found if s.tool_id in available)
            if args.activate
            else []
        )
        matches = [
            CatalogEntry(
                name=spec.model_name,
                canonical_id=spec.tool_id,
                summary=spec.summary,
                active=registry.is_active(spec.tool_id),
                available=spec.tool_id in available,
                label=registry.label(spec.tool_id),
            )
            for spec in found
        ]
        output = SearchOutput(
            matches=matches,
            activated=[registry.spec(t).model_name for t in activated],  # type: ignore[union-attr]
            registry_hash=registry.active_hash,
        )
        return AdapterResult(self.tool_id, output, state_changed=bool(activated))
