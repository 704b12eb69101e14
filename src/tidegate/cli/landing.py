"""What ``apply``, ``discard`` and ``undo`` print, and ``--review``: a held change's files
asked about one by one on the terminal (``run --review``, ``apply --review``), as
``git add -p`` asks about hunks, then landed through ``flow.landing.apply_run``: every file
chosen is a plain apply, a subset is verified again on its own first, none leaves the run
held."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tidegate.errors import UsageError
from tidegate.text.sanitize import sanitize

CHOICES = "y,n,a,d,q,?"
HELP = """\
y - land this file's change
n - leave this file out
a - land this file and every remaining one
d - leave out this file and every remaining one
q - stop: land nothing, the run stays held
? - print this help
"""


def require_terminal(option: str, as_json: bool) -> None:
    """Refuse ``option`` (``--review``) unless standard input is a terminal to answer on."""
    if as_json:
        raise UsageError(f"{option} asks on the terminal: not with --json")
    if not sys.stdin.isatty():
        raise UsageError(
            f"{option} asks on the terminal, and standard input is not one "
            "(use --hold, then `tidegate apply --only PATH`)"
        )


def review_held(repo: Path, state_root: str | None, run_id: str | None) -> int:
    """Ask about each file of held run ``run_id`` (the newest held one by default), land
    the ones chosen; the exit code."""
    from tidegate.cli.render import ProgressPrinter, console
    from tidegate.cli.report_text import diff_files, diff_text, terminal_styles
    from tidegate.flow.landing import apply_run, held_run
    from tidegate.store import open_run_store

    store = open_run_store(repo, state_root)
    try:
        run = held_run(repo, store, run_id)
        assert run.report is not None
        parts, styles = dict(diff_files(run.report.diff)), terminal_styles()
        files = [f.path for f in run.report.changed_files]  # what --only names
        chosen = choose([(path, diff_text(parts.get(path, ""), styles)) for path in files])
        if not chosen:
            _still_held(run.run_id, "stopped" if chosen is None else "nothing chosen")
            return 0
        if len(chosen) < len(files):
            sys.stderr.write(
                f"tidegate: {len(chosen)} of {len(files)} file(s) chosen: a subset was never "
                "verified on its own, so it is verified again in a fresh shadow before it "
                "lands\n"
            )
        subset = chosen if len(chosen) < len(files) else []
        observer = ProgressPrinter(console(stderr=True))
        outcome = apply_run(repo, store, run.run_id, subset, [], observer)
    finally:
        store.close()
    return print_landings([outcome], False)


def choose(files: list[tuple[str, str]]) -> list[str] | None:
    """The paths chosen, each file's diff shown (through the pager) before its question;
    None when the user stopped (``q``, or the end of input)."""
    from tidegate.cli.output import shown

    chosen: list[str] = []
    for number, (path, diff) in enumerate(files, start=1):
        shown(diff)
        while True:
            sys.stdout.write(
                sanitize(f"({number}/{len(files)}) Land this change to {path} [{CHOICES}]? ")
            )
            sys.stdout.flush()
            answer = sys.stdin.readline()
            if not answer or answer.strip() == "q":
                sys.stdout.write("\n" if not answer else "")
                return None
            answer = answer.strip()
            if answer in ("y", "n", "a", "d"):
                break
            sys.stdout.write(HELP)
        if answer in ("y", "a"):
            chosen.append(path)
        if answer == "a":
            return chosen + [p for p, _ in files[number:]]
        if answer == "d":
            return chosen
    return chosen


def _still_held(run_id: str, why: str) -> None:
    sys.stdout.write(
        sanitize(
            f"{why}: run {run_id} stays held; `tidegate apply {run_id}` lands it (--review "
            f"to choose again, --only PATH for a part), `tidegate discard {run_id}` drops it"
        )
        + "\n"
    )


def print_landings(outcomes: list[Any], as_json: bool) -> int:
    """Print what apply, discard or undo did; the exit code of the last one."""
    if as_json:
        from tidegate.cli.output import dump_json

        shown: Any = [o.as_dict() for o in outcomes]
        sys.stdout.write(dump_json(shown[0] if len(shown) == 1 else shown) + "\n")
    else:
        from tidegate.cli.output import print_report
        from tidegate.cli.runtext import landing_text

        for outcome in outcomes:
            if outcome.report is not None:
                print_report(outcome.report, False)
            sys.stdout.write(landing_text(outcome.as_dict()))
    return int(outcomes[-1].exit_code)
