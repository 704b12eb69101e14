"""``tidegate-probe LEGACY-NAME ARGS...``: the legacy operator spellings, each mapped to its
canonical command and run by the same code path (nothing is implemented twice)."""

from __future__ import annotations

import sys

LEGACY = {
    "bootstrap-run": ("bootstrap", "run"),
    "engineer-loop-run": ("engineer", "run"),
    "engineer-read": ("engineer", "read"),
    "meeting-run": ("meeting", "run"),
    "meeting-read": ("meeting", "read"),
    "goal-curation-run": ("goal-curation", "run"),
    "goal-curation-read": ("goal-curation", "read"),
    "improvement-curation-run": ("improvement-curation", "run"),
    "improvement-curation-read": ("improvement-curation", "read"),
    "review-run": ("review", "run"),
    "review-read": ("review", "read"),
}


def canonical(argv: list[str]) -> list[str]:
    from tidegate.errors import UsageError

    if not argv or argv[0] not in LEGACY:
        raise UsageError(
            f"unknown legacy command {argv[0] if argv else '(none)'!r}; known: {', '.join(LEGACY)}"
        )
    return [*LEGACY[argv[0]], *argv[1:]]


def main(argv: list[str] | None = None) -> int:
    from tidegate.cli.app import main as tidegate_main
    from tidegate.errors import UsageError

    try:
        args = canonical(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        sys.stderr.write(f"tidegate-probe: error: {exc}\n")
        return 2
    return tidegate_main(args)
