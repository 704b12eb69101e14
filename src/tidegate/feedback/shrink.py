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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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


# --- noise removal ------------------------------------------------------------------------

_DROP = tuple(
    re.compile(p)
    for p in (
        r"^\S+\.py [.FEsxXp]+\s*(?:\[\s*\d+%\])?$",  # pytest progress per file
        r"^[.FEsxXpu]+\s*(?:\[\s*\d+%\])?$",  # pytest -q / unittest progress
        r"^\S+::\S+ (?:PASSED|SKIPPED|XFAIL|XPASS|XFAILED)\b",  # pytest -v passing rows
        r"^[=\-_~*#]{5,}$",  # rules
        r"^(?:_ ){4,}_?$",  # pytest's spaced frame separator
        r"^(?:platform \w+ -- Python|rootdir:|configfile:|plugins:|cachedir:|testpaths:"
        r"|hypothesis profile|collecting \.\.\.|collected \d+ items?)",  # pytest header
        r"^\s*(?:Compiling|Checking|Finished|Running|Fresh|Downloaded|Downloading|Updating"
        r"|Locking|Adding|Doc-tests|Documenting) \S",  # cargo progress (not "Blocking")
        r"^running \d+ tests?$",
        r"^=== (?:RUN|PAUSE|CONT|NAME)\s",  # go test -v
        r"^\s*--- (?:PASS|SKIP): ",
        r"^ok  \t",
        r"^(?:PASS|FAIL)$",
        r"^PASS \S",  # jest passing suites
        r"^(?:Snapshots:|Time:|Ran all test suites)",
        r"^.+ \.\.\. ok$",  # unittest -v / cargo passing rows
        r"^npm (?:ERR!|error) A complete log of this run can be found in",
        r"^\s+at .*(?:node_modules/|node:internal|\(node:|<anonymous>)",  # node frames
        r"^\s+at /rustc/",  # rust std frames
        r"^\t/usr/(?:local/)?(?:lib/)?go[^/]*/src/",  # Go standard library frames
        r"^note: (?:run with `RUST_BACKTRACE|Some details are omitted)",
    )
)
# A Python frame in installed code; its source and caret lines below go with it.
_PY_EXTERNAL_FRAME = re.compile(
    r'^(\s*)File "[^"]*(?:site-packages|dist-packages|/lib/python3[\d.]*/|<frozen )'
)
_PYTEST_EXTERNAL_LOC = re.compile(
    r"^(?:/\S*(?:site-packages|/lib/python3[\d.]*)/\S+|<frozen [^>]+>):\d+: in \S+$"
)
_TITLED_RULE = re.compile(r"^[=_\-]{3,} (?P<title>.+?) [=_\-]{3,}$")
_SUBSTITUTIONS = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"\b0x[0-9a-fA-F]{6,}\b", "0x…"),
        (r" in \d+(?:\.\d+)?\s?m?s\b", ""),  # "1 failed in 1.02s", "Ran 5 tests in 0.001s"
        (r" ?\(\d+(?:\.\d+)?\s?m?s\)", ""),  # go "(0.00s)", jest "(5 ms)"
        (r"\t\d+(?:\.\d+)?s$", ""),  # go "FAIL\tpkg\t0.005s"
        (r"; finished in \d+(?:\.\d+)?s", ""),  # cargo test result
        (r"(thread '[^']*') \(\d+\)", r"\1"),  # rust thread ids
        (
            r"\bgoroutine \d+ \[",
            "goroutine [",
        ),
        (r"\b\d{4}-\d\d-\d\dT\d\d[:_]\d\d[:_]\d\d[\w.:_-]*", "<time>"),
        (r"It is held by process \d+", "It is held by another process"),
    )
)


def clean_output(text: str, ctx: ParseContext | None = None) -> str:
    """The output without noise, run-to-run variation and the shadow root's path."""
    if ctx is not None:
        text = ctx.strip_root(text)
    lines = text.splitlines()
    kept: list[str] = []
    skip_indent: int | None = None
    for i, line in enumerate(lines):
        if skip_indent is not None:
            if line.strip() and len(line) - len(line.lstrip()) > skip_indent:
                continue
            skip_indent = None
        if (m := _PY_EXTERNAL_FRAME.match(line)) is not None:
            skip_indent = len(m.group(1))
            continue
        if _PYTEST_EXTERNAL_LOC.match(line):
            skip_indent = 0  # drop the indented source lines that follow
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _is_dropped(line) or (_is_frame_pair(line) and _is_dropped(nxt)):
            continue
        if (m := _TITLED_RULE.match(line)) is not None:
            line = f"[{m.group('title')}]"
        for pattern, repl in _SUBSTITUTIONS:
            line = pattern.sub(repl, line)
        kept.append(line.rstrip())
    return "\n".join(_collapse(kept))


