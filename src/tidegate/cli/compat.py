"""``tidegate-probe LEGACY-NAME ARGS...``: the legacy operator-probe spellings (the
compatibility surface of the operator runtime contracts), each mapped to its canonical
command and run by the same code path (nothing is implemented twice).

``tidegate-probe --help`` lists them; ``tidegate-probe NAME --help`` is the canonical
command's own help. Anything else is one error line and exit 2.
"""

from __future__ import annotations

import sys

LEGACY = {
    "bootstrap-run": ("bootstrap", "run"),
    "engineer-loop-run": ("engineer", "run"),
    "engineer-read": ("engineer", "read"),
    "terminal-run": ("engineer", "terminal"),
    "terminal-run-file": ("engineer", "terminal-file"),
    "terminal-recipe-list": ("engineer", "terminal-recipe-list"),
    "terminal-recipe-show": ("engineer", "terminal-recipe-show"),
    "terminal-recipe-run": ("engineer", "terminal-recipe"),
    "terminal-read": ("engineer", "terminal-read"),
    "meeting-run": ("meeting", "run"),
    "meeting-read": ("meeting", "read"),
    "goal-curation-run": ("goal-curation", "run"),
    "goal-curation-read": ("goal-curation", "read"),
    "improvement-curation-run": ("improvement-curation", "run"),
    "improvement-curation-read": ("improvement-curation", "read"),
    "review-run": ("review", "run"),
    "review-read": ("review", "read"),
}
_HELP_FLAGS = ("--help", "-h")


def help_text() -> str:
    width = max(len(name) for name in LEGACY) + 2
    rows = "".join(f"  {name:<{width}}tidegate {' '.join(cmd)}\n" for name, cmd in LEGACY.items())
    return (
        "Usage: tidegate-probe COMMAND [ARGS]...\n\n"
        "  The legacy operator-probe names, each run as its canonical tidegate command\n"
        "  (the same code: the same output and exit code).\n\n"
        f"Commands:\n{rows}\n"
        "`tidegate-probe COMMAND --help` shows that command's own help.\n"
    )


def canonical(argv: list[str]) -> list[str]:
    from tidegate.errors import UsageError

    if not argv:
        raise UsageError("give a command; `tidegate-probe --help` lists them")
    if argv[0].startswith("-"):
        raise UsageError(f"unknown option {argv[0]!r}; `tidegate-probe --help` lists the commands")
    if argv[0] not in LEGACY:
        raise UsageError(
            f"unknown legacy command {argv[0]!r}; known (`tidegate-probe --help`): "
            + ", ".join(LEGACY)
        )
    return [*LEGACY[argv[0]], *argv[1:]]


def main(argv: list[str] | None = None) -> int:
    from tidegate.errors import UsageError

    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in _HELP_FLAGS:
        sys.stdout.write(help_text())
        return 0
    try:
        canonical_args = canonical(args)
    except UsageError as exc:
        sys.stderr.write(f"tidegate-probe: error: {exc}\n")
        return 2
    from tidegate.cli.app import main as tidegate_main

    return tidegate_main(canonical_args)
