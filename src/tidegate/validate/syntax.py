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

import ast
import json
import re
import sys
import time
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node, Tree

from tidegate.git import Git
from tidegate.text.jsonparse import JSONTooDeep, parse_json
from tidegate.validate.languages import (
    JAVASCRIPT,
    JSON,
    JSONC,
    PYTHON,
    TOML,
    TSX,
    TYPESCRIPT,
    YAML,
    detect_language,
    parser_for,
)
from tidegate.validate.scope import (
    LineDiff,
    ScopeProblem,
    is_module_path,
    js_scope_problems,
    python_scope_problems,
    scope_problems,
    split_lines,
)
from tidegate.workspace.changes import PathChange

__all__ = [
    "FileReport",
    "ScopeProblem",
    "SyntaxIssue",
    "SyntaxReport",
    "check_change",
    "check_file",
    "introduced",
    "scope_problems",
    "syntax_errors",
]

MAX_BYTES = 8 * 1024 * 1024  # larger files are not parsed (a note says so)
MAX_ERRORS_PER_FILE = 10  # syntax errors listed per file; the first says how many more
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, order=True)
class SyntaxIssue:
    """One syntax error: 1-based line and column (in characters) and what is wrong.

    ``text`` is the stripped source line, used to recognise the same error on both sides of
    the change. ``doubt`` is empty for a real error, else why it is not counted. An ERROR
    node of tree-sitter covers the lines ``line`` to ``end_line`` (what its recovery skipped).
    """

    line: int
    column: int
    message: str
    text: str = field(default="", compare=False)
    doubt: str = field(default="", compare=False)
    end_line: int = field(default=0, compare=False)  # last line of the error's extent

    @property
    def lines(self) -> range:
        return range(self.line, max(self.line, self.end_line) + 1)

    @property
    def key(self) -> str:
        """The line text without any whitespace: what identifies the error across versions."""
        return "".join(self.text.split())

    def describe(self) -> str:
        shown = self.text if len(self.text) <= 100 else self.text[:97] + "..."
        return (
            f"syntax error, {self.message}: {shown}" if shown else f"syntax error, {self.message}"
        )


@dataclass
class _Parsed:
    issues: list[SyntaxIssue]
    lines: list[bytes]
    module: ast.Module | None = None  # Python, when ast parsed and compiled it
    tree: Tree | None = None  # tree-sitter tree, when one was built
    # Python: tree-sitter's errors on other lines than ast's one, consulted only when the
    # ast error is one the file had at T0 (ast stops at the first error, which may mask a
    # new one further down; tree-sitter's recovery may also report knock-on errors).
    fallback: list[SyntaxIssue] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Parsing one side


def _line_text(lines: list[bytes], line: int) -> str:
    if 1 <= line <= len(lines):
        return lines[line - 1].decode("utf-8", "replace").strip()
    return ""


def _char_column(lines: list[bytes], row: int, byte_column: int) -> int:
    if 0 <= row < len(lines):
        return len(lines[row][:byte_column].decode("utf-8", "replace")) + 1
    return byte_column + 1


def _tree_issues(tree: Tree, lines: list[bytes]) -> list[SyntaxIssue]:
    """ERROR and MISSING nodes of a tree-sitter tree, at most one per line (the first).

    An ERROR node that contains another error is not reported itself: the innermost error is
    where the parser actually gave up, the outer one only the extent of its recovery."""
    root = tree.root_node
    if not root.has_error:
        return []
    found: list[SyntaxIssue] = []
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        row, byte_column = node.start_point
        if node.is_missing:
            what = node.type if node.is_named else f'"{node.type}"'
            message = f"missing {what}"
        elif node.is_error and any(_erroneous(child) for child in node.children):
            stack.extend(reversed(node.children))  # the nested error is the precise one
            continue
        elif node.is_error:
            snippet_bytes = (node.text or b"").split(b"\n", 1)[0]
            if not snippet_bytes.strip() and row < len(lines):  # zero-width: what follows
                snippet_bytes = lines[row][byte_column:]
            snippet = snippet_bytes.decode("utf-8", "replace").strip()
            if len(snippet) > 30:
                snippet = snippet[:27] + "..."
            message = f'unexpected "{snippet}"' if snippet else "unexpected input"
        else:
            if _erroneous(node):
                stack.extend(reversed(node.children))
            continue
        end_row, end_column = node.end_point
        if end_row > row and end_column == 0:
            end_row -= 1  # the extent ends with a line break
        found.append(
            SyntaxIssue(
                row + 1,
                _char_column(lines, row, byte_column),
                message,
                _line_text(lines, row + 1),
                end_line=end_row + 1,
            )
        )
    if not found:  # has_error without a visible error node: report the file as a whole
        found.append(SyntaxIssue(1, 1, "does not parse", _line_text(lines, 1)))
    return _first_per_line(found)