def _is_dropped(line: str) -> bool:
    return any(p.search(line) for p in _DROP)


def _is_frame_pair(line: str) -> bool:
    """The function line of a Go or Rust stack frame whose location line comes next."""
    return bool(re.match(r"^(?:\s+\d+: |[\w./*()]+\(.*\)$|created by )", line))


def _collapse(lines: list[str]) -> list[str]:
    """Blank runs to one blank line, identical consecutive lines to one with a count."""
    out: list[str] = []
    counts: list[int] = []
    for line in lines:
        if out and line == out[-1]:
            counts[-1] += 1
            continue
        out.append(line)
        counts.append(1)
    result = [
        line if n == 1 or not line.strip() else f"{line}  [repeated {n} times]"
        for line, n in zip(out, counts, strict=True)
    ]
    while result and not result[0].strip():
        result.pop(0)
    while result and not result[-1].strip():
        result.pop()
    return result


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


@dataclass
class DiagnosticGroup:
    """Identical diagnostics (same tool, code, message and detail) at several places."""

    first: Diagnostic
    others: list[Diagnostic] = field(default_factory=list)

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
    cache: dict[str, bytes | None] = {}

    def read(path: str) -> bytes | None:
        if path not in cache:
            try:
                cache[path] = read_file(path)
            except OSError:
                cache[path] = None
        return cache[path]

    head = [f"{diagnosis.error_class.value}: {diagnosis.summary}"]
    if diagnosis.command:
        head.append(f"`{diagnosis.command}` {_status(diagnosis)}")
    parts: list[str] = ["\n".join(head)]
    left_out: list[str] = []

    def used() -> int:
        return len("\n".join(parts))

    tests = diagnosis.failing_tests
    if tests:
        header = f"Failing tests ({len(tests)}):"
        room = budget * 0.4 - used() - len(header) - 20
        listed: list[str] = []
        for test in tests[:MAX_TESTS_LISTED]:
            if listed and len(test) + 3 > room:
                break
            listed.append(f"  {test}")
            room -= len(test) + 3
        more = len(tests) - len(listed)
        parts.append("\n".join([header, *listed] + ([f"  … and {more} more"] if more else [])))

    files = diagnosis.files_involved
    files_line = ""
    if files:
        files_line = "Files involved: " + ", ".join(files[:MAX_FILES_LISTED])
        if len(files) > MAX_FILES_LISTED:
            files_line += f", +{len(files) - MAX_FILES_LISTED} more"
    reserve = len(files_line) + 120  # the files line and a trim note

    groups = group_diagnostics(ranked(diagnosis))
    with_tool = len({g.first.tool for g in groups}) > 1
    rendered: list[str] = []
    for i, group in enumerate(groups, 1):
        base = used() + len("\n".join(rendered)) + 40 + reserve
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
    if rendered:
        shown = len(rendered)
        title = f"Errors ({shown} of {len(groups)}):" if shown < len(groups) else "Errors:"
        parts.append("\n".join([title, *rendered]))
    if files_line:
        parts.append(files_line)

    tail_lines = [
        line for line in diagnosis.output.splitlines() if not _covered(line, diagnosis.diagnostics)
    ]
    while tail_lines and not tail_lines[0].strip():
        tail_lines.pop(0)
    if tail_lines:
        limit = MAX_TAIL_WITH_DIAGNOSTICS if rendered else len(tail_lines)
        candidates = tail_lines[-limit:]
        note_room = 100  # for the trim note
        room = budget - used() - len("Output (last lines, noise removed):") - 2 - note_room
        chosen: list[str] = []
        for line in reversed(candidates):
            line = line[:_MAX_LINE] + ("…" if len(line) > _MAX_LINE else "")
            cost = len(line) + 3
            if cost > room:
                break
            chosen.append("  " + line)
            room -= cost
        chosen.reverse()
        if chosen:
            parts.append("\n".join(["Output (last lines, noise removed):", *chosen]))
        if len(chosen) < len(candidates):
            left_out.append(f"{len(tail_lines) - len(chosen)} earlier output line(s)")
    if left_out:
        parts.append(f"[trimmed to ~{budget_tokens} tokens: " + ", ".join(left_out) + " left out]")
    text = "\n".join(parts)
    if len(text) > budget:
        cut = text[: budget - 2]
        text = cut[: cut.rfind("\n")] if "\n" in cut else cut
        text += "\n…" if len(text) + 2 <= budget else ""
    return text
