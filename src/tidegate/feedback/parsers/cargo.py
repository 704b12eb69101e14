"""cargo build / test (rustc diagnostics): ``error[E0425]: msg`` code frames with
`` --> src/main.rs:3:5`` (COMPILATION; clippy lints LINT; ``can't find crate`` E0463 and
registry resolution failures DEPENDENCY_ERROR), test results ``test foo ... FAILED`` and the
``---- foo stdout ----`` sections with the panic location ``panicked at src/lib.rs:10:5:``."""

from __future__ import annotations

import re

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext, Severity
from tidegate.feedback.parsers._common import stable
from tidegate.feedback.parsers._frames import frames

TOOL = "cargo"

_HEADER = re.compile(r"^(?P<sev>error|warning)(?:\[(?P<code>E\d+)\])?: (?P<msg>.+)$")
_TEST_FAILED = re.compile(r"^test (?P<name>.+?) \.\.\. FAILED$")
_STDOUT = re.compile(r"^---- (?P<name>.+?) std(?:out|err) ----$")
_PANIC = re.compile(
    r"^thread '(?P<thread>[^']*)'(?: \(\d+\))? panicked at "
    r"(?:'(?P<oldmsg>.*)', )?(?P<path>[^\s:]+):(?P<line>\d+):(?P<col>\d+):?$"
)
_DEPENDENCY = re.compile(
    r"^error: (?:no matching package named|failed to select a version for|"
    r"failed to get `[^`]+` as a dependency|failed to download|"
    r"failed to load source for dependency)"
)
_MISSING_CRATE_CODES = frozenset({"E0463"})


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    for frame in frames(text):
        m = _HEADER.match(frame.header)
        if m is None:
            continue
        code = m["code"]
        clippy = any("clippy::" in line or "rust-clippy" in line for line in frame.body)
        if code in _MISSING_CRATE_CODES or "can't find crate" in m["msg"]:
            error_class = ErrorClass.DEPENDENCY_ERROR
        elif clippy:
            error_class = ErrorClass.LINT
        else:
            error_class = ErrorClass.COMPILATION
        sev: Severity = "error" if m["sev"] == "error" else "warning"
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=ctx.strip_root(m["msg"].strip()),
                path=ctx.rel(frame.path),
                line=frame.line,
                column=frame.column,
                code=code or ("clippy" if clippy else None),
                severity=sev,
                error_class=error_class,
            )
        )
    lines = text.splitlines()
    for line in lines:
        if _DEPENDENCY.match(line):
            diags.append(
                Diagnostic(
                    tool=TOOL,
                    message=ctx.strip_root(line[len("error: ") :].strip()),
                    code="dependency",
                    error_class=ErrorClass.DEPENDENCY_ERROR,
                )
            )
    diags.extend(_tests(lines, ctx))
    return diags


def _tests(lines: list[str], ctx: ParseContext) -> list[Diagnostic]:
    failed = [m["name"] for line in lines if (m := _TEST_FAILED.match(line)) is not None]
    if not failed:
        return []
    panics: dict[str, tuple[str, int, int, str, str]] = {}
    section: str | None = None
    for i, line in enumerate(lines):
        if (m := _STDOUT.match(line)) is not None:
            section = m["name"]
        elif section is not None and (p := _PANIC.match(line)) is not None:
            after = _panic_lines(lines, i + 1)
            msg = p["oldmsg"] if p["oldmsg"] is not None else (after.pop(0) if after else "")
            detail = "\n".join(after)
            panics.setdefault(section, (p["path"], int(p["line"]), int(p["col"]), msg, detail))
    diags: list[Diagnostic] = []
    for name in dict.fromkeys(failed):
        where = panics.get(name)
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=stable(ctx.strip_root(where[3])) if where else "test failed",
                path=ctx.rel(where[0]) if where else None,
                line=where[1] if where else None,
                column=where[2] if where else None,
                code="panic" if where else None,
                test_id=name,
                error_class=ErrorClass.TEST,
                detail=stable(ctx.strip_root(where[4])) if where else "",
            )
        )
    return diags


def _panic_lines(lines: list[str], start: int) -> list[str]:
    """The panic message: the lines after ``panicked at ...:`` up to a blank line or the
    backtrace note."""
    out: list[str] = []
    for line in lines[start : start + 8]:
        if not line.strip() or line.startswith(("note: ", "stack backtrace:")):
            break
        out.append(line.rstrip())
    return out
