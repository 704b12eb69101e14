"""Scope check of a changed Python file: removed definitions still used, new undefined names."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Sequence

from tidegate.validate.scope.lines import LineDiff, split_lines
from tidegate.validate.scope.problem import ScopeProblem, also_used
from tidegate.validate.scope.python_dynamic import dynamic_globals
from tidegate.validate.scope.python_names import Load, PythonNames

# Comments that silence an undefined-name report on their line: bare, or naming that check.
_SUPPRESSED = re.compile(
    rb"#\s*(noqa\b(?!:)|noqa:[^#]*F821"
    rb"|type:\s*ignore(?!\[)|type:\s*ignore\[[^\]]*name-defined"
    rb"|pyright:\s*ignore(?!\[)|pyright:\s*ignore\[[^\]]*reportUndefinedVariable)"
)


def parse_python(data: bytes) -> ast.Module | None:
    """The module's AST, or None if this interpreter cannot parse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _grouped(
    loads: list[Load], message: str, extra: dict[str, str] | None = None
) -> list[ScopeProblem]:
    by_name: dict[str, list[Load]] = {}
    for load in sorted(loads, key=lambda x: (x.line, x.column)):
        by_name.setdefault(load.name, []).append(load)
    problems = []
    for name, uses in by_name.items():
        first = uses[0]
        text = message.format(name=name) + (extra or {}).get(name, "")
        text += also_used(first.line, [use.line for use in uses])
        problems.append(ScopeProblem(first.line, first.column, text))
    return problems


def python_scope_problems(
    load_before: Callable[[], bytes | None],
    after_tree: ast.Module,
    after_lines: Sequence[bytes],
) -> tuple[list[ScopeProblem], list[str]]:
    """Scope problems the change introduced in a Python file, and notes about the check.

    ``load_before`` returns the T0 content (None for a new file); it is called only when the
    file after the change reads a name it does not bind, which valid changes rarely do.
    """
    names = PythonNames.of(after_tree)
    suppressed = {
        n for n, line in enumerate(after_lines, 1) if b"#" in line and _SUPPRESSED.search(line)
    }
    dangling = [load for load in names.module_reads() if load.line not in suppressed]
    if not dangling:
        return [], []
    dynamic = dynamic_globals(after_tree)
    if dynamic:
        return [], [f"scope not checked: the file {dynamic}"]

    before = load_before()
    before_names: PythonNames | None = None
    before_tree = parse_python(before) if before is not None else None
    if before_tree is not None:
        before_names = PythonNames.of(before_tree)
    notes: list[str] = []
    if before is not None and before_tree is None:
        notes.append("removed definitions not checked: the file did not parse at T0")

    problems: list[ScopeProblem] = []
    reported: set[str] = set()
    # (a) module-level definitions the change removed or renamed, still read
    if before_names is not None:
        gone = [load for load in dangling if load.name in before_names.module_bound]
        if gone:
            problems += _removed_still_used(gone, before_names)
            reported = {load.name for load in gone}

    # (b) names newly read on changed lines that are bound nowhere in the file
    before_lines = split_lines(before) if before is not None else None
    changed = LineDiff.of(before_lines, after_lines).changed
    new_uses = [
        load
        for load in names.undefined_reads()
        if load.line in changed and load.line not in suppressed and load.name not in reported
    ]
    if new_uses and before is not None:
        known_bad = _undefined_at_t0(new_uses, before, before_tree, before_names)
        new_uses = [load for load in new_uses if load.name not in known_bad]
    problems += _grouped(
        new_uses,
        "'{name}' is not defined: not a builtin, not imported, and not assigned "
        "anywhere in this file",
    )
    return sorted(problems), notes


def _removed_still_used(gone: list[Load], before_names: PythonNames) -> list[ScopeProblem]:
    """Check (a): one problem per module-level name of T0 that is gone but still read."""
    first_binding = before_names.module.first_binding
    origin = {load.name: f" (defined at line {first_binding[load.name]} before)" for load in gone}
    return _grouped(
        gone,
        "'{name}' is still used here, but the change removed or renamed "
        "its module-level definition",
        origin,
    )


def _undefined_at_t0(
    new_uses: list[Load],
    before: bytes,
    before_tree: ast.Module | None,
    before_names: PythonNames | None,
) -> set[str]:
    """The names among ``new_uses`` that were already undefined (or unknowable) at T0."""
    if before_names is None:  # unparseable at T0: a name already in the old text is old
        text = before.decode("utf-8", "replace")
        return {
            load.name
            for load in new_uses
            if re.search(rf"(?<![\w.]){re.escape(load.name)}(?!\w)", text)
        }
    if before_tree is not None and dynamic_globals(before_tree):  # T0 unknowable
        return {load.name for load in new_uses}
    return {load.name for load in before_names.undefined_reads()}
