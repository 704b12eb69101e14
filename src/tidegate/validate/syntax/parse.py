"""Parsing one side of a change: the syntax errors of a file in its language."""

from __future__ import annotations

import ast
import re
import sys
import warnings
from typing import TYPE_CHECKING

import msgspec

from tidegate.validate.languages import JSON, JSONC, PYTHON, TOML, YAML, parser_for
from tidegate.validate.scope.lines import split_lines
from tidegate.validate.syntax.data_formats import JSON_COMMAS, blank, json_issue, toml_issue
from tidegate.validate.syntax.issue import SyntaxIssue, line_text

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

BOM = b"\xef\xbb\xbf"


class Parsed(msgspec.Struct):
    issues: list[SyntaxIssue]
    lines: list[bytes]
    module: ast.Module | None = None  # Python, when ast parsed and compiled it
    tree: Tree | None = None  # tree-sitter tree, when one was built
    # Python: tree-sitter's errors on other lines than ast's one, consulted only when the
    # ast error is one the file had at T0 (ast stops at the first error, which may mask a
    # new one further down; tree-sitter's recovery may also report knock-on errors).
    fallback: list[SyntaxIssue] = msgspec.field(default_factory=list)


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
                line_text(lines, row + 1),
                end_line=end_row + 1,
            )
        )
    if not found:  # has_error without a visible error node: report the file as a whole
        found.append(SyntaxIssue(1, 1, "does not parse", line_text(lines, 1)))
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


def _python(data: bytes, lines: list[bytes]) -> Parsed:
    parsed = False  # whether the error comes from compiling, after parsing succeeded
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(data)
            parsed = True
            compile(module, "<candidate>", "exec", dont_inherit=True)
        return Parsed([], lines, module=module)
    except SyntaxError as exc:
        line = min(max(exc.lineno or 1, 1), max(len(lines), 1))
        issue = SyntaxIssue(line, max(exc.offset or 1, 1), exc.msg, line_text(lines, line))
    except ValueError as exc:  # NUL bytes, for callers that did not rule them out
        issue = SyntaxIssue(1, 1, str(exc), line_text(lines, 1))
    except (RecursionError, MemoryError):
        issue = SyntaxIssue(
            1, 1, "too deeply nested for Python's parser", line_text(lines, 1), "not parsed"
        )
        return Parsed([issue], lines)
    tree = parser_for(PYTHON).parse(data)
    others = _tree_issues(tree, lines)
    if not others and not parsed:
        newer = _newer_syntax_at(tree, issue.line)
        if newer:
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            doubt = f"Python {version} rejects {newer}, which tree-sitter accepts"
            issue = SyntaxIssue(issue.line, issue.column, issue.message, issue.text, doubt)
    fallback = [other for other in others if other.line != issue.line]
    return Parsed([issue], lines, tree=tree, fallback=fallback)


def is_declaration_file(path: str) -> bool:
    return re.search(r"\.d\.[mc]?ts$", path, re.IGNORECASE) is not None


def analyse(language: str, data: bytes) -> Parsed:
    if data.startswith(BOM):
        data = data[len(BOM) :]
    lines = split_lines(data)
    if language == PYTHON:
        return _python(data, lines)
    primary: SyntaxIssue | None = None
    if language in (JSON, JSONC, TOML):
        # Python's own parser decides; tree-sitter only adds the errors that the first one
        # may hide (tree-sitter-json, for one, rejects the valid number 1e+5).
        if language == TOML:
            primary = toml_issue(data, lines)
        else:
            primary = json_issue(data, lines, jsonc=language == JSONC)
        if primary is None:
            return Parsed([], lines)
    source = data
    if language == JSONC:
        source = JSON_COMMAS.sub(blank, data.decode("utf-8")).encode("utf-8")
    tree = parser_for(language).parse(source)
    issues = _tree_issues(tree, lines)
    if primary is not None:
        fallback = [issue for issue in issues if primary.doubt or issue.line != primary.line]
        return Parsed([primary], lines, tree=tree, fallback=fallback)
    if issues and language == YAML and (b"{{" in data or b"{%" in data):
        doubt = "templated YAML ({{ }} or {% %}) is not plain YAML"
        issues = [SyntaxIssue(i.line, i.column, i.message, i.text, doubt) for i in issues]
    return Parsed(issues, lines, tree=tree)


def syntax_errors(language: str, data: bytes) -> list[SyntaxIssue]:
    """Every syntax error of ``data`` (UTF-8 source in ``language``), in line order.

    At most one per line. Issues with a non-empty ``doubt`` are not counted against a change.
    Raises ValueError for a language without a grammar.
    """
    parsed = analyse(language, data)
    return sorted(parsed.issues + parsed.fallback)
