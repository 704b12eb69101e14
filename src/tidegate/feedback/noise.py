"""Noise removal for SHRINK: verify output without progress dots, timing, passing rows,
separators, installed-code stack frames, blank runs and run-to-run variation (durations,
object addresses, thread and goroutine numbers, the shadow's path), so the same failure
reads the same."""

from __future__ import annotations

import re

from tidegate.feedback.diagnostics import ParseContext

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
