"""``tidegate run|review|debug``: the command's body, and a parser for its plain forms that
needs no typer.

Importing typer and building the engine's typer application is ~40 ms of every run's
start, spent while nothing else can happen on that core. ``dispatch`` parses the forms a
user and a script type (long options, ``--opt VALUE`` or ``--opt=VALUE``, values that need
no conversion click would do differently) and runs the command; for anything else (help,
an unknown or misspelt option, a value it is not sure it reads as click does, a positional
argument) it returns None *before doing anything*, and the typer application parses the
command line instead, with its own error lines and exit codes. Both paths call the same
``run_command`` with the same values (``tests/e2e/test_run_parse.py`` compares them).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidegate.cli.output import print_report
from tidegate.cli.run_parse import DEFAULTS, REBASES, parse
from tidegate.errors import PersistenceError, TidegateError, UsageError, missing_extra
from tidegate.records.modes import DEFAULT_VERIFY_TIMEOUT_S, Mode
from tidegate.text.paths import is_utf8
from tidegate.text.sanitize import sanitize

if TYPE_CHECKING:
    from collections.abc import Callable

    from tidegate.cli.render import ProgressPrinter
    from tidegate.export.live import LiveExport
    from tidegate.records.report import FlowReport
    from tidegate.store import RunStore, StoreRecorder

EXIT_USAGE = 2
EXIT_FINDINGS = 1
finished_cleanly = False
"""Set once a run's body has closed its store and printed its report: the console script
may then end the process without the interpreter's teardown (``tidegate.cli.entry``)."""


def dispatch(args: list[str]) -> int | None:
    """Run ``tidegate ARGS`` when ``parse`` reads it; None: the typer application should."""
    values = parse(args)
    if values is None:
        return None
    command = args[0]
    signal.signal(signal.SIGTERM, terminate)  # as the typer path: SIGTERM ends like Ctrl-C
    from tidegate.flow import headstart

    if values.get("review") and not sys.stdin.isatty():
        return guarded(lambda: invoke(command, values))  # refused before any work
    # The run's first git work (lock, T0's scan) goes on while the engine is imported.
    headstart.begin(
        values.get("repo", DEFAULTS["repo"]),
        warm=values.get("warm_shadow", False),
        probe=None
        if not values.get("verify")
        else "overlay"
        if values.get("containment") == "none"
        else "bubblewrap",
    )
    try:
        return guarded(lambda: invoke(command, values))
    finally:
        headstart.discard()  # not adopted: the command was refused before its run


def invoke(command: str, values: dict[str, Any]) -> int:
    """The command's body for ``values`` named as the typer command's parameters (its
    ``locals()``, or ``parse``'s result)."""
    from tidegate.flow.request import absolute_script

    p = {**DEFAULTS, **values}
    if p["review"]:
        from tidegate.cli.landing import require_terminal

        require_terminal("--review", p["as_json"])
    fields: dict[str, Any] = {
        "repo": p["repo"],
        "verify": p.get("verify"),
        "planner": absolute_script(p["planner"]),
        "verify_timeout_s": p["verify_timeout"],
        "warm_shadow": p["warm_shadow"],
        "network": p["network"],
        "containment": p.get("containment"),
        "model": absolute_script(p.get("model")),
        "max_cost_usd": p.get("max_cost"),
        "max_steps": p.get("max_steps"),
    }
    if command == "review":
        mode, fields["max_attempts"] = Mode.REVIEW, 1
    else:
        mode = Mode.DEBUG if command == "debug" else Mode(p["mode"])
        fields.update(
            max_attempts=p["max_attempts"],
            keep_shadow=p["keep_shadow"],
            hold=p["hold"] or p["review"],
            rebase=REBASES if p["rebase"] else 0,
            agent=p.get("agent"),
            agent_model=p.get("agent_model"),
            sub_agents=tuple(p.get("sub_agent") or ()),
        )
    # a review fails on its error findings, as a linter does (``run --mode review`` too)
    fail_on = (p.get("fail_on") or "error") if mode is Mode.REVIEW else "never"
    return run_command(
        mode,
        p.get("objective"),
        p.get("objective_file"),
        p["as_json"],
        p.get("state_root"),
        otlp=p.get("otlp"),
        fail_on=fail_on,
        review=p["review"] and mode is not Mode.REVIEW,
        **fields,
    )


