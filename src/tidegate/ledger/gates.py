"""Human gates: side effects that always wait for a person, whatever the route.

An item's gate is its Gate column. ``init`` fills that column from the title (shown, and
editable, in ledger.md); a ledger without the column has gates inferred at claim time. The
words are deliberately broad: a false alarm costs one decision, a miss costs a release.
"""

from __future__ import annotations

import re

from tidegate.ledger.model import Gate

_WORDS: list[tuple[Gate, str]] = [
    (Gate.RELEASE, r"\b(release|publish|tag v?\d|npm publish|twine upload|deploy to prod)"),
    (Gate.EXTERNAL_PUSH, r"\b(git push|force[- ]push|push (to|upstream|origin|the branch))\b"),
    (
        Gate.DESTRUCTIVE_CLEANUP,
        r"(rm -rf|\bdelete (the )?(branch|branches|data|database|bucket|unmerged)"
        r"|\bdrop (table|database)|\bpurge\b|\bwipe\b|\bdestroy\b|\bdestructive cleanup)",
    ),
    (
        Gate.CREDENTIALS,
        r"\b(credential|secret|api[- ]?key|password|rotate (the )?(key|token)s?|billing)",
    ),
    (Gate.RULE_PROMOTION, r"\bcanonical rule"),
    (Gate.MILESTONE_MERGE, r"\bcross-milestone merge"),
]


def infer_gate(title: str) -> Gate | None:
    """The first gate whose words appear in ``title`` (case-insensitive), if any."""
    lowered = title.lower()
    return next((gate for gate, words in _WORDS if re.search(words, lowered)), None)
