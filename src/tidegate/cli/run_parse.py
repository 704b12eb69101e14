"""The typer-free parser of ``run``/``review``/``debug`` command lines (``cli.runcmd``
runs what it parses): the options each takes, their defaults, and ``parse``, which reads
only what it is sure click would read the same way and otherwise returns None.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tidegate.records.modes import Mode
from tidegate.text.paths import is_utf8

FAIL_ON = ("error", "warning", "never")
"""``review --fail-on``: the least severe finding that makes a review exit 1."""

_INT = re.compile(r"[0-9]{1,6}")
_FLOAT = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})?")

# option -> (field, kind[, bounds]); kinds: flag, str, path, int, float, multi, choice
_COMMON: dict[str, tuple[Any, ...]] = {
    "--repo": ("repo", "path"),
    "--objective": ("objective", "str"),
    "--objective-file": ("objective_file", "path"),
    "--verify": ("verify", "str"),
    "--planner": ("planner", "str"),
    "--verify-timeout": ("verify_timeout", "float", 1.0, None),
    "--warm-shadow": ("warm_shadow", "flag"),
    "--network": ("network", "flag"),
    "--containment": ("containment", "choice", ("auto", "required", "none")),
    "--model": ("model", "str"),
    "--max-cost": ("max_cost", "float", 0.0, None),
    "--max-steps": ("max_steps", "int", 1, None),
    "--state-root": ("state_root", "str"),
    "--json": ("as_json", "flag"),
}
REBASES = 3
"""How many fresh T0s ``--rebase`` tries a conflicting change on."""
_PATCHING: dict[str, tuple[Any, ...]] = {
    **_COMMON,
    "--max-attempts": ("max_attempts", "int", 1, 20),
    "--keep-shadow": ("keep_shadow", "flag"),
    "--hold": ("hold", "flag"),
    "--rebase": ("rebase", "flag"),
    "--review": ("review", "flag"),
    "--agent": ("agent", "str"),
    "--agent-model": ("agent_model", "str"),
    "--sub-agent": ("sub_agent", "multi"),
}
OPTIONS: dict[str, dict[str, tuple[Any, ...]]] = {
    "run": {
        **_PATCHING,
        "--mode": ("mode", "choice", tuple(m.value for m in Mode)),
        "--otlp": ("otlp", "str"),
    },
    "review": {**_COMMON, "--fail-on": ("fail_on", "choice", FAIL_ON)},
    "debug": _PATCHING,
}
DEFAULTS: dict[str, Any] = {
    "mode": Mode.PATCH,
    "repo": Path("."),
    "planner": "structured",
    "max_attempts": 3,
    "verify_timeout": None,
    "keep_shadow": False,
    "hold": False,
    "rebase": False,
    "review": False,
    "warm_shadow": False,
    "network": False,
    "as_json": False,
}


def parse(args: list[str]) -> dict[str, Any] | None:
    """The parameters of ``tidegate ARGS`` for run/review/debug as the typer command
    receives them, or None when this parser is not sure it reads them as click would."""
    if (
        not args
        or args[0] not in OPTIONS
        or (args[0] == "review" and args[1:2] in (["run"], ["read"]))
    ):
        return None
    table = OPTIONS[args[0]]
    values: dict[str, Any] = {}
    rest = args[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if not is_utf8(token):
            return None
        name, eq, inline = token.partition("=")
        spec = table.get(name)
        if spec is None or not token.startswith("--"):
            return None  # positional, short, unknown, --help, "--"
        field, kind = spec[0], spec[1]
        if kind == "flag":
            if eq:
                return None
            values[field] = True
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        elif i + 1 < len(rest):
            value = rest[i + 1]
            i += 2
        else:
            return None
        if value == "--help" or not is_utf8(value):
            return None
        converted = _convert(kind, spec[2:], value)
        if converted is None:
            return None
        if kind == "multi":
            values.setdefault(field, []).extend(converted)
        else:
            values[field] = converted
    return values


def _convert(kind: str, extra: tuple[Any, ...], value: str) -> Any:
    if kind == "str":
        return value
    if kind == "multi":
        return [value]
    if kind == "path":
        return Path(value) if value else None
    if kind == "choice":
        return value if value in extra[0] else None
    pattern = _INT if kind == "int" else _FLOAT
    if not pattern.fullmatch(value):
        return None
    number: int | float = int(value) if kind == "int" else float(value)
    low, high = extra
    if (low is not None and number < low) or (high is not None and number > high):
        return None
    return number
