"""The fast path: ``tidegate --help``, ``runs``, ``read`` and ``completion`` without typer.

typer, click and rich take longer to import than these commands take to run. ``dispatch``
answers the plain forms of the three itself (and ``completion``, and a command line
whose command or sub-command is mistyped: ``cli.completion``) and returns None for
anything else (another command, a subcommand's ``--help``, an unusual or invalid option),
which the typer application then handles, parser error messages included. The output is the same either
way: the help text below is what typer renders (tests/e2e/test_startup.py compares them),
``runs``/``read`` are the typer commands' own bodies (``tidegate.cli.records``), and an
error is reported as every command reports one (``cli.runcmd.guarded``).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # as in tidegate.cli: the help path does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence

HELP = """\
Usage: tidegate [OPTIONS] COMMAND [ARGS]...

  Apply AI-proposed changes to your git repository safely: shadow worktree,
  verification, retries, and a three-way merge back that never touches your
  index.

Options:
  --version   Show the version and exit.
  -h, --help  Show this message and exit.

Commands:
  run                   Propose, verify in a shadow worktree, and merge...
  review                Review only: run the checks in a shadow and...
  debug                 Review and analyse first, then run the patch cycle.
  recover               Finish (or --rollback) apply-backs a crash...
  gc                    Prune runs past retention ([retention] runs,...
  runs                  List recorded runs, newest first (read-only; a...
  status                List the runs alive in this repository now:...
  read                  Show a recorded run: report, phases, attempts,...
  resume                Continue a paused or interrupted run from its...
  diff                  Show a recorded run's change as a diff (through...
  apply                 Land a held run's verified change (`run --hold`)...
  discard               Drop a held run's change; it can no longer be...
  undo                  Reverse an applied run's change with a three-way...
  init                  Write .tidegate/config.toml (yours, untracked),...
  completion            Print a shell completion script: bash, zsh or fish.
  inspect               Browse recorded runs in a read-only local web page.
  acp                   Drive guarded runs from an editor over ACP (stdio).
  ledger                Resumable task loops kept in markdown files:...
  tools                 The canonical tools: list them, call one with...
  mcp                   Serve the tools to an MCP client.
  gym                   Benchmark scenarios: the same tasks, the same...
  export                Export a recorded run to other tools.
  bootstrap             Run an identity's mode with explicit values.
  engineer              One bounded, verified engineer action; its audit...
  meeting               Capture meeting decisions and goals; read the...
  goal-curation         Curate the goal register; read it.
  improvement-curation  Approve or defer review proposals; read them.
"""
"""The top-level help as typer renders it at 80 columns or more (click wraps at 78)."""

HELP_MIN_COLUMNS = 80

_VALUED = {"--repo", "--state-root", "--limit"}
_FLAGS = {"--json", "--detail"}


def dispatch(args: Sequence[str]) -> int | None:
    """Run ``args`` here when they are a plain --help, runs or read; None: not handled."""
    if not args or list(args) in (["--help"], ["-h"]):
        return _help()
    if list(args) == ["--version"]:
        from importlib.metadata import version

        sys.stdout.write(f"tidegate {version('tidegate')}\n")
        return 0
    command, rest = args[0], args[1:]
    if command not in ("runs", "read"):
        return _completion(command, rest)
    parsed = _options(rest, valued=_VALUED - ({"--limit"} if command == "read" else set()))
    if parsed is None:
        return None
    options, positional = parsed
    import signal

    signal.signal(signal.SIGTERM, _terminate)  # as the typer path: SIGTERM ends like Ctrl-C
    try:
        if command == "runs":
            return _runs(options, positional)
        return _read(options, positional)
    except Exception as exc:
        # One line on stderr and the exit code, as every command reports an error (nothing
        # was printed yet: both commands gather everything before they print).
        from tidegate.cli.runcmd import guarded

        error = exc

        def failed() -> int:
            raise error

        return guarded(failed)
    except KeyboardInterrupt:
        sys.stderr.write(
            "tidegate: interrupted (an apply-back is never left half-done; see git status)\n"
        )
        return 130


def _completion(command: str, rest: Sequence[str]) -> int | None:
    """``completion SHELL``, the scripts' ``__complete``, and the one line for a mistyped
    command (or sub-command); None for anything else."""
    from tidegate.cli.groups import ENGINE_COMMANDS

    if command in ENGINE_COMMANDS:
        return None  # no sub-commands: every word after it is the command's to parse
    from tidegate.cli.completion import SHELLS, complete_command, misspelt, script

    if command == "__complete":
        return complete_command(rest)
    if command == "completion" and len(rest) == 1 and rest[0] in SHELLS:
        sys.stdout.write(script(rest[0]))
        return 0
    unknown = misspelt([command, *rest])
    if unknown is None:
        return None
    sys.stderr.write(unknown + "\n")
    return 2


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _help() -> int | None:
    if _columns() < HELP_MIN_COLUMNS:
        return None  # click wraps narrower: let it
    sys.stdout.write(HELP)
    return 0


def _columns() -> int:
    """The width click wraps help to, as ``shutil.get_terminal_size`` finds it (``COLUMNS``,
    else the terminal, else 80), without importing shutil (and its compression modules)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _options(
    rest: Sequence[str], valued: set[str]
) -> tuple[dict[str, str | bool], list[str]] | None:
    """``--name value``, ``--name=value`` and flags, each at most once; None for anything
    else (typer then parses it, and reports what is wrong)."""
    options: dict[str, str | bool] = {}
    positional: list[str] = []
    items = list(rest)
    while items:
        item = items.pop(0)
        name, eq, value = item.partition("=")
        if name in valued and name not in options:
            if not eq:
                if not items or items[0].startswith("-"):
                    return None
                value = items.pop(0)
            options[name] = value
        elif item in _FLAGS and item not in options:
            options[item] = True
        elif item.startswith("-") or positional:
            return None
        else:
            positional.append(item)
    return options, positional


def _runs(options: dict[str, str | bool], positional: list[str]) -> int | None:
    from tidegate.text.numbers import whole_number

    limit = whole_number(str(options.get("--limit", "20")), 1)
    if positional or limit is None or "--detail" in options:
        return None
    from tidegate.cli.records import runs_output

    repo, root = _text(options.get("--repo")), _text(options.get("--state-root"))
    sys.stdout.write(runs_output(repo, root, limit, bool(options.get("--json"))))
    return 0


def _read(options: dict[str, str | bool], positional: list[str]) -> int | None:
    if len(positional) != 1:
        return None
    from tidegate.cli.records import read_output

    repo, root = str(options.get("--repo", ".")), _text(options.get("--state-root"))
    json_, detail = bool(options.get("--json")), bool(options.get("--detail"))
    sys.stdout.write(read_output(positional[0], repo, root, json_, detail))
    return 0


def _text(value: str | bool | None) -> str | None:
    return None if value is None else str(value)
