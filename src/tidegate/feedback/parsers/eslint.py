"""eslint's default "stylish" formatter: a file path on its own line, then one indented
``line:col  severity  message  rule`` row per problem. Problems are LINT; a ``Parsing
error`` (the file does not parse) is COMPILATION."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext

TOOL = "eslint"

_ROW = re.compile(
    r"^  (?P<line>\d+):(?P<col>\d+)\s+(?P<sev>error|warning)\s+(?P<msg>.+?)"
    r"(?:\s{2,}(?P<rule>[@\w/-]+))?\s*$"
)
_FILE = re.compile(r"^(?P<path>\S.*\S|\S)$")
_SUMMARY = re.compile(r"^\S* ?\d+ problems? \(\d+ errors?, \d+ warnings?\)", re.MULTILINE)


def detect(text: str) -> bool:
    return _SUMMARY.search(text) is not None


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    if not detect(text):
        return []
    diags: list[Diagnostic] = []
    current: str | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if (m := _ROW.match(line)) is not None and current is not None:
            msg = m["msg"].strip()
            parsing = msg.startswith("Parsing error")
            diags.append(
                Diagnostic(
                    tool=TOOL,
                    message=ctx.strip_root(msg),
                    path=ctx.rel(current),
                    line=int(m["line"]),
                    column=int(m["col"]),
                    code=m["rule"] or ("parsing-error" if parsing else None),
                    severity="warning" if m["sev"] == "warning" else "error",
                    error_class=ErrorClass.COMPILATION if parsing else ErrorClass.LINT,
                )
            )
        elif (f := _FILE.match(line)) is not None and not _SUMMARY.match(line):
            current = f["path"]
        else:
            current = None
    return diags
