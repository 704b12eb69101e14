"""Failure points of the store, for tests of the fail-closed rules. Inert unless named.

The store takes a ``StoreFaults`` (default: read from ``TIDEGATE_STORE_FAULT``, so a CLI
subprocess can be given one). A point is ``<what>.<stage>``: ``what`` is ``trace``,
``checkpoint`` or ``report``; ``stage`` is ``write`` (fails before the commit, nothing is
written) or ``ack`` (fails after the commit, while the write is being acknowledged).
``checkpoint.write:3`` fails only the third checkpoint; several points are separated by
commas. An injected failure is an ``OSError``, handled exactly like a real one.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable

ENV = "TIDEGATE_STORE_FAULT"
POINTS = frozenset(
    f"{what}.{stage}" for what in ("trace", "checkpoint", "report") for stage in ("write", "ack")
)


class InjectedStoreFault(OSError):
    """A failure a test asked for at a named store point."""


class StoreFaults:
    def __init__(self, spec: Iterable[str] = ()) -> None:
        self._wanted: dict[str, int | None] = {}
        for item in spec:
            name, _, nth = item.strip().partition(":")
            if name not in POINTS:
                raise ValueError(f"{ENV}: unknown store fault point {name!r}")
            self._wanted[name] = int(nth) if nth else None
        self._seen: Counter[str] = Counter()

    @classmethod
    def from_env(cls) -> StoreFaults:
        raw = os.environ.get(ENV, "")
        return cls(p for p in raw.split(",") if p.strip())

    def check(self, point: str) -> None:
        """Raise ``InjectedStoreFault`` if ``point`` was asked for (and this is its turn)."""
        if point not in self._wanted:
            return
        self._seen[point] += 1
        nth = self._wanted[point]
        if nth is None or nth == self._seen[point]:
            raise InjectedStoreFault(f"injected store fault at {point}")