def _erroneous(node: Node) -> bool:
    return node.has_error or node.is_error or node.is_missing


def _first_per_line(issues: list[SyntaxIssue]) -> list[SyntaxIssue]:
    seen: set[int] = set()
    kept = []
    for issue in sorted(issues):
        if issue.line not in seen:
            seen.add(issue.line)
            kept.append(issue)
    return kept


# Python syntax newer than the running interpreter that tree-sitter-python knows: an ``ast``
# error inside one of these constructs may be this interpreter's age, not the change's fault.
def _newer_python_syntax(node: Node) -> str:
    kind = node.type
    version = sys.version_info
    if kind in ("function_definition", "class_definition") and version < (3, 13):
        params = node.child_by_field_name("type_parameters")
        return "type parameters (PEP 695/696)" if params is not None else ""
    if kind == "type_alias_statement" and version < (3, 12):
        return "a type statement (PEP 695)"
    if kind == "string":
        start = node.child(0)
        opening = (start.text or b"") if start is not None else b""
        prefix = opening.rstrip(b"'\"").lower()
        if b"t" in prefix and version < (3, 14):
            return "a template string (PEP 750)"
        if b"f" in prefix and version < (3, 12) and _uses_pep701(node, opening[len(prefix) :]):
            return "an f-string (PEP 701)"
    if kind == "except_clause" and version < (3, 14) and any(c.type == "," for c in node.children):
        return "except without parentheses (PEP 758)"
    return ""


def _uses_pep701(fstring: Node, quote: bytes) -> bool:
    """Whether an f-string's replacement fields use what only Python 3.12 allows: its own
    quote, a backslash, a comment, or (in a one-line string) a line break."""
    for child in fstring.children:
        if child.type != "interpolation":
            continue
        text = child.text or b""
        if quote[:1] in text or b"\\" in text or b"#" in text:
            return True
        if len(quote) == 1 and b"\n" in text:
            return True
    return False


def _newer_syntax_at(tree: Tree, line: int) -> str:
    """Why the construct covering ``line`` may be newer than this Python, or ''."""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if not node.start_point.row + 1 <= line <= node.end_point.row + 1:
            continue
        reason = _newer_python_syntax(node)
        if reason:
            return reason
        stack.extend(node.children)
    return ""


def _python(data: bytes, lines: list[bytes]) -> _Parsed:
    parsed = False  # whether the error comes from compiling, after parsing succeeded
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(data)
            parsed = True
            compile(module, "<candidate>", "exec", dont_inherit=True)
        return _Parsed([], lines, module=module)
    except SyntaxError as exc:
        line = min(max(exc.lineno or 1, 1), max(len(lines), 1))
        issue = SyntaxIssue(line, max(exc.offset or 1, 1), exc.msg, _line_text(lines, line))
    except ValueError as exc:  # NUL bytes, for callers that did not rule them out
        issue = SyntaxIssue(1, 1, str(exc), _line_text(lines, 1))
    except (RecursionError, MemoryError):
        issue = SyntaxIssue(
            1, 1, "too deeply nested for Python's parser", _line_text(lines, 1), "not parsed"
        )
        return _Parsed([issue], lines)
    tree = parser_for(PYTHON).parse(data)
    others = _tree_issues(tree, lines)
    if not others and not parsed:
        newer = _newer_syntax_at(tree, issue.line)
        if newer:
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            doubt = f"Python {version} rejects {newer}, which tree-sitter accepts"
            issue = SyntaxIssue(issue.line, issue.column, issue.message, issue.text, doubt)
    fallback = [other for other in others if other.line != issue.line]
    return _Parsed([issue], lines, tree=tree, fallback=fallback)


# JSON: comments (which tree-sitter-json accepts too) are blanked before ``json`` parses;
# in JSONC files trailing commas are blanked as well. Blanking keeps every position.
_JSON_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*[\s\S]*?\*/')
_JSON_COMMAS = re.compile(r'"(?:[^"\\\n]|\\.)*"|,(?=\s*[}\]])')
_TOML_POSITION = re.compile(r"^(.*?)\s*\(at line (\d+), column (\d+)\)$", re.DOTALL)


