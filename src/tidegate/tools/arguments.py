"""Strict JSON for tool arguments: what a model or client may send, and nothing else.

Python's ``json`` accepts more than JSON: ``NaN``, ``Infinity`` and ``-Infinity``, numbers
like ``1e400`` that become ``inf``, integers of any length (until the interpreter's digit
limit raises a ``ValueError``), nesting until ``RecursionError``, and ``"\\udcff"``, an
unpaired surrogate that no UTF-8 encoder (the store's, the transport's) will take. Each of
these would otherwise surface far from the call, as a traceback in canonicalisation or
recording. ``parse_arguments`` (for text) and ``argument_problem`` (for values a transport
already decoded) refuse them up front with one sentence naming where the bad value is,
which the executor returns as an ``invalid_arguments`` result (recorded like any other).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tidegate.text.jsonparse import JSONTooDeep, parse_json

MAX_DEPTH = 32
"""Deepest nesting of objects and arrays a tool argument may have."""
MAX_INT_DIGITS = 19
"""Integers are at most 64-bit (no tool takes anything larger)."""
_INT_LIMIT = 2**63


class ArgumentsRejected(Exception):
    """The arguments are not strict JSON; the message names the value and where it is."""


def parse_arguments(text: str) -> Any:
    """``text`` parsed as strict JSON. Raises ``json.JSONDecodeError`` for a syntax error
    and ``ArgumentsRejected`` for a value strict JSON does not have."""
    try:
        value = parse_json(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except JSONTooDeep:
        raise ArgumentsRejected(f"nested deeper than {MAX_DEPTH} levels") from None
    problem = argument_problem(value)
    if problem is not None:
        raise ArgumentsRejected(problem)
    return value


def argument_problem(value: object) -> str | None:
    """Why ``value`` is not strict JSON of bounded depth, or None. Iterative, so no
    nesting depth can exhaust the stack."""
    stack: list[tuple[object, str, int]] = [(value, "(arguments)", 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"{where}: nested deeper than {MAX_DEPTH} levels"
        problem = _scalar_problem(item)
        if problem is not None:
            return f"{where}: {problem}"
        if isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str):
                    return f"{where}: key {key!r} is not a string"
                if not _is_unicode(key):
                    return f"{where}: key {key!a} {_SURROGATE}"
                stack.append((child, f"{where}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
    return None


_SURROGATE = "holds an unpaired surrogate: not Unicode text"


def _scalar_problem(item: object) -> str | None:
    if isinstance(item, bool) or item is None:
        return None
    if isinstance(item, float) and not math.isfinite(item):
        return f"{item!r} is not a JSON number"
    if isinstance(item, int) and not -_INT_LIMIT <= item < _INT_LIMIT:
        return "an integer beyond 64 bits"
    if isinstance(item, str) and not _is_unicode(item):
        return f"{ascii(item)[:60]} {_SURROGATE}"
    if not isinstance(item, int | float | str | Mapping | list | tuple):
        return f"a {type(item).__name__} is not a JSON value"
    return None


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _constant(name: str) -> Any:
    raise ArgumentsRejected(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ArgumentsRejected(f"{text[:40]} is out of range for a JSON number")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ArgumentsRejected(f"an integer of {len(text)} digits is beyond 64 bits")
    return int(text)
