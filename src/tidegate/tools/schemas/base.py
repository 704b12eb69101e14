"""Base models for tool inputs and outputs, and their JSON schemas for model tool definitions.

Inputs forbid unknown keys (a misspelt argument is an error, not a silent default);
outputs forbid them too, so an adapter returning something other than its declared output
fails validation and the executor treats the call's outcome as unknown.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic import BaseModel, ConfigDict

SHA256_PATTERN = r"^sha256:[0-9a-f]{64}$"
PRECONDITION_PATTERN = r"^(must_not_exist|sha256:[0-9a-f]{64})$"


class ToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A self-contained JSON schema for ``model``: references inlined, titles dropped.

    Providers differ in how much JSON Schema they accept; a flat object with inline
    definitions and no titles is accepted by all of them. Rendering is cached per model
    (pydantic's schema generation costs ~0.5 ms a tool); each caller gets its own copy.
    """
    return copy.deepcopy(_rendered(model))


@functools.cache
def _rendered(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _clean(_inline(raw, defs))
    return schema


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = copy.deepcopy(defs[ref.removeprefix("#/$defs/")])
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return _inline({**target, **rest}, defs)
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _clean(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _clean(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node
