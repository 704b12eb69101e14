"""go build / vet / test: compiler errors ``./x.go:3:5: undefined: y`` (COMPILATION), missing
packages ``no required module provides package``, ``cannot find package``, ``cannot find
module providing package`` (DEPENDENCY_ERROR unless the package is in the root's own module),
and test failures: ``--- FAIL: TestX (0.00s)`` (nested for subtests), ``file_test.go:12: msg``
log lines, panics with their goroutine stack, ``FAIL\\tpkg\\t0.01s`` package lines. Test ids are
``package::TestX/sub``; only the innermost failing subtest is reported."""

from __future__ import annotations

import re

import msgspec

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext

TOOL = "go"

_BUILD = re.compile(r"^(?:vet: )?(?P<path>[^\s:]*\.go):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$")
_PKG_HEADER = re.compile(r"^# (?P<pkg>\S+)")
_FAIL = re.compile(r"^(?P<indent>\s*)--- FAIL: (?P<name>\S+) \([\d.]+s\)")
_RUN = re.compile(r"^=== (?:RUN|CONT|NAME)\s+(?P<name>\S+)")
_LOG = re.compile(r"^\s+(?P<path>[^\s:]+\.go):(?P<line>\d+): (?P<msg>.*)$")
_PKG_FAIL = re.compile(r"^FAIL\t(?P<pkg>\S+)(?:\t| \[)")
_PANIC = re.compile(r"^panic: (?P<msg>.*?)(?: \[recovered\])?$")
_STACK = re.compile(r"^\t(?P<path>/\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?$")
_DEPENDENCY = re.compile(
    r"no required module provides package (?P<a>\S+?);|cannot find package \"(?P<b>[^\"]+)\""
    r"|cannot find module providing package (?P<c>\S+?):|missing go\.sum entry"
)
_GOROOT = re.compile(r"/go(?:-[\d.]+)?/src/|/pkg/mod/")
_TEST_OUTPUT = re.compile(r"^(?:--- FAIL: |=== RUN |FAIL\t|ok  \t)", re.MULTILINE)


class _Test(msgspec.Struct):
    name: str
    messages: list[tuple[str, int, str]] = msgspec.field(default_factory=list)
    panic: str | None = None
    panic_at: tuple[str, int] | None = None


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    diags = _build_errors(text, ctx)
    if _TEST_OUTPUT.search(text):
        diags.extend(_test_failures(text, ctx))
    return diags


def _build_errors(text: str, ctx: ParseContext) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    for line in text.splitlines():
        m = _BUILD.match(line)
        if m is None:
            continue
        msg = m["msg"].strip()
        error_class = ErrorClass.COMPILATION
        code = None
        if (d := _DEPENDENCY.search(msg)) is not None:
            pkg = d["a"] or d["b"] or d["c"]
            own = pkg is not None and ctx.go_package_dir(pkg) is not None
            error_class = ErrorClass.COMPILATION if own else ErrorClass.DEPENDENCY_ERROR
            code = "missing-package"
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=ctx.strip_root(msg),
                path=ctx.rel(m["path"]),
                line=int(m["line"]),
                column=int(m["col"]),
                code=code,
                error_class=error_class,
            )
        )
    return diags


def _test_failures(text: str, ctx: ParseContext) -> list[Diagnostic]:
    tests: dict[str, _Test] = {}
    pending: list[str] = []  # failed tests of the package whose FAIL line has not come yet
    current: str | None = None
    in_panic: _Test | None = None
    diags: list[Diagnostic] = []
    for line in text.splitlines():
        if (m := _RUN.match(line)) is not None:
            current = m["name"]
            continue
        if (m := _FAIL.match(line)) is not None:
            current = m["name"]
            tests.setdefault(current, _Test(current))
            if current not in pending:
                pending.append(current)
            continue
        if (m := _PANIC.match(line)) is not None and current is not None:
            in_panic = tests.setdefault(current, _Test(current))
            if current not in pending:
                pending.append(current)
            in_panic.panic = in_panic.panic or m["msg"]
            continue
        if in_panic is not None and (m := _STACK.match(line)) is not None:
            path = ctx.rel(m["path"])
            if in_panic.panic_at is None and not _GOROOT.search(m["path"]):
                in_panic.panic_at = (path, int(m["line"]))
            continue
        if (m := _LOG.match(line)) is not None and current is not None:
            tests.setdefault(current, _Test(current)).messages.append(
                (m["path"], int(m["line"]), m["msg"].strip())
            )
            continue
        if (m := _PKG_FAIL.match(line)) is not None:
            diags.extend(_package(m["pkg"], [tests[n] for n in pending if n in tests], ctx))
            pending, current, in_panic = [], None, None
    if pending:
        diags.extend(_package(None, [tests[n] for n in pending if n in tests], ctx))
    return diags


def _package(pkg: str | None, tests: list[_Test], ctx: ParseContext) -> list[Diagnostic]:
    names = {t.name for t in tests}
    pkg_dir = ctx.go_package_dir(pkg) if pkg else None
    diags: list[Diagnostic] = []
    for test in tests:
        if any(n.startswith(test.name + "/") for n in names) and not test.panic:
            continue  # the parent of a failing subtest
        test_id = f"{pkg}::{test.name}" if pkg else test.name
        path: str | None = None
        line: int | None = None
        if test.panic_at is not None:
            path, line = test.panic_at
            message = f"panic: {test.panic}"
        elif test.messages:
            log_path, line, message = test.messages[0]
            path = f"{pkg_dir}/{log_path}" if pkg_dir else log_path
        else:
            message = "test failed"
        diags.append(
            Diagnostic(
                tool=TOOL,
                message=ctx.strip_root(message),
                path=ctx.rel(path) if path else None,
                line=line,
                test_id=test_id,
                error_class=ErrorClass.TEST,
                detail="\n".join(m for _, _, m in test.messages[1:4]),
            )
        )
    return diags
