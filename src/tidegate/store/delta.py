"""Structural deltas between two JSON values, so a checkpoint can be stored as what changed
since the previous one instead of the whole state again.

A delta is itself JSON, one node per changed place, never mixed with the state's own keys:

* ``["=", value]``: the value is replaced whole;
* ``["d", {key: node, ...}, [removed key, ...]]``: an object keeps every key not named,
  takes each named key's node, and drops the removed keys;
* ``["l", keep, [item, ...]]``: a list keeps its first ``keep`` items and ends with the
  given ones (what an append, or a change near the end, costs).

``diff`` may say more than it must (it compares with ``==``, under which ``True == 1``);
the store therefore applies every delta it writes and compares the result byte for byte
with the canonical document it signed, and stores the whole document when they differ.
``patch`` never changes its inputs: unchanged parts of the old value are shared.
"""

from __future__ import annotations

TYPE_CHECKING = False  # read by the CLI's fast path, which does not import typing
if TYPE_CHECKING:
    from typing import Any


class BadDelta(ValueError):
    """A stored delta is not one ``diff`` writes, or does not fit the value it patches."""


def diff(old: Any, new: Any) -> list[Any]:
    """The node that turns ``old`` into ``new`` (both JSON values as ``json.loads`` gives)."""
    if isinstance(old, dict) and isinstance(new, dict):
        changed = {
            key: diff(old[key], value) if key in old else ["=", value]
            for key, value in new.items()
            if key not in old or not _same(old[key], value)
        }
        return ["d", changed, sorted(key for key in old if key not in new)]
    if isinstance(old, list) and isinstance(new, list):
        keep = 0
        limit = min(len(old), len(new))
        while keep < limit and _same(old[keep], new[keep]):
            keep += 1
        return ["l", keep, new[keep:]]
    return ["=", new]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def patch(old: Any, node: Any) -> Any:
    """``old`` with the delta ``node`` applied; ``BadDelta`` if it does not fit."""
    if not isinstance(node, list) or not node:
        raise BadDelta("a delta node is a non-empty array")
    kind = node[0]
    if kind == "=" and len(node) == 2:
        return node[1]
    if kind == "d" and len(node) == 3 and isinstance(old, dict):
        changed, removed = node[1], node[2]
        if not isinstance(changed, dict) or not isinstance(removed, list):
            raise BadDelta("an object delta holds an object and an array")
        out = {key: value for key, value in old.items() if key not in removed}
        for key, child in changed.items():
            out[key] = patch(old[key], child) if key in old else _added(child)
        return out
    if kind == "l" and len(node) == 3 and isinstance(old, list):
        keep, tail = node[1], node[2]
        if type(keep) is not int or not 0 <= keep <= len(old) or not isinstance(tail, list):
            raise BadDelta("a list delta keeps a prefix of the list and adds an array")
        return old[:keep] + tail
    raise BadDelta(f"a delta node {kind!r} does not fit a {type(old).__name__}")


def _added(node: Any) -> Any:
    if not isinstance(node, list) or len(node) != 2 or node[0] != "=":
        raise BadDelta("a key the old object lacks can only be set whole")
    return node[1]
