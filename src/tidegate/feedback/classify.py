"""Classifying a failed verification and shrinking its output into feedback.

A first version: it recognises pytest failures, Python syntax errors, compiler-style
``file:line: error:`` diagnostics, lint-style ``file:line:col: CODE`` diagnostics, missing
commands and modules. Everything else is LOGIC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tidegate.errors import ErrorClass
from tidegate.exec.runner import CommandResult

FEEDBACK_LIMIT = 4000

_PYTEST_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+|\S+\.py)", re.MULTILINE)
_PY_LOCATION = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.MULTILINE)
_PYTEST_LOCATION = re.compile(r"^(\S+\.py):(\d+): (\w+)", re.MULTILINE)
_COMPILER = re.compile(r"^(\S+?):(\d+):(?:\d+:)? error: (.+)$", re.MULTILINE)
_LINT = re.compile(r"^(\S+?):(\d+):(\d+): ([A-Z]+\d+) (.+)$", re.MULTILINE)
_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '?([\w.]+)'?")
_NOT_FOUND = re.compile(r"(?:command not found|: not found|No such file or directory)")


@dataclass
class Diagnosis:
    error_class: ErrorClass
    summary: str
    failing_tests: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    feedback: str = ""


def diagnose(command: str, result: CommandResult) -> Diagnosis:
    out = result.combined_tail
    if result.timed_out:
        diag = Diagnosis(
            ErrorClass.LOGIC, f"`{command}` did not finish within {result.duration_s:.0f}s"
        )
    elif result.exit_code in (126, 127) and _NOT_FOUND.search(out):
        diag = Diagnosis(ErrorClass.DEPENDENCY_ERROR, f"`{command}`: command not found")
    elif (m := _MISSING_MODULE.search(out)) is not None:
        diag = Diagnosis(ErrorClass.DEPENDENCY_ERROR, f"missing Python module {m.group(1)!r}")
    elif (tests := _unique(_PYTEST_FAILED.findall(out))) and "SyntaxError" not in out:
        diag = Diagnosis(ErrorClass.TEST, f"{len(tests)} failing test(s)", failing_tests=tests)
    elif "SyntaxError" in out or "IndentationError" in out or _COMPILER.search(out):
        diag = Diagnosis(ErrorClass.COMPILATION, "compilation or syntax error")
    elif _LINT.search(out):
        diag = Diagnosis(ErrorClass.LINT, "lint violations")
    else:
        diag = Diagnosis(ErrorClass.LOGIC, f"`{command}` exited {result.exit_code}")
    diag.locations = _locations(out)
    diag.feedback = _feedback(command, result, diag, out)
    return diag


def _locations(out: str) -> list[str]:
    found = [f"{m.group(1)}:{m.group(2)}: {m.group(3)}" for m in _COMPILER.finditer(out)]
    found += [f"{m.group(1)}:{m.group(2)}: {m.group(4)} {m.group(5)}" for m in _LINT.finditer(out)]
    found += [f"{m.group(1)}:{m.group(2)}: {m.group(3)}" for m in _PYTEST_LOCATION.finditer(out)]
    found += [
        f"{m.group(1)}:{m.group(2)}"
        for m in _PY_LOCATION.finditer(out)
        if "site-packages" not in m.group(1) and not m.group(1).startswith("<")
    ]
    return _unique(found)[:10]


def _feedback(command: str, result: CommandResult, diag: Diagnosis, out: str) -> str:
    status = "timed out" if result.timed_out else f"exited {result.exit_code}"
    parts = [
        f"Verification failed ({diag.error_class.value}): `{command}` {status}. {diag.summary}."
    ]
    if diag.failing_tests:
        parts.append("Failing tests:\n" + "\n".join(f"  {t}" for t in diag.failing_tests[:20]))
    if diag.locations:
        parts.append("First error locations:\n" + "\n".join(f"  {loc}" for loc in diag.locations))
    tail_lines = [line for line in out.splitlines() if line.strip()][-30:]
    if tail_lines:
        parts.append("Output (last lines):\n" + "\n".join(f"  {line}" for line in tail_lines))
    text = "\n".join(parts)
    return (
        text if len(text) <= FEEDBACK_LIMIT else text[: FEEDBACK_LIMIT - 20] + "\n  [feedback cut]"
    )


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
