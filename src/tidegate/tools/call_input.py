"""A call's arguments: strict JSON, validated against its tool's input model."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError

from tidegate.tools.arguments import ArgumentsRejected, argument_problem, parse_arguments
from tidegate.tools.calls import ToolCall, ToolResult
from tidegate.tools.catalog import ToolSpec
from tidegate.tools.results import failed


def parse_call(call: ToolCall, spec: ToolSpec, started: float) -> BaseModel | ToolResult:
    """The call's arguments validated against the tool's input model, or the failed result
    (arguments that are not strict JSON, not an object, or not valid input)."""
    raw: Any = call.arguments
    try:
        if isinstance(raw, str):
            raw = parse_arguments(raw) if raw.strip() else {}
        else:
            problem = argument_problem(raw)
            if problem is not None:
                raise ArgumentsRejected(problem)
    except json.JSONDecodeError as exc:
        return failed(call, spec, "invalid_arguments", f"arguments are not JSON: {exc}", started)
    except ArgumentsRejected as exc:
        return failed(
            call, spec, "invalid_arguments", f"arguments are not strict JSON: {exc}", started
        )
    if not isinstance(raw, dict):
        return failed(call, spec, "invalid_arguments", "arguments must be a JSON object", started)
    try:
        args = spec.input_model.model_validate(raw)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
            for e in exc.errors()[:5]
        ]
        return failed(
            call,
            spec,
            "invalid_arguments",
            "; ".join(problems),
            started,
            details={"errors": problems},
        )
    return args
