"""Classifying a failed verification: parse the output into diagnostics, pick one error
class, and build the feedback for the next attempt.

The class is decided by these rules, first match wins (``rule`` on the diagnosis says
which one fired):

1. ``lock``: an error-level lock diagnostic (``Could not get lock``, ``database is
   locked``, git's ``index.lock: File exists``, npm ``ELOCKED``) -> RESOURCE_LOCK_ERROR.
2. ``lock-wait``: the output shows waiting for a lock (cargo's ``Blocking waiting for file
   lock``) and the command then timed out (or exited 124, ``timeout``'s code) or reported
   no error of its own -> RESOURCE_LOCK_ERROR.
3. ``timeout``: the command was killed at its deadline -> LOGIC.
4. ``dependency``: a missing command (exit 126/127 with the shell's message), a missing
   module or package that is not the project's own (Python ``No module named``, node
   ``Cannot find module 'pkg'``, tsc TS2307, jest, npm ``missing``/``UNMET DEPENDENCY``,
   cargo ``can't find crate``, go ``no required module provides package``/``cannot find
   package``, pip ``No matching distribution``) -> DEPENDENCY_ERROR.
5. ``crash``: the tool itself crashed (pytest INTERNALERROR, mypy INTERNAL ERROR, rustc
   internal compiler error, Fatal Python error, node heap exhaustion, segfault) -> UNKNOWN.
6. ``signal``: the command was killed by a signal (exit code 128+N from the shell, or a
   negative code) -> UNKNOWN: an out-of-memory kill or a crash is not something another
   attempt should walk into.
7. ``compilation``: syntax or type errors (mypy, tsc, rustc, go build/vet, Python
   SyntaxError anywhere, ruff ``invalid-syntax``, flake8 E999, eslint ``Parsing error``,
   jest suites that fail to parse, imports of names or project modules that do not
   exist) -> COMPILATION.
8. ``test``: failing tests (pytest, unittest, jest, go test, cargo test) -> TEST.
9. ``lint``: lint violations (ruff, flake8, eslint, clippy, formatter checks) -> LINT.
10. ``plain``: anything else, including a traceback from a plain script or a command that
    printed nothing recognisable -> LOGIC ("verification failed without specific
    framework errors").

UNKNOWN is thus reserved for failures that say nothing about the change itself: a crashed
tool or a killed process. An unrecognised failure with a normal exit code is LOGIC, so the
next attempt still gets to see the output.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path

from tidegate.errors import ErrorClass
from tidegate.exec.runner import CommandResult
from tidegate.feedback.diagnostics import Diagnosis, Diagnostic, ParseContext, clean_text
from tidegate.feedback.noise import clean_output
from tidegate.feedback.parsers import parse_output
from tidegate.feedback.shrink import DEFAULT_BUDGET_TOKENS, ReadFile, build_feedback, ranked

MAX_LOCATIONS = 10
_MAX_READ = 2 * 1024 * 1024


def classify(
    diagnostics: Sequence[Diagnostic], *, exit_code: int | None, timed_out: bool
) -> tuple[ErrorClass, str]:
    """The error class of a failure and the name of the rule that decided it."""
    errors = [d for d in diagnostics if d.severity == "error"]
    classes = {d.error_class for d in errors}
    waits = any(
        d.error_class is ErrorClass.RESOURCE_LOCK_ERROR and d.severity != "error"
        for d in diagnostics
    )
    if ErrorClass.RESOURCE_LOCK_ERROR in classes:
        return ErrorClass.RESOURCE_LOCK_ERROR, "lock"
    if waits and (timed_out or exit_code == 124 or not errors):
        return ErrorClass.RESOURCE_LOCK_ERROR, "lock-wait"
    if timed_out:
        return ErrorClass.LOGIC, "timeout"
    if ErrorClass.DEPENDENCY_ERROR in classes:
        return ErrorClass.DEPENDENCY_ERROR, "dependency"
    if ErrorClass.UNKNOWN in classes:
        return ErrorClass.UNKNOWN, "crash"
    if signal_name(exit_code) is not None:
        return ErrorClass.UNKNOWN, "signal"
    for cls, rule in (
        (ErrorClass.COMPILATION, "compilation"),
        (ErrorClass.TEST, "test"),
        (ErrorClass.LINT, "lint"),
    ):
        if cls in classes:
            return cls, rule
    return ErrorClass.LOGIC, "plain"


def signal_name(exit_code: int | None) -> str | None:
    """The signal that killed the command, from a negative code or the shell's 128+N."""
    if exit_code is None:
        return None
    number = -exit_code if exit_code < 0 else exit_code - 128 if 128 < exit_code <= 192 else 0
    if number <= 0:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def file_reader(root: Path | None) -> ReadFile:
    """A reader of files under ``root`` by relative path, refusing anything that leaves it
    (absolute paths, ``..``, symlinks pointing out) and files over 2 MiB."""

    def read(path: str) -> bytes | None:
        if root is None or not ParseContext.is_project(path):
            return None
        try:
            base = root.resolve()
            target = (root / path).resolve()
            if not target.is_relative_to(base) or not target.is_file():
                return None
            if target.stat().st_size > _MAX_READ:
                return None
            return target.read_bytes()
        except OSError:
            return None

    return read


