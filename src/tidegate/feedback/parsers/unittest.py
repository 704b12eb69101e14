"""unittest: ``FAIL: test_x (mod.Class.test_x)`` / ``ERROR: ...`` blocks between ``====`` and
``----`` rules, each with a traceback; import failures of test modules (``_FailedTest``)."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers._common import (
    PY_EXCEPTION,
    PY_FRAME,
    python_exception_class,
    stable,
)

TOOL = "unittest"

_RULE = "=" * 70
_DASH = "-" * 70
_HEAD = re.compile(
    r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\S+) \((?P<where>[^)]*)\)"
    r"(?: (?P<sub>\(.*\)))?$"
)
_RAN = re.compile(r"^Ran \d+ tests? in ", re.MULTILINE)


def detect(text: str) -> bool:
    return _RULE in text and (_RAN.search(text) is not None or "\nFAIL: " in text)


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    if not detect(text):
        return []
    lines = text.splitlines()
    diags: list[Diagnostic] = []
    i = 0
    while i < len(lines):
        m = _HEAD.match(lines[i]) if i > 0 and lines[i - 1] == _RULE else None
        if m is None:
            i += 1
            continue
        body: list[str] = []
        i += 1
        if i < len(lines) and lines[i] == _DASH:
            i += 1
        while i < len(lines) and lines[i] not in (_RULE, _DASH):
            body.append(lines[i])
            i += 1
        diags.append(_block(m, body, ctx))
    return diags


def _test_id(name: str, where: str, sub: str | None) -> str:
    if where.startswith("unittest.loader._FailedTest"):
        test_id = name  # the module that failed to import
    elif where == name or where.endswith("." + name):
        test_id = where  # Python >= 3.11 prints the full id
    else:
        test_id = f"{where}.{name}"
    return f"{test_id} {sub}" if sub else test_id


def _block(m: re.Match[str], body: list[str], ctx: ParseContext) -> Diagnostic:
    frames: list[tuple[str, int]] = []
    exc: str | None = None
    message = ""
    for line in body:
        if (f := PY_FRAME.match(line)) is not None:
            if not f.group("path").startswith("<"):
                frames.append((ctx.rel(f.group("path")), int(f.group("line"))))
        elif (e := PY_EXCEPTION.match(line)) is not None:
            exc, message = e.group("exc"), line
    project = [f for f in frames if ParseContext.is_project(f[0])]
    chosen = project or frames
    path, line_no = chosen[-1] if chosen else (None, None)
    trace = tuple(dict.fromkeys(f for f in project[:-1] if f != (path, line_no)))
    failed_import = m.group("where").startswith("unittest.loader._FailedTest")
    test_id = _test_id(m.group("name"), m.group("where"), m.group("sub"))
    if m.group("kind") == "UNEXPECTED SUCCESS":
        message = "unexpected success"
    message = stable(ctx.strip_root(message)) or m.group("kind").lower()
    return Diagnostic(
        tool=TOOL,
        message=message,
        path=path,
        line=line_no,
        code=exc,
        test_id=None if failed_import else test_id,
        error_class=python_exception_class(ctx, exc, message, ErrorClass.TEST),
        trace=trace,
    )