def run_command(
    mode: Mode,
    objective: str | None,
    objective_file: Path | None,
    as_json: bool,
    state_root: str | None,
    otlp: str | None = None,
    fail_on: str = "never",
    review: bool = False,
    **fields: Any,
) -> int:
    """Build the request (``fields`` are RunRequest fields), run it, record it, render it;
    the exit code. ``otlp``: send the run's spans there as it goes (``export.live``);
    ``review``: a held change's files are then asked about (``cli.landing``)."""
    from tidegate.flow.transaction import execute
    from tidegate.planners import planner_for
    from tidegate.records.request import RunRequest
    from tidegate.store import StoreRecorder

    text, base, source = objective_text(objective, objective_file, required=mode is not Mode.REVIEW)
    fields = default_verify(fields)
    request = RunRequest(
        mode=mode, objective=text, objective_base=base, objective_source=source, **fields
    )
    if otlp is not None:  # no extra, a bad URL: refused before the run
        from tidegate.export.otel import require_sdk, traces_url

        require_sdk()
        traces_url(otlp)
    store = open_store(request.repo, state_root)
    observer = progress_observer(as_json)
    recorder = StoreRecorder(store)
    live = None if otlp is None else _live_export(store, recorder, otlp)
    planner = planner_for(request, recorder=recorder) if request.model or request.agent else None
    if observer is not None and hasattr(planner, "progress"):
        planner.progress = observer.activity  # type: ignore[union-attr]
    failure = None
    try:
        report = execute(request, observer=observer, planner=planner, recorder=recorder)
    finally:
        getattr(planner, "close", lambda: None)()
        if live is not None:
            failure = live.close()  # the last spans, while the store is still open
        store.close()  # checkpoints SQLite's WAL into the store file: nothing is left to exit
    if failure is not None:
        sys.stderr.write(sanitize(f"tidegate: warning: live export stopped: {failure}") + "\n")
    print_report(report, as_json, with_diff=not review)
    if review and report.status == "held":
        from tidegate.cli.landing import review_held

        return review_held(request.repo, state_root, report.run_id)
    global finished_cleanly
    finished_cleanly = True
    return findings_exit(report, fail_on)


def findings_exit(report: FlowReport, fail_on: str) -> int:
    """The run's exit code; a review that finished with a finding at ``fail_on`` or worse
    exits 1, as a linter does (``never``: only a failed review does)."""
    if report.exit_code != 0 or fail_on == "never":
        return report.exit_code
    counted = ("error",) if fail_on == "error" else ("error", "warning")
    failing = [f for f in report.findings if f.severity in counted]
    if failing:
        sys.stderr.write(
            f"tidegate: {len(failing)} finding(s) of severity {' or '.join(counted)} "
            f"(--fail-on {fail_on})\n"
        )
        return EXIT_FINDINGS
    return 0


