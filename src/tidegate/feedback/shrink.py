"""SHRINK: turn a diagnosis into the feedback the next attempt's planner reads.

The feedback names the error class, the failing tests, the first error locations with a
short excerpt of the source around each, the files involved, and what is left of the
output once the noise (progress dots, timing, passing rows, separators, installed-code stack
frames, blank runs) is gone; repeated identical diagnostics are collapsed with a count. It
fits a token budget and is deterministic: the same failure gives the same text (durations,
object addresses, thread and goroutine numbers and the shadow's path are taken out), which
the retry loop relies on to tell a changed failure from a repeated one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from tidegate.feedback.diagnostics import Diagnostic, ParseContext

if TYPE_CHECKING:
    from tidegate.feedback.diagnostics import Diagnosis

ReadFile = Callable[[str], bytes | None]
"""Reads a file by its path relative to the shadow root; None when it cannot."""

DEFAULT_BUDGET_TOKENS = 1500
EXCERPT_CONTEXT = 3
MAX_TESTS_LISTED = 20
MAX_FILES_LISTED = 20
MAX_TAIL_WITH_DIAGNOSTICS = 15
_MAX_LINE = 160


def estimate_tokens(text: str) -> int:
    """Estimated model tokens of ``text``: ``ceil(len(text) / 4)``, counting characters.

    Four characters per token is the usual rule of thumb for English and code with
    current tokenizers; it over-counts dense code slightly, which errs on the safe side.
    """
    return math.ceil(len(text) / 4)


# --- excerpts -----------------------------------------------------------------------------


def render_excerpt(content: bytes, line: int, context: int = EXCERPT_CONTEXT) -> str | None:
    """Lines ``line - context`` to ``line + context`` of ``content``, numbered, the error
    line marked with ``>``. The excerpt stops at a run of two blank lines (the boundary of a
    neighbouring top-level definition) and carries no leading or trailing blank lines.
    None when ``line`` is not in the file."""
    lines = content.decode("utf-8", "replace").splitlines()
    if not 1 <= line <= len(lines):
        return None

    def blank(n: int) -> bool:
        return not lines[n - 1].strip()

    lo, hi = max(1, line - context), min(len(lines), line + context)
    for n in range(line + 1, hi):
        if blank(n) and blank(n + 1):
            hi = n - 1
            break
    for n in range(line - 1, lo, -1):
        if blank(n) and blank(n - 1):
            lo = n + 1
            break
    while lo < line and blank(lo):
        lo += 1
    while hi > line and blank(hi):
        hi -= 1
    width = len(str(hi))
    out = []
    for n in range(lo, hi + 1):
        text = lines[n - 1].expandtabs(4).rstrip()
        if len(text) > _MAX_LINE:
            text = text[: _MAX_LINE - 1] + "…"
        mark = ">" if n == line else " "
        out.append(f"{mark} {n:>{width}} | {text}".rstrip())
    return "\n".join(out)


# --- grouping -----------------------------------------------------------------------------


class DiagnosticGroup(msgspec.Struct):
    """Identical diagnostics (same tool, code, message and detail) at several places."""

    first: Diagnostic
    others: list[Diagnostic] = msgspec.field(default_factory=list)

    @property
    def count(self) -> int:
        return 1 + len(self.others)


def group_diagnostics(diagnostics: Sequence[Diagnostic]) -> list[DiagnosticGroup]:
    groups: dict[tuple[str, str | None, str, str], DiagnosticGroup] = {}
    for d in diagnostics:
        key = (d.tool, d.code, d.message, d.detail)
        if key in groups:
            groups[key].others.append(d)
        else:
            groups[key] = DiagnosticGroup(d)
    return list(groups.values())


def _headline(d: Diagnostic, with_tool: bool) -> str:
    message = d.message
    code = d.code
    if code and not message.startswith(code):
        if re.search(r"(?:Error|Exception|Failure)$", code):
            message = f"{code}: {message}"
        else:
            message = f"{message} [{code}]"
    where = d.location
    text = f"{where}: {message}" if where else message
    if d.test_id:
        text += f"  (test {d.test_id})"
    if with_tool:
        text += f"  ({d.tool})"
    return text


def _render_group(
    index: int,
    group: DiagnosticGroup,
    read: Callable[[str], bytes | None],
    with_tool: bool,
    with_excerpt: bool,
) -> str:
    d = group.first
    lines = [f"{index}. {_headline(d, with_tool)}"]
    if group.count > 1:
        # other failing tests by id, other places by location
        also = [o.test_id or o.location or "" for o in group.others]
        also = [a for a in dict.fromkeys(also) if a and a not in (d.test_id, d.location)]
        shown = ", ".join(also[:3]) + (f", +{len(also) - 3} more" if len(also) > 3 else "")
        label = "also" if all(o.test_id for o in group.others) else "also at"
        lines.append(f"   {group.count} times" + (f"; {label} {shown}" if shown else ""))
    for extra in d.detail.splitlines()[:6]:
        lines.append(f"   | {extra[:_MAX_LINE]}")
    if d.trace:
        lines.append("   via " + ", ".join(f"{p}:{n}" for p, n in d.trace[-3:]))
    if with_excerpt and d.path and d.line and ParseContext.is_project(d.path):
        content = read(d.path)
        excerpt = render_excerpt(content, d.line) if content is not None else None
        if excerpt:
            lines.extend("   " + e for e in excerpt.splitlines())
    return "\n".join(lines)


# --- the feedback -------------------------------------------------------------------------


def ranked(diagnosis: Diagnosis) -> list[Diagnostic]:
    """The diagnostics worth showing, most relevant first: errors of the diagnosis's class,
    then other errors; warnings and notes only when there is no error at all."""
    errors = [d for d in diagnosis.diagnostics if d.severity == "error"]
    pool = errors or list(diagnosis.diagnostics)
    first = [d for d in pool if d.error_class is diagnosis.error_class]
    return first + [d for d in pool if d.error_class is not diagnosis.error_class]


def _covered(line: str, diagnostics: Sequence[Diagnostic]) -> bool:
    """An output line that only repeats a diagnostic: its message and its place."""
    for d in diagnostics:
        message = d.message[:60]
        if len(message) < 6 or message not in line:
            continue
        if (d.path and d.path in line) or (d.test_id and d.test_id in line):
            return True
    return False


def _status(diagnosis: Diagnosis) -> str:
    if diagnosis.timed_out:
        return "timed out"
    return f"exited {diagnosis.exit_code}"


def build_feedback(
    diagnosis: Diagnosis,
    read_file: ReadFile,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
) -> str:
    """The next attempt's feedback for ``diagnosis``, within ``budget_tokens``.

    Tokens are estimated as ``ceil(characters / 4)`` (:func:`estimate_tokens`). Sections,
    in order of priority: the class and summary, the failing tests, the first error
    locations (identical diagnostics collapsed with a count) each with a ±3-line excerpt read
    through ``read_file(path)`` (a path relative to the shadow root; None when unreadable),
    the files involved, and the last lines of the output with the noise removed. When the
    budget runs out, later diagnostics lose their excerpts, then are only counted, and the
    output tail is shortened; a final note says what was left out.
    """
    budget = max(1, budget_tokens) * 4
    read = _cached(read_file)
    head = [f"{diagnosis.error_class.value}: {diagnosis.summary}"]
    if diagnosis.command:
        head.append(f"`{diagnosis.command}` {_status(diagnosis)}")
    parts: list[str] = ["\n".join(head)]
    left_out: list[str] = []
    if diagnosis.failing_tests:
        parts.append(_tests_section(diagnosis.failing_tests, budget * 0.4 - _used(parts)))
    files_line = _files_line(diagnosis.files_involved)
    reserve = len(files_line) + 120  # the files line and a trim note
    groups = group_diagnostics(ranked(diagnosis))
    rendered = _fitted_groups(groups, read, budget - reserve, _used(parts), left_out)
    if rendered:
        shown = len(rendered)
        title = f"Errors ({shown} of {len(groups)}):" if shown < len(groups) else "Errors:"
        parts.append("\n".join([title, *rendered]))
    if files_line:
        parts.append(files_line)
    tail = _tail_section(diagnosis, bool(rendered), budget - _used(parts), left_out)
    if tail:
        parts.append(tail)
    if left_out:
        parts.append(f"[trimmed to ~{budget_tokens} tokens: " + ", ".join(left_out) + " left out]")
    return _cut("\n".join(parts), budget)


def _cached(read_file: ReadFile) -> ReadFile:
    """``read_file`` read once per path; an OSError reads as None."""
    cache: dict[str, bytes | None] = {}

    def read(path: str) -> bytes | None:
        if path not in cache:
            try:
                cache[path] = read_file(path)
            except OSError:
                cache[path] = None
        return cache[path]

    return read


def _used(parts: list[str]) -> int:
    return len("\n".join(parts))


def _tests_section(tests: Sequence[str], limit: float) -> str:
    """The failing tests, as many as fit in ``limit`` characters (at most
    ``MAX_TESTS_LISTED``), the rest counted."""
    header = f"Failing tests ({len(tests)}):"
    room = limit - len(header) - 20
    listed: list[str] = []
    for test in tests[:MAX_TESTS_LISTED]:
        if listed and len(test) + 3 > room:
            break
        listed.append(f"  {test}")
        room -= len(test) + 3
    more = len(tests) - len(listed)
    return "\n".join([header, *listed] + ([f"  … and {more} more"] if more else []))


def _files_line(files: Sequence[str]) -> str:
    if not files:
        return ""
    line = "Files involved: " + ", ".join(files[:MAX_FILES_LISTED])
    if len(files) > MAX_FILES_LISTED:
        line += f", +{len(files) - MAX_FILES_LISTED} more"
    return line


def _fitted_groups(
    groups: list[DiagnosticGroup], read: ReadFile, budget: int, used: int, left_out: list[str]
) -> list[str]:
    """The groups rendered in order while they fit ``budget`` after ``used`` characters:
    with their excerpts, else without; the first that fits neither ends the list, and
    ``left_out`` counts it and the rest."""
    with_tool = len({g.first.tool for g in groups}) > 1
    rendered: list[str] = []
    for i, group in enumerate(groups, 1):
        base = used + len("\n".join(rendered)) + 40
        full = _render_group(i, group, read, with_tool, with_excerpt=True)
        if base + len(full) + 1 <= budget:
            rendered.append(full)
            continue
        short = _render_group(i, group, read, with_tool, with_excerpt=False)
        if base + len(short) + 1 <= budget:
            rendered.append(short)
            continue
        left_out.append(f"{len(groups) - i + 1} more diagnostic(s)")
        break
    return rendered


def _tail_section(
    diagnosis: Diagnosis, with_errors: bool, room: int, left_out: list[str]
) -> str | None:
    """The output's last lines that do not only repeat a diagnostic, as many as fit
    ``room`` (at most ``MAX_TAIL_WITH_DIAGNOSTICS`` beside shown errors)."""
    tail_lines = [
        line for line in diagnosis.output.splitlines() if not _covered(line, diagnosis.diagnostics)
    ]
    while tail_lines and not tail_lines[0].strip():
        tail_lines.pop(0)
    if not tail_lines:
        return None
    limit = MAX_TAIL_WITH_DIAGNOSTICS if with_errors else len(tail_lines)
    candidates = tail_lines[-limit:]
    note_room = 100  # for the trim note
    room = room - len("Output (last lines, noise removed):") - 2 - note_room
    chosen: list[str] = []
    for line in reversed(candidates):
        line = line[:_MAX_LINE] + ("…" if len(line) > _MAX_LINE else "")
        cost = len(line) + 3
        if cost > room:
            break
        chosen.append("  " + line)
        room -= cost
    chosen.reverse()
    if len(chosen) < len(candidates):
        left_out.append(f"{len(tail_lines) - len(chosen)} earlier output line(s)")
    if chosen:
        return "\n".join(["Output (last lines, noise removed):", *chosen])
    return None


def _cut(text: str, budget: int) -> str:
    """``text`` cut at a line end to fit ``budget`` characters, marked with an ellipsis."""
    if len(text) > budget:
        cut = text[: budget - 2]
        text = cut[: cut.rfind("\n")] if "\n" in cut else cut
        text += "\n…" if len(text) + 2 <= budget else ""
    return text