def _blank(match: re.Match[str]) -> str:
    token = match.group(0)
    if token.startswith('"'):
        return token
    return "".join(c if c == "\n" else " " for c in token)


def _json_issue(data: bytes, lines: list[bytes], jsonc: bool) -> SyntaxIssue | None:
    """The first error Python's ``json`` finds (after blanking what JSON files may have)."""
    text = data.decode("utf-8")
    if not text.strip():
        return None  # an empty file: tree-sitter accepts it, and so do most tools
    try:
        parse_json(text)
        return None
    except JSONTooDeep as exc:
        return _too_deep(exc.lineno, exc.colno, exc.msg, lines)
    except ValueError:
        pass
    text = _JSON_TOKENS.sub(_blank, text)
    if jsonc:
        text = _JSON_COMMAS.sub(_blank, text)
    try:
        parse_json(text)
        return None
    except JSONTooDeep as exc:
        return _too_deep(exc.lineno, exc.colno, exc.msg, lines)
    except json.JSONDecodeError as exc:
        return SyntaxIssue(exc.lineno, exc.colno, exc.msg, _line_text(lines, exc.lineno))
    except ValueError as exc:  # e.g. an integer too long to convert
        return SyntaxIssue(1, 1, str(exc), _line_text(lines, 1))


def _too_deep(line: int, column: int, message: str, lines: list[bytes]) -> SyntaxIssue:
    """Nesting too deep for Python's parser: not counted, and tree-sitter (which has no
    such limit) judges the whole file instead."""
    doubt = "too deeply nested for Python's parser; tree-sitter's verdict stands"
    return SyntaxIssue(line, column, message, _line_text(lines, line), doubt)


def _toml_issue(data: bytes, lines: list[bytes]) -> SyntaxIssue | None:
    """The first error Python's ``tomllib`` finds."""
    try:
        tomllib.loads(data.decode("utf-8"))
        return None
    except RecursionError:  # tomllib recurses once per level of nesting, without a bound
        return _too_deep(1, 1, "nested too deeply for tomllib", lines)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_POSITION.match(str(exc))
        if found is None:  # "(at end of document)"
            line = max(len(lines) - (1 if lines and not lines[-1] else 0), 1)
            message = str(exc).split(" (at ", 1)[0]
            return SyntaxIssue(line, 1, message, _line_text(lines, line))
        line, column = int(found.group(2)), int(found.group(3))
        return SyntaxIssue(line, column, found.group(1), _line_text(lines, line))


def _is_declaration_file(path: str) -> bool:
    return re.search(r"\.d\.[mc]?ts$", path, re.IGNORECASE) is not None


def _analyse(language: str, data: bytes) -> _Parsed:
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    lines = split_lines(data)
    if language == PYTHON:
        return _python(data, lines)
    primary: SyntaxIssue | None = None
    if language in (JSON, JSONC, TOML):
        # Python's own parser decides; tree-sitter only adds the errors that the first one
        # may hide (tree-sitter-json, for one, rejects the valid number 1e+5).
        if language == TOML:
            primary = _toml_issue(data, lines)
        else:
            primary = _json_issue(data, lines, jsonc=language == JSONC)
        if primary is None:
            return _Parsed([], lines)
    source = data
    if language == JSONC:
        source = _JSON_COMMAS.sub(_blank, data.decode("utf-8")).encode("utf-8")
    tree = parser_for(language).parse(source)
    issues = _tree_issues(tree, lines)
    if primary is not None:
        fallback = [issue for issue in issues if primary.doubt or issue.line != primary.line]
        return _Parsed([primary], lines, tree=tree, fallback=fallback)
    if issues and language == YAML and (b"{{" in data or b"{%" in data):
        doubt = "templated YAML ({{ }} or {% %}) is not plain YAML"
        issues = [SyntaxIssue(i.line, i.column, i.message, i.text, doubt) for i in issues]
    return _Parsed(issues, lines, tree=tree)


def syntax_errors(language: str, data: bytes) -> list[SyntaxIssue]:
    """Every syntax error of ``data`` (UTF-8 source in ``language``), in line order.

    At most one per line. Issues with a non-empty ``doubt`` are not counted against a change.
    Raises ValueError for a language without a grammar.
    """
    parsed = _analyse(language, data)
    return sorted(parsed.issues + parsed.fallback)


# --------------------------------------------------------------------------------------------
# Before versus after


