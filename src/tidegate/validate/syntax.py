"""Syntax checks of the candidate: a change may not break a file that parsed at T0.

A first version covering Python (``ast``) and JSON; files that did not parse at T0 are
not held against the change.
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Callable

from tidegate.git import Git
from tidegate.workspace.changes import PathChange

Checker = Callable[[bytes], str | None]


def _python(data: bytes) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(data)
    except SyntaxError as exc:
        return f"{exc.lineno}: {exc.msg}"
    except ValueError as exc:  # NUL bytes
        return str(exc)
    return None


def _json(data: bytes) -> str | None:
    try:
        json.loads(data)
    except ValueError as exc:
        return str(exc)
    return None


CHECKERS: dict[str, Checker] = {".py": _python, ".pyi": _python, ".json": _json}


def check_syntax(git: Git, changes: list[PathChange]) -> tuple[list[str], int]:
    """Problems introduced by the change, and how many files were checked."""
    problems: list[str] = []
    checked = 0
    for change in changes:
        suffix = "." + change.path.rsplit(".", 1)[-1] if "." in change.path else ""
        checker = CHECKERS.get(suffix)
        if checker is None or change.after is None or not change.after.is_regular:
            continue
        checked += 1
        error = checker(git.blob_bytes(change.after.blob))
        if error is None:
            continue
        before = change.before
        if before is not None and before.is_regular and checker(git.blob_bytes(before.blob)):
            continue  # already broken at T0
        problems.append(f"{change.path}:{error}")
    return problems, checked
