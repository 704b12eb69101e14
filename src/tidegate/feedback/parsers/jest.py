"""jest: ``FAIL path`` suite lines, ``\u25cf Suite \u203a test`` blocks (bullet and angle quote as
jest prints them) with the assertion message, a code frame and an ``at fn (path:line:col)``
stack; ``Test suite failed to run`` blocks (a syntax error is COMPILATION, ``Cannot find
module 'pkg' from 'file'`` for a bare package DEPENDENCY_ERROR). Test ids are
``path::Suite \u203a test``, the block's title after the suite's path."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers._common import js_module_class, stable

TOOL = "jest"

_SUITE = re.compile(r"^(?P<status>FAIL|PASS) (?P<path>\S+)")
_BLOCK = re.compile(r"^  ● (?P<title>.+)$")
_STACK = re.compile(r"^\s+at (?:.*? \()?(?P<path>[^\s()]+?):(?P<line>\d+):(?P<col>\d+)\)?$")
_CODE_FRAME = re.compile(r"^\s*>?\s*\d+ \|")
_SYNTAX = re.compile(r"SyntaxError: (?P<path>[^:]+): .*\((?P<line>\d+):(?P<col>\d+)\)")
_MODULE = re.compile(r"Cannot find module '(?P<spec>[^']+)'")
_SUMMARY = re.compile(r"^Tests:\s+.*\d+ total", re.MULTILINE)
_END = re.compile(r"^(?:Test Suites:|Tests:|Snapshots:|Time:|Ran all test suites)")
_SUITE_FAILED = "Test suite failed to run"


def detect(text: str) -> bool:
    return _SUMMARY.search(text) is not None or re.search(r"^  ● ", text, re.M) is not None


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    if not detect(text):
        return []
    diags: list[Diagnostic] = []
    suite: str | None = None
    title: str | None = None
    body: list[str] = []

    def flush() -> None:
        if title is not None and suite is not None:
            diags.append(_block(suite, title, body, ctx))

    for line in text.splitlines():
        if (m := _SUITE.match(line)) is not None:
            flush()
            suite, title, body = ctx.rel(m["path"]), None, []
        elif (m := _BLOCK.match(line)) is not None:
            flush()
            title, body = m["title"].strip(), []
        elif _END.match(line):
            flush()
            title, body = None, []
        elif title is not None:
            body.append(line)
    flush()
    return diags


def _block(suite: str, title: str, body: list[str], ctx: ParseContext) -> Diagnostic:
    text_lines: list[str] = []
    frames: list[tuple[str, int, int]] = []
    for line in body:
        if (m := _STACK.match(line)) is not None:
            frames.append((ctx.rel(m["path"]), int(m["line"]), int(m["col"])))
        elif (
            not frames
            and not _CODE_FRAME.match(line)
            and line.strip()
            and not line.strip().startswith("|")
        ):
            text_lines.append(line.strip())
    project = [f for f in frames if ParseContext.is_project(f[0])]
    message = ctx.strip_root(text_lines[0]) if text_lines else title
    detail = "\n".join(ctx.strip_root(t) for t in text_lines[1:6])
    path, line_no, col = project[0] if project else (suite, None, None)
    trace = tuple(dict.fromkeys((p, n) for p, n, _ in project[1:] if (p, n) != (path, line_no)))
    error_class = ErrorClass.TEST
    test_id: str | None = f"{suite}::{title}"
    code: str | None = None
    if title == _SUITE_FAILED:
        test_id = None
        if (s := _SYNTAX.search(message)) is not None:
            error_class, code = ErrorClass.COMPILATION, "SyntaxError"
            path, line_no, col = ctx.rel(s["path"]), int(s["line"]), int(s["col"])
            message = ctx.strip_root(message)
        elif (mm := _MODULE.search(message)) is not None:
            error_class, code = js_module_class(mm["spec"]), "MODULE_NOT_FOUND"
    return Diagnostic(
        tool=TOOL,
        message=stable(message),
        path=path,
        line=line_no,
        column=col,
        code=code,
        test_id=test_id,
        error_class=error_class,
        trace=trace,
        detail=stable(detail),
    )