def introduced(
    before: list[SyntaxIssue] | None, after: list[SyntaxIssue], diff: LineDiff
) -> list[SyntaxIssue]:
    """The errors of ``after`` that the change introduced (doubtful ones never count).

    Each T0 error excuses at most one error after the change; an error is excused by

    1. a T0 error on one of the unchanged lines it covers (tree-sitter's recovery may start
       an ERROR on a changed line and extend over an untouched old error: that is the old
       error; the same line still erroneous is the common case);
    2. for an error entirely on changed lines, a T0 error with the same line text (ignoring
       whitespace) among the lines that hunk replaced (a re-indented broken line);
    3. for an error starting on an unchanged line, any T0 error with the same line text.

    Anything else is new. An error on changed lines is therefore always new unless the
    change merely re-indented an old broken line or tree-sitter folded it into the extent of
    an old error, and an old error left untouched is always excused: wherever the change
    causes an error (even on an unchanged line, e.g. by deleting a closing bracket), it is
    reported, because no T0 error can excuse it.
    """
    certain = [issue for issue in after if not issue.doubt]
    if before is None or not before or not certain:
        return certain
    free = list(before)  # T0 errors not used yet
    unresolved: list[SyntaxIssue] = []
    for issue in certain:  # rule 1
        old_lines = {diff.same[n] for n in issue.lines if n in diff.same}
        if not old_lines or not _excuse(free, lines=old_lines):
            unresolved.append(issue)
    new: list[SyntaxIssue] = []
    for issue in unresolved:  # rules 2 and 3
        if all(n in diff.changed for n in issue.lines):
            replaced = diff.old_range_of(issue.line)
            excused = _excuse(free, key=issue.key, within=replaced)
        else:
            excused = issue.line not in diff.changed and _excuse(free, key=issue.key)
        if not excused:
            new.append(issue)
    return sorted(new)


def _excuse(
    free: list[SyntaxIssue],
    *,
    lines: set[int] | None = None,
    key: str | None = None,
    within: range | None = None,
) -> bool:
    """Use up the first T0 error that matches, if any."""
    for i, old in enumerate(free):
        if lines is not None and not lines.intersection(old.lines):
            continue
        if key is not None and old.key != key:
            continue
        if within is not None and old.line not in within:
            continue
        del free[i]
        return True
    return False


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


@dataclass
class FileReport:
    path: str
    language: str | None
    parsed: bool = False
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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
            self._data = data[len(_BOM) :] if data and data.startswith(_BOM) else data
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
    parsed = _analyse(language, after)
    if _is_declaration_file(path) and parsed.issues:
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
        old = before.get()
        if old is None:
            new = introduced(None, parsed.issues, LineDiff.of(None, parsed.lines))
        else:
            old_parsed = _analyse(language, old)
            diff = LineDiff.of(old_parsed.lines, parsed.lines)
            new = introduced(old_parsed.issues, parsed.issues, diff)
            if not new and parsed.fallback:
                old_all = old_parsed.issues + old_parsed.fallback
                new = introduced(old_all, parsed.fallback, diff)
        shown = new[:MAX_ERRORS_PER_FILE]
        for i, issue in enumerate(shown):
            more = len(new) - len(shown)
            suffix = f" (and {more} more syntax errors in this file)" if more and i == 0 else ""
            report.problems.append(
                f"{path}:{issue.line}:{issue.column}: {issue.describe()}{suffix}"
            )
        return report  # a file with errors gets no scope check

    problems: list[ScopeProblem] = []
    if language == PYTHON and parsed.module is not None:
        problems, notes = python_scope_problems(before.get, parsed.module, parsed.lines)
        report.notes += [f"{path}: {note}" for note in notes]
    elif language in (JAVASCRIPT, TYPESCRIPT, TSX) and parsed.tree is not None:

        def before_tree() -> Tree | None:
            old = before.get()
            if old is None:
                return None
            tree = parser_for(language).parse(old)
            return None if tree.root_node.has_error else tree

        problems = js_scope_problems(before_tree, parsed.tree, is_module_path(path))
    report.problems += [f"{path}:{p.line}:{p.column}: {p.message}" for p in problems]
    return report


@dataclass
class SyntaxReport:
    """What AST_VALIDATE found: ``problems`` reject the change, ``notes`` do not."""

    problems: list[str] = field(default_factory=list)
    checked: int = 0
    notes: list[str] = field(default_factory=list)
    parse_ms: dict[str, float] = field(default_factory=dict)


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
