"""pytest: the short test summary (``FAILED id - msg``, ``ERROR id``), the FAILURES and ERRORS
sections (``file:line: ExcType`` locations in long mode, ``file:line: in func`` in short mode,
``File "..."`` frames in native mode, ``/abs/file:line: msg`` in line mode, ``E   `` message
lines), collection errors, ``-v`` result lines. Works at default and ``-q`` verbosity."""

from __future__ import annotations

import re

import msgspec

from tidegate.errors import ErrorClass
from tidegate.feedback.diagnostics import Diagnostic, ParseContext
from tidegate.feedback.parsers._common import (
    PY_EXCEPTION,
    PY_FRAME,
    python_exception_class,
    stable,
)

TOOL = "pytest"

_SESSION = re.compile(r"^=+ test session starts =+$", re.MULTILINE)
_MAJOR = re.compile(r"^=+ (?P<title>.+?) =+$")
_SECTION = re.compile(r"^_{2,} (?P<title>.+?) _{2,}$")
_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<id>.+?)(?: - (?P<msg>.*))?$")
_VERBOSE = re.compile(r"^(?P<id>\S+::\S+?) (?P<kind>FAILED|ERROR)\b")
_FINAL = re.compile(
    r"^=*\s*(?:\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected)"
    r"(?:, )?)+ in [\d.]+s",
    re.MULTILINE,
)
_LOC_LONG = re.compile(r"^(?P<path>[^\s:][^:]*?\.py):(?P<line>\d+): ?(?P<exc>[\w.]+)?$")
_LOC_SHORT = re.compile(r"^(?P<path>[^\s:][^:]*?\.py):(?P<line>\d+): in (?P<func>\S+)$")
_LOC_LINE = re.compile(r"^(?P<path>[^\s:][^:]*?\.py):(?P<line>\d+): (?P<msg>.+)$")
_E_LINE = re.compile(r"^E(?: {1,}(?P<text>.*))?$")
_NOISE_E = re.compile(r"^(?:Use -v to get (?:more|the full) diff|Full diff:)$")


def detect(text: str) -> bool:
    if _SESSION.search(text) or _FINAL.search(text):
        return True
    for line in text.splitlines():
        m = _MAJOR.match(line)
        if m and m.group("title") in ("FAILURES", "ERRORS", "short test summary info"):
            return True
    return False


class _Section(msgspec.Struct):
    title: str
    major: str
    locations: list[tuple[str, int, str | None]] = msgspec.field(default_factory=list)
    e_lines: list[str] = msgspec.field(default_factory=list)
    line_msgs: list[str] = msgspec.field(default_factory=list)


class _Entry(msgspec.Struct):
    kind: str
    test_id: str
    message: str


def parse(text: str, ctx: ParseContext) -> list[Diagnostic]:
    if not detect(text):
        return []
    sections, summary, verbose = _scan(text, ctx)
    return _combine(sections, summary, verbose, ctx)


def _scan(text: str, ctx: ParseContext) -> tuple[list[_Section], list[_Entry], list[_Entry]]:
    sections: list[_Section] = []
    summary: list[_Entry] = []
    verbose: list[_Entry] = []
    major = ""
    current: _Section | None = None
    for line in text.splitlines():
        if (m := _MAJOR.match(line)) is not None:
            major = m.group("title")
            current = None
            if major in ("FAILURES", "ERRORS"):
                # line mode (--tb=line) has no titled sections: one untitled bucket
                current = _Section("", major)
                sections.append(current)
            continue
        if major == "short test summary info":
            if (m := _SUMMARY.match(line)) is not None:
                summary.append(_Entry(m.group("kind"), m.group("id"), m.group("msg") or ""))
            continue
        if major in ("FAILURES", "ERRORS"):
            if (m := _SECTION.match(line)) is not None:
                current = _Section(m.group("title"), major)
                sections.append(current)
                continue
            if current is not None:
                _section_line(current, line, ctx)
            continue
        if (m := _VERBOSE.match(line)) is not None:
            verbose.append(_Entry(m.group("kind"), m.group("id"), ""))
    return [s for s in sections if s.title or s.locations or s.e_lines], summary, verbose


def _section_line(section: _Section, line: str, ctx: ParseContext) -> None:
    if (m := _E_LINE.match(line)) is not None:
        text = (m.group("text") or "").strip()
        if (f := PY_FRAME.match(text)) is not None:
            section.locations.append((ctx.rel(f.group("path")), int(f.group("line")), None))
        elif text:
            section.e_lines.append(text)
        return
    if (m := _LOC_SHORT.match(line)) is not None:
        section.locations.append((ctx.rel(m.group("path")), int(m.group("line")), None))
    elif (m := _LOC_LONG.match(line)) is not None:
        section.locations.append(
            (ctx.rel(m.group("path")), int(m.group("line")), m.group("exc") or None)
        )
    elif (m := _LOC_LINE.match(line)) is not None:
        section.locations.append((ctx.rel(m.group("path")), int(m.group("line")), None))
        section.line_msgs.append(m.group("msg"))
    elif (m := PY_FRAME.match(line)) is not None:
        section.locations.append((ctx.rel(m.group("path")), int(m.group("line")), None))


