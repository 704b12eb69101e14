"""Rendering of operator views: the same sanitised content as text or as JSON.

A view is an ordered mapping of sections. Every string in it went through
``tidegate.text.sanitize`` (secret-shaped values redacted, terminal controls made visible)
before it reaches the terminal, whichever form is printed, so nothing read back from disk
can replay an escape sequence or a key.
"""

from __future__ import annotations

import json
from typing import Any, cast


def clean(view: dict[str, Any]) -> dict[str, Any]:
    from tidegate.text.sanitize import sanitize_value

    return cast(dict[str, Any], sanitize_value(view))


def as_json(command: str, view: dict[str, Any]) -> str:
    return json.dumps({"command": command, **clean(view)}, indent=2, allow_nan=False) + "\n"


def as_text(command: str, view: dict[str, Any]) -> str:
    lines = [f"tidegate {command}"]
    for section, value in clean(view).items():
        title = section.replace("_", " ")
        if isinstance(value, dict | list):
            lines.append(f"{title}:")
            lines.extend(_lines(value, "  "))
        else:
            lines.append(f"{title}: {_scalar(value)}")
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _lines(value: Any, indent: str) -> list[str]:
    out: list[str] = []
    if isinstance(value, dict):
        if not value:
            return [f"{indent}(none)"]
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{indent}{key}:")
                out.extend(_lines(item, indent + "  "))
            else:
                out.append(f"{indent}{key}: {_scalar(item) if item != [] else '(none)'}")
        return out
    if not value:
        return [f"{indent}(none)"]
    for item in value:
        if isinstance(item, dict):
            sub = _lines(item, indent + "  ")
            out.append(f"{indent}- {sub[0].strip()}")
            out.extend(sub[1:])
        else:
            out.append(f"{indent}- {_scalar(item)}")
    return out
