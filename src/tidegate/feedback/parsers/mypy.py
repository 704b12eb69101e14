"""mypy: ``file.py:12: error: message  [code]`` (also with ``--show-column-numbers``,
``--show-error-end``, and ``--pretty``, where a long line's ``[code]`` wraps onto the next
line). Errors are COMPILATION; ``import-not-found`` for a module that is neither the
project's nor the standard library's is DEPENDENCY_ERROR; notes are kept as notes."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext, Severity
from tidegate.feedback.parsers._common import missing_python_module_class, to_int

TOOL = "mypy"

_LINE = re.compile(
    r"^(?P<path>[^\s:][^:]*?\.pyi?):(?P<line>\d+):(?:(?P<col>\d+):)?(?:\d+:\d+:)? "
    r"(?P<sev>error|warning|note): (?P<msg>.*?)(?:\s+\[(?P<code>[a-z][a-z0-9-]*)\])?\s*$"
)
_WRAPPED_CODE = re.compile(r"^(?P<text>.*?)\s*\[(?P<code>[a-z][a-z0-9-]*)\]\s*$")
_MISSING = re.compile(r'module named "(?P<module>[\w.]+)"')
_SUMMARY = re.compile(r"^Found \d+ errors? in \d+ files?", re.MULTILINE)


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    lines = text.splitlines()
    diags: list[Diagnostic] = []
    for i, raw in enumerate(lines):
        m = _LINE.match(raw)
        if m is None:
            continue
        code = m.group("code")
        msg = m.group("msg").strip()
        # --pretty wraps long messages: the rest and the code on unindented lines below
        wrapped: list[str] = []
        for nxt in lines[i + 1 : i + 4] if code is None else []:
            if not nxt.strip() or nxt[0].isspace() or _LINE.match(nxt) or _SUMMARY.match(nxt):
                break
            if (w := _WRAPPED_CODE.match(nxt)) is not None:
                msg = " ".join([msg, *wrapped, w.group("text")]).strip()
                code = w.group("code")
                break
            wrapped.append(nxt.strip())
        sev: Severity = "note" if m.group("sev") == "note" else "error"
        if m.group("sev") == "warning":
            sev = "warning"
        error_class = ErrorClass.COMPILATION
        if code == "import-not-found" and (mm := _MISSING.search(msg)) is not None:
            error_class = missing_python_module_class(ctx, mm.group("module"))
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=ctx.strip_root(msg),
                path=ctx.rel(m.group("path")),
                line=int(m.group("line")),
                column=to_int(m.group("col")),
                code=code,
                severity=sev,
                error_class=error_class,
            )
        )
    return diags


def detect(text: str) -> bool:
    return _SUMMARY.search(text) is not None or "Success: no issues found" in text
