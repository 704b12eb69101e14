"""flake8 (and pycodestyle, pyflakes): ``path:line:col: CODE message``. Violations are LINT;
``E999`` (the file does not parse) is COMPILATION. Lines of this shape that ruff printed are
left to the ruff parser."""

from __future__ import annotations

from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers.ruff import CONCISE, claims_concise, rule_class

TOOL = "flake8"


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    if claims_concise(text, ctx):
        return []
    diags: list[Diagnostic] = []
    for line in text.splitlines():
        m = CONCISE.match(line)
        if m is None or not m["code"][0].isupper():
            continue
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=ctx.strip_root(m["msg"].strip()),
                path=ctx.rel(m["path"]),
                line=int(m["line"]),
                column=int(m["col"]),
                code=m["code"],
                error_class=rule_class(m["code"]),
            )
        )
    return diags