def _title_key(title: str) -> tuple[str, str]:
    """(kind, name) of a section title: collection error, setup/teardown error, or a test."""
    for prefix, kind in (
        ("ERROR collecting ", "collect"),
        ("ERROR at setup of ", "error"),
        ("ERROR at teardown of ", "error"),
    ):
        if title.startswith(prefix):
            return kind, title[len(prefix) :]
    return "test", title


def _id_name(test_id: str) -> str:
    """``a/test_x.py::TestC::test_y[p]`` -> ``TestC.test_y[p]``, as section titles show it."""
    _, _, rest = test_id.partition("::")
    return rest.replace("::", ".")


def _combine(
    sections: list[_Section], summary: list[_Entry], verbose: list[_Entry], ctx: ParseContext
) -> list[Diagnostic]:
    entries = summary or verbose
    by_name: dict[tuple[str, str], _Section] = {}
    untitled: list[_Section] = []
    for s in sections:
        if not s.title:
            untitled.append(s)
            continue
        kind, name = _title_key(s.title)
        by_name.setdefault(("collect" if kind == "collect" else "test", name), s)
    line_mode = [
        (loc, msg) for s in untitled for loc, msg in zip(s.locations, s.line_msgs, strict=False)
    ]
    diags: list[Diagnostic] = []
    used: set[int] = set()
    failed_index = 0
    for entry in entries:
        if "::" in entry.test_id:
            section = by_name.get(("test", _id_name(entry.test_id)))
            if section is None and entry.kind == "FAILED" and failed_index < len(line_mode):
                loc, msg = line_mode[failed_index]
                failed_index += 1
                section = _Section(entry.test_id, "FAILURES", [loc], [], [msg])
            diags.append(_test_diag(entry.test_id, entry.message, section, ctx))
        else:
            section = by_name.get(("collect", entry.test_id))
            diags.append(_collect_diag(entry.test_id, entry.message, section, ctx))
        if section is not None:
            used.add(id(section))
    for (kind, name), section in by_name.items():
        if id(section) in used:
            continue
        if kind == "collect":
            diags.append(_collect_diag(name, "", section, ctx))
        else:
            diags.append(_test_diag(_guess_id(name, section), "", section, ctx))
    return diags


def _guess_id(name: str, section: _Section) -> str:
    """A node id for a section without a summary line (``-rN``): the test file is the
    outermost project frame."""
    files = [p for p, _, _ in section.locations if ParseContext.is_project(p)]
    base, bracket, params = name.partition("[")
    node = base.replace(".", "::") + bracket + params
    return f"{files[0]}::{node}" if files else node


def _exception(section: _Section | None, message: str) -> str | None:
    if section is not None:
        for _, _, exc in reversed(section.locations):
            if exc:
                return exc
        for text in reversed(section.e_lines):
            if (m := PY_EXCEPTION.match(text)) is not None:
                return m.group("exc")
        if section.e_lines and section.e_lines[0].startswith("assert"):
            return "AssertionError"
    if (m := PY_EXCEPTION.match(message)) is not None:
        return m.group("exc")
    if message.startswith("assert"):
        return "AssertionError"
    return None


def _where(section: _Section | None) -> tuple[str | None, int | None, tuple[tuple[str, int], ...]]:
    if section is None:
        return None, None, ()
    project = [(p, n) for p, n, _ in section.locations if ParseContext.is_project(p)]
    chosen = project or [(p, n) for p, n, _ in section.locations]
    if not chosen:
        return None, None, ()
    path, line = chosen[-1]
    trace = tuple(dict.fromkeys(loc for loc in project[:-1] if loc != (path, line)))
    return path, line, trace


def _detail(section: _Section | None, message: str) -> str:
    if section is None:
        return ""
    lines = [ln for ln in section.e_lines if not _NOISE_E.match(ln)]
    lines = [ln for ln in lines if ln != message and not PY_FRAME.match(ln)]
    return stable("\n".join(lines[:6]))


def _test_diag(
    test_id: str, message: str, section: _Section | None, ctx: ParseContext
) -> Diagnostic:
    if not message and section is not None:
        message = (section.line_msgs or section.e_lines or [""])[0]
    exc = _exception(section, message)
    path, line, trace = _where(section)
    message = stable(ctx.strip_root(message)) or (exc or "test failed")
    return Diagnostic(
        tool=TOOL,
        message=message,
        path=path,
        line=line,
        code=exc,
        test_id=test_id,
        error_class=python_exception_class(ctx, exc, message, ErrorClass.TEST),
        trace=trace,
        detail=_detail(section, message),
    )


def _collect_diag(
    target: str, message: str, section: _Section | None, ctx: ParseContext
) -> Diagnostic:
    """A module that could not be collected: a syntax error is COMPILATION, a missing module
    DEPENDENCY_ERROR (or COMPILATION when it is the project's own), anything else TEST."""
    exc = None
    if section is not None:
        for text in section.e_lines:
            if (m := PY_EXCEPTION.match(text)) is not None:
                exc, message = m.group("exc"), text
        if not message and section.e_lines:
            message = section.e_lines[-1]
    path, line, trace = _where(section)
    if path is None:
        path = ctx.rel(target)
    message = stable(ctx.strip_root(message)) or f"error collecting {target}"
    return Diagnostic(
        tool=TOOL,
        message=message,
        path=path,
        line=line,
        code=exc,
        error_class=python_exception_class(ctx, exc, message, ErrorClass.TEST),
        trace=trace,
    )
