"""ruff: the default "full" output of current ruff (a code frame per violation: ``F401 [*]
`os` imported but unused`` then `` --> bad.py:1:8``), ``--output-format concise``
(``bad.py:1:8: F401 [*] ...``), ``grouped``, and ``ruff format --check``. Violations are LINT;
``invalid-syntax`` is COMPILATION."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers._frames import frames

TOOL = "ruff"

_RULE_HEADER = re.compile(r"^(?P<code>[A-Z]+[0-9]+)(?: \[\*\])? (?P<msg>.+)$")
_NAMED_HEADER = re.compile(r"^(?P<code>unformatted|[a-z]+(?:-[a-z]+)+): (?P<msg>.+)$")
_NOT_RUFF = frozenset({"error", "warning", "note", "help"})
# concise: path:line:col: CODE [*] message (flake8 and pycodestyle print the same shape)
_CODE = r"(?P<code>[A-Z]+[0-9]+(?= )|(?:unformatted|[a-z]+(?:-[a-z]+)+)(?=: ))"
CONCISE = re.compile(
    r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+):(?P<col>\d+): " + _CODE + r":? (?:\[\*\] )?(?P<msg>.+)$"
)
_GROUP_FILE = re.compile(r"^(?P<path>\S.*):$")
_GROUP_ITEM = re.compile(
    r"^\s+(?P<line>\d+):(?P<col>\d+)\s+" + _CODE + r":? (?:\[\*\] )?(?P<msg>.+)$"
)
_WOULD_REFORMAT = re.compile(r"^Would reformat: (?P<path>.+)$")
_SUMMARY = re.compile(r"^Found \d+ errors?\.|^\[\*\] \d+ fixable|would be reformatted$", re.M)
_SYNTAX_CODES = frozenset({"invalid-syntax", "syntax-error", "E999"})


def claims_concise(text: str, ctx: ParseContext) -> bool:
    """Whether ``path:line:col: CODE msg`` lines in this output are ruff's (else flake8's)."""
    if re.search(r"\bflake8\b|\bpycodestyle\b|\bpyflakes\b", ctx.command):
        return False
    return bool(re.search(r"\bruff\b", ctx.command)) or _SUMMARY.search(text) is not None


def rule_class(code: str) -> ErrorClass:
    return ErrorClass.COMPILATION if code in _SYNTAX_CODES else ErrorClass.LINT


def _diag(
    ctx: ParseContext, path: str, line: int | None, col: int | None, code: str, msg: str
) -> Diagnostic:
    return Diagnostic(
        tool=TOOL,
        message=ctx.strip_root(msg.strip()),
        path=ctx.rel(path),
        line=line,
        column=col,
        code=code,
        error_class=rule_class(code),
    )


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    for frame in frames(text):
        m = _RULE_HEADER.match(frame.header) or _NAMED_HEADER.match(frame.header)
        if m is None or m.group("code") in _NOT_RUFF:
            continue
        diags.append(_diag(ctx, frame.path, frame.line, frame.column, m.group("code"), m["msg"]))
    current: str | None = None
    concise = claims_concise(text, ctx)
    for line in text.splitlines():
        if concise and (m := CONCISE.match(line)) is not None:
            diags.append(_diag(ctx, m["path"], int(m["line"]), int(m["col"]), m["code"], m["msg"]))
        elif (m := _WOULD_REFORMAT.match(line)) is not None:
            diags.append(_diag(ctx, m["path"], None, None, "unformatted", "would reformat"))
        elif (m := _GROUP_FILE.match(line)) is not None:
            current = m["path"]
        elif current is not None and (m := _GROUP_ITEM.match(line)) is not None:
            diags.append(_diag(ctx, current, int(m["line"]), int(m["col"]), m["code"], m["msg"]))
        elif line and not line[0].isspace():
            current = None
    return diags
