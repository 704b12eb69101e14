"""AST_VALIDATE: the change may not introduce syntax errors or dangling names.

Every changed regular file of a known language (see :mod:`tidegate.validate.languages`) is
parsed with its tree-sitter grammar; Python files are parsed and compiled with this
interpreter's own parser (``ast`` + ``compile``), which is authoritative: a Python file it
accepts has no syntax error, and it catches errors tree-sitter tolerates (``f(a=1, b)``,
``print "x"``, ``return`` outside a function ...). Only problems the change *introduced*
count: the errors of the file after the change are matched against those of the file at T0
(see :func:`introduced`). Then the scope checks of :mod:`tidegate.validate.scope` run on
files that parse.

Never held against the change, but reported as notes: unknown languages, binary or
non-UTF-8 content, files over :data:`MAX_BYTES`, Python syntax that this interpreter is too
old for (PEP 695 type parameters, PEP 701 f-strings, PEP 758 ``except A, B``, t-strings)
when tree-sitter accepts it, and errors in templated YAML (``{{ }}``, ``{% %}``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from tidegate.git.command import Git
from tidegate.validate.languages import (
    JAVASCRIPT,
    PYTHON,
    TSX,
    TYPESCRIPT,
    detect_language,
    parser_for,
)
from tidegate.validate.scope.lines import LineDiff
from tidegate.validate.scope.problem import ScopeProblem
from tidegate.validate.scope.python import python_scope_problems
from tidegate.validate.syntax.introduced import introduced
from tidegate.validate.syntax.issue import SyntaxIssue
from tidegate.validate.syntax.parse import BOM, Parsed, analyse, is_declaration_file
from tidegate.workspace.changes import PathChange

if TYPE_CHECKING:
    from tree_sitter import Tree

MAX_BYTES = 8 * 1024 * 1024  # larger files are not parsed (a note says so)
MAX_ERRORS_PER_FILE = 10  # syntax errors listed per file; the first says how many more


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# One file, and the whole change


class FileReport(msgspec.Struct):
    path: str
    language: str | None
    parsed: bool = False
    problems: list[str] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)


class _Before:
    """The T0 content of a file, loaded on first use (most files never need it)."""

    def __init__(self, load: Callable[[], bytes | None]) -> None:
        self._load = load
        self._loaded = False
        self._data: bytes | None = None
        self.seconds = 0.0  # time spent loading, excluded from parse times

    def get(self) -> bytes | None:
        if not self._loaded:
            start = time.perf_counter()
            data = self._load()
            self.seconds += time.perf_counter() - start
            self._data = data[len(BOM) :] if data and data.startswith(BOM) else data
            if self._data is not None and not _is_text(self._data):
                self._data = None  # binary at T0: judge the text version as a new file
            self._loaded = True
        return self._data


def check_file(path: str, before: bytes | None, after: bytes) -> FileReport:
    """Syntax and scope problems the change from ``before`` (None: a new file) to ``after``
    introduced in ``path``, each formatted ``path:line:col: message``."""
    return _check_file(path, after, _Before(lambda: before))


def _check_file(path: str, after: bytes, before: _Before) -> FileReport:
    language = detect_language(path)
    report = FileReport(path, language)
    if language is None:
        report.notes.append(f"{path}: not parsed: unknown language")
        return report
    if len(after) > MAX_BYTES:
        report.notes.append(f"{path}: not parsed: larger than {MAX_BYTES // 2**20} MiB")
        return report
    if not _is_text(after):
        report.notes.append(f"{path}: not parsed: binary or not UTF-8 ({language})")
        return report
    report.parsed = True
    parsed = analyse(language, after)
    if is_declaration_file(path) and parsed.issues:
        doubt = "tree-sitter-typescript does not know all declaration-file syntax"
        parsed.issues = [
            SyntaxIssue(i.line, i.column, i.message, i.text, i.doubt or doubt, i.end_line)
            for i in parsed.issues
        ]
    for issue in parsed.issues:
        if issue.doubt:
            report.notes.append(
                f"{path}:{issue.line}:{issue.column}: not counted ({issue.doubt}): "
                f"{issue.describe()}"
            )

    if any(not issue.doubt for issue in parsed.issues):
        _report_syntax(report, language, parsed, before)
        return report  # a file with errors gets no scope check
    _report_scope(report, language, parsed, before)
    return report


def _report_syntax(report: FileReport, language: str, parsed: Parsed, before: _Before) -> None:
    """Add the syntax errors the change introduced (at most MAX_ERRORS_PER_FILE)."""
    path = report.path
    old = before.get()
    if old is None:
        new = introduced(None, parsed.issues, LineDiff.of(None, parsed.lines))
    else:
        old_parsed = analyse(language, old)
        diff = LineDiff.of(old_parsed.lines, parsed.lines)
        new = introduced(old_parsed.issues, parsed.issues, diff)
        if not new and parsed.fallback:
            old_all = old_parsed.issues + old_parsed.fallback
            new = introduced(old_all, parsed.fallback, diff)
    shown = new[:MAX_ERRORS_PER_FILE]
    for i, issue in enumerate(shown):
        more = len(new) - len(shown)
        suffix = f" (and {more} more syntax errors in this file)" if more and i == 0 else ""
        report.problems.append(f"{path}:{issue.line}:{issue.column}: {issue.describe()}{suffix}")


def _report_scope(report: FileReport, language: str, parsed: Parsed, before: _Before) -> None:
    """Add the scope problems the change introduced in a file that parses."""
    path = report.path
    problems: list[ScopeProblem] = []
    if language == PYTHON and parsed.module is not None:
        problems, notes = python_scope_problems(before.get, parsed.module, parsed.lines)
        report.notes += [f"{path}: {note}" for note in notes]
    elif language in (JAVASCRIPT, TYPESCRIPT, TSX) and parsed.tree is not None:
        from tidegate.validate.scope.javascript import is_module_path, js_scope_problems

        def before_tree() -> Tree | None:
            old = before.get()
            if old is None:
                return None
            tree = parser_for(language).parse(old)
            return None if tree.root_node.has_error else tree

        problems = js_scope_problems(before_tree, parsed.tree, is_module_path(path))
    report.problems += [f"{path}:{p.line}:{p.column}: {p.message}" for p in problems]


class SyntaxReport(msgspec.Struct):
    """What AST_VALIDATE found: ``problems`` reject the change, ``notes`` do not."""

    problems: list[str] = msgspec.field(default_factory=list)
    checked: int = 0
    notes: list[str] = msgspec.field(default_factory=list)
    parse_ms: dict[str, float] = msgspec.field(default_factory=dict)


def _blob_loader(git: Git, blob: str | None) -> Callable[[], bytes | None]:
    def load() -> bytes | None:
        return None if blob is None else git.blob_bytes(blob)

    return load


def check_change(git: Git, changes: list[PathChange]) -> SyntaxReport:
    """Check every changed regular file of the candidate (deleted paths, symlinks and
    submodules are skipped). Files are visited in path order, so the report is deterministic.
    ``parse_ms`` is the time spent parsing and checking each parsed file, git excluded.

    The new contents are read in one batch; a file's T0 content is read only when needed
    (the new version has a syntax error, or reads a name it does not define)."""
    report = SyntaxReport()
    wanted = [
        change
        for change in sorted(changes, key=lambda c: c.path)
        if change.after is not None and change.after.is_regular
    ]
    known = [c.after.blob for c in wanted if c.after and detect_language(c.path) is not None]
    contents = git.read_blobs(known)  # one git process for every file to parse
    for change in wanted:
        after = change.after
        assert after is not None
        if detect_language(change.path) is None:
            report.notes.append(f"{change.path}: not parsed: unknown language")
            continue
        data = contents[after.blob]
        old = change.before
        before = _Before(
            _blob_loader(git, old.blob if old is not None and old.is_regular else None)
        )
        start = time.perf_counter()
        result = _check_file(change.path, data, before)
        elapsed = time.perf_counter() - start - before.seconds
        if result.parsed:
            report.checked += 1
            report.parse_ms[change.path] = round(elapsed * 1000, 3)
        report.problems += result.problems
        report.notes += result.notes
    return report
