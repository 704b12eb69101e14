"""tsc: ``src/app.ts(2,3): error TS2322: ...`` (plain, also what ``--pretty false`` and a
non-terminal print) and the pretty ``src/app.ts:2:3 - error TS2322: ...`` (colours stripped
before parsing). Errors are COMPILATION; ``Cannot find module 'pkg'`` (TS2307, TS2792) for a
bare package name is DEPENDENCY_ERROR."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers._common import js_module_class

TOOL = "tsc"

_PLAIN = re.compile(
    r"^(?P<path>[^\s(][^(]*?)\((?P<line>\d+),(?P<col>\d+)\): "
    r"(?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_PRETTY = re.compile(
    r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+):(?P<col>\d+) - "
    r"(?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_GLOBAL = re.compile(r"^(?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$")
_MODULE = re.compile(r"Cannot find module '(?P<spec>[^']+)'")
_MODULE_CODES = frozenset({"TS2307", "TS2792"})


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    for line in text.splitlines():
        m = _PLAIN.match(line) or _PRETTY.match(line)
        g = _GLOBAL.match(line) if m is None else None
        if m is None and g is None:
            continue
        hit = m or g
        assert hit is not None
        msg = hit["msg"].strip()
        error_class = ErrorClass.COMPILATION
        if hit["code"] in _MODULE_CODES and (mm := _MODULE.search(msg)) is not None:
            error_class = js_module_class(mm["spec"])
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=ctx.strip_root(msg),
                path=ctx.rel(m["path"]) if m else None,
                line=int(m["line"]) if m else None,
                column=int(m["col"]) if m else None,
                code=hit["code"],
                severity="warning" if hit["sev"] == "warning" else "error",
                error_class=error_class,
            )
        )
    return diags