def diagnose(
    command: str,
    result: CommandResult,
    root: Path | None = None,
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
) -> Diagnosis:
    """Classify a failed ``result`` of ``command`` and build its feedback.

    ``root`` is the folder the command ran in (the shadow): paths in the output are made
    relative to it, excerpts are read from it, and a missing module that is part of the
    project counts as a code error rather than a missing dependency.
    """
    ctx = ParseContext(root=root, command=command, exit_code=result.exit_code)
    text = result.combined_tail
    diags = parse_output(text, ctx)
    error_class, rule = classify(diags, exit_code=result.exit_code, timed_out=result.timed_out)
    diagnosis = Diagnosis(
        error_class=error_class,
        summary="",
        diagnostics=diags,
        tools=list(dict.fromkeys(d.tool for d in diags)),
        command=command,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        output=clean_output(clean_text(text), ctx),
        rule=rule,
    )
    shown = ranked(diagnosis)
    diagnosis.failing_tests = list(dict.fromkeys(d.test_id for d in diags if d.test_id))
    diagnosis.locations = _locations(shown)
    diagnosis.files_involved = _files(shown, root)
    diagnosis.summary = _summary(diagnosis, shown, result)
    diagnosis.feedback = build_feedback(diagnosis, file_reader(root), budget_tokens)
    return diagnosis


def _message(d: Diagnostic) -> str:
    msg = d.message
    if d.code and not msg.startswith(d.code):
        msg = f"{d.code} {msg}" if d.code[:1].isupper() and d.code[-1:].isdigit() else msg
    return msg.splitlines()[0] if msg else ""


def _locations(shown: list[Diagnostic]) -> list[str]:
    found = [f"{d.path}:{d.line}: {_message(d)}" for d in shown if d.path and d.line]
    return list(dict.fromkeys(found))[:MAX_LOCATIONS]


def _files(shown: list[Diagnostic], root: Path | None) -> list[str]:
    paths: list[str] = []
    for d in shown:
        if d.path:
            paths.append(d.path)
        paths.extend(p for p, _ in d.trace)
    files = [p for p in dict.fromkeys(paths) if ParseContext.is_project(p)]
    if root is not None:
        files = [p for p in files if (root / p).is_file()]
    return files


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _summary(diagnosis: Diagnosis, shown: list[Diagnostic], result: CommandResult) -> str:
    cls = diagnosis.error_class
    mine = [d for d in shown if d.error_class is cls and d.severity == "error"]
    tools = ", ".join(dict.fromkeys(d.tool for d in mine))
    first = mine[0] if mine else None
    where = f" at {first.location}" if first is not None and first.location else ""
    if diagnosis.rule == "timeout":
        return f"`{diagnosis.command}` did not finish within {result.duration_s:.0f}s"
    if diagnosis.rule == "signal":
        return f"`{diagnosis.command}` was killed by {signal_name(result.exit_code)}"
    if diagnosis.rule == "plain":
        text = f"`{diagnosis.command}` exited {result.exit_code}"
        logic = next((d for d in shown if d.error_class is ErrorClass.LOGIC), None)
        if logic is not None:
            loc = f" at {logic.location}" if logic.location else ""
            text += f": {_short(logic.message, 120)}{loc}"
        return text
    if first is None:  # lock-wait without an error diagnostic
        waits = [d for d in diagnosis.diagnostics if d.error_class is cls]
        return f"lock contention: {_short(waits[0].message)}" if waits else cls.value
    if cls is ErrorClass.TEST:
        ids = list(dict.fromkeys(d.test_id for d in mine if d.test_id))
        if not ids:
            return f"test failure ({tools}): {_short(_message(first), 120)}{where}"
        listed = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
        plural = "s" if len(ids) != 1 else ""
        return f"{len(ids)} failing test{plural} ({tools}): {listed}"
    if cls is ErrorClass.RESOURCE_LOCK_ERROR:
        return f"lock contention: {_short(first.message)}"
    if cls is ErrorClass.DEPENDENCY_ERROR:
        return f"missing dependency: {_short(first.message, 120)}{where}"
    if cls is ErrorClass.UNKNOWN:
        return f"the tool crashed: {_short(first.message, 120)}"
    noun = {ErrorClass.COMPILATION: "compile error", ErrorClass.LINT: "lint violation"}.get(
        cls, "error"
    )
    n = len(mine)
    return f"{n} {noun}{'s' if n != 1 else ''} ({tools}): {_short(_message(first), 120)}{where}"
