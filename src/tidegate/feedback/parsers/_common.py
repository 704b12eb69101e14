"""Helpers several parsers share: Python exception names, missing-module rules, message
normalisation."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import ParseContext

# An exception line of a Python traceback: ``ValueError: boom``, ``sqlite3.OperationalError``.
PY_EXCEPTION = re.compile(
    r"^(?P<exc>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure)"
    r"|Failed|KeyboardInterrupt|StopIteration|GeneratorExit))(?::\s?(?P<msg>.*))?$"
)
PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
NO_MODULE = re.compile(r"No module named '?(?P<module>[\w.]+)'?")
_SYNTAX = frozenset({"SyntaxError", "IndentationError", "TabError"})
_IMPORT = frozenset({"ModuleNotFoundError", "ImportError"})
_HEX = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def python_exception_class(
    ctx: ParseContext, exc: str | None, message: str, default: ErrorClass
) -> ErrorClass:
    """The class a Python exception points to.

    Syntax errors are COMPILATION. ``No module named X`` is DEPENDENCY_ERROR, unless X is
    part of the project or the standard library (then the code imports something that does
    not exist: COMPILATION). ``cannot import name`` is COMPILATION: the code asks a module
    for a name it does not have.
    """
    name = (exc or "").rsplit(".", 1)[-1]
    if name in _SYNTAX:
        return ErrorClass.COMPILATION
    if name in _IMPORT:
        m = NO_MODULE.search(message)
        if m is None:
            return ErrorClass.COMPILATION
        return missing_python_module_class(ctx, m.group("module"))
    return default


def missing_python_module_class(ctx: ParseContext, module: str) -> ErrorClass:
    if ctx.python_module_is_local(module):
        return ErrorClass.COMPILATION
    return ErrorClass.DEPENDENCY_ERROR


def js_module_class(specifier: str) -> ErrorClass:
    """``Cannot find module 'x'``: a relative or absolute specifier is the project's own
    file (COMPILATION); a bare package name is a missing dependency."""
    if specifier.startswith((".", "/")):
        return ErrorClass.COMPILATION
    return ErrorClass.DEPENDENCY_ERROR


def stable(text: str) -> str:
    """Remove what changes between two runs of the same failure: object addresses."""
    return _HEX.sub("0x…", text)


def to_int(value: str | None) -> int | None:
    return int(value) if value else None
