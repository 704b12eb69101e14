"""What a traversal skipped, disclosed: every exclusion counted, the first few named."""

from __future__ import annotations


class Excluded:
    """Disclosed exclusions, capped for output, all counted."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.items: list[str] = []
        self.total = 0

    def add(self, text: str) -> None:
        self.total += 1
        if len(self.items) < self.cap:
            self.items.append(text)

    def shown(self) -> list[str]:
        return list(self.items)