def default_verify(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with the verify command chosen (``tidegate.config.verify``): ``--verify
    none``, else the given one, else the configuration's or a detected one with its origin
    and a note, shown on stderr before the run."""
    from tidegate.config import load_policy
    from tidegate.config.verify import choose_verify
    from tidegate.flow import headstart
    from tidegate.workspace.repo import discover

    repo = headstart.repository(fields["repo"]) or discover(fields["repo"])
    loaded = load_policy(repo.root)
    choice = choose_verify(fields.get("verify"), repo.root, loaded)
    timeout = fields.get("verify_timeout_s")
    if timeout is None:
        timeout = loaded.config.run.verify_timeout or DEFAULT_VERIFY_TIMEOUT_S
    if choice.note is not None and choice.command is not None:
        sys.stderr.write(sanitize(f"tidegate: note: {choice.note}") + "\n")
    notes = () if choice.note is None else (choice.note,)
    chosen = {"verify": choice.command, "origin": choice.origin, "notes": notes}
    return {**fields, **chosen, "verify_timeout_s": timeout}


def _live_export(store: RunStore, recorder: StoreRecorder, endpoint: str) -> LiveExport:
    """``tidegate.export.live`` on this run's store, following the run the recorder begins."""
    from tidegate.export.live import LiveExport

    def run_id() -> str | None:
        trace = getattr(recorder, "trace", None)
        return None if trace is None else str(trace.run_id)

    return LiveExport(store.path, store.key, endpoint, run_id).start()


def objective_text(
    objective: str | None, objective_file: Path | None, required: bool
) -> tuple[str, Path, str]:
    """The objective text, the directory its relative paths start from, and its name."""
    if objective is not None and objective_file is not None:
        raise UsageError("give only one of --objective and --objective-file")
    if objective is None and objective_file is None:
        if required:
            raise UsageError("give one of --objective and --objective-file")
        return "", Path.cwd(), "objective"
    if objective is not None:
        if not is_utf8(objective):  # argv bytes that are not UTF-8 arrive as surrogates
            raise UsageError("--objective: not UTF-8 text")
        return objective, Path.cwd(), "objective"
    assert objective_file is not None
    if str(objective_file) == "-":
        try:
            return sys.stdin.buffer.read().decode("utf-8"), Path.cwd(), "stdin"
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"--objective-file -: stdin is not UTF-8 text (byte {exc.start})"
            ) from exc
    try:
        text = objective_file.read_bytes().decode("utf-8")  # bytes: keep CRLF exactly
        return text, objective_file.resolve().parent, str(objective_file)
    except OSError as exc:
        raise UsageError(f"--objective-file {objective_file}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"--objective-file {objective_file}: not UTF-8 text") from exc


def open_store(repo: Path, state_root: str | None) -> RunStore:
    """The repository's run store, after validating the state root (before any run)."""
    from tidegate.flow import headstart
    from tidegate.store import open_run_store

    return open_run_store(repo, state_root, repo=headstart.repository(repo))


def progress_observer(as_json: bool) -> ProgressPrinter | None:
    """Phase lines on stderr; none with --json, which so never loads rich."""
    if as_json:
        return None
    from tidegate.cli.render import ProgressPrinter, console

    return ProgressPrinter(console(stderr=True))


def guarded(body: Callable[[], int]) -> int:
    """``body()``, with every error the engine raises turned into one line on stderr and
    its exit code (the typer application's parser errors are its own)."""
    try:
        return body()
    except KeyboardInterrupt:
        sys.stderr.write(
            "tidegate: interrupted (an apply-back is never left half-done; see git status)\n"
        )
        return 130
    except UsageError as exc:
        sys.stderr.write(sanitize(f"tidegate: error: {exc}") + "\n")
        return EXIT_USAGE
    except PersistenceError as exc:
        sys.stderr.write(sanitize(f"tidegate: error: PERSISTENCE_ERROR: {exc}") + "\n")
        return 1
    except TidegateError as exc:
        sys.stderr.write(sanitize(f"tidegate: error: {exc}") + "\n")
        return int(getattr(exc, "exit_code", 1))
    except ModuleNotFoundError as exc:
        needed = missing_extra(exc)
        if needed is None:
            raise
        sys.stderr.write(f"tidegate: error: {needed}\n")
        return EXIT_USAGE
    except Exception as exc:
        problem = _bad_field(exc)
        if problem is None:
            raise
        sys.stderr.write(sanitize(f"tidegate: error: {problem}") + "\n")
        return EXIT_USAGE


def _bad_field(exc: Exception) -> str | None:
    """``where: what`` for a bad request field (a ``CheckError``, or pydantic's
    ValidationError from a model's settings), without importing either module for commands
    that never loaded it; None for any other exception."""
    checked = sys.modules.get("tidegate.records.checked")
    if checked is not None and isinstance(exc, checked.CheckError):
        return str(exc)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        first = exc.errors()[0]
        return ".".join(str(p) for p in first["loc"]) + f": {first['msg']}"
    return None


def terminate(signum: int, frame: object) -> None:
    # Unwind normally so the shadow worktree and the lock are cleaned up.
    raise KeyboardInterrupt
