"""The sections of a run's page below its timeline: each attempt's record and feedback,
VERIFY (the command, its exit and each attempt's output tail), the changed files with
their before/after SHA-256 and their part of the diff, the tool calls with the effects
the host attested, and the transcript (model turns and tool calls from the trace; no model
prose is ever stored). Every value is stored text and goes through ``markup.text``."""

from __future__ import annotations

import json
from typing import Any

from tidegate.inspector.markup import (
    MAX_TOTAL,
    block,
    cut,
    json_block,
    more,
    rows,
    status,
    table,
    text,
)
from tidegate.text.paths import git_quoted
from tidegate.text.sanitize import sanitize_value

MAX_EVENTS = 2000
"""Transcript events shown (the first)."""
MAX_CALLS = 500
"""Tool calls shown (the first)."""
EFFECTS_TEXT = 4000
"""Characters of one tool call's effects shown."""
SUMMARY_TEXT = 4000
"""Characters of one transcript event's summary shown."""
_ATTEMPT_FIELDS = (
    "status", "failure_phase", "error_class", "retryable", "proposal_sha256",
    "candidate_tree", "diagnostics", "duration_ms", "execution_id",
)  # fmt: skip


def attempts_section(attempts: list[dict[str, Any]], report: dict[str, Any] | None) -> str:
    feedback = list(report.get("feedback") or []) if report else []
    out = ['<section id="attempts"><h2>Attempts</h2>']
    if not attempts:
        out.append("<p>No attempt recorded.</p>")
    for a in attempts:
        number = a.get("attempt")
        facts = "".join(
            f"<dt>{text(name)}</dt><dd>{_value(a.get(name))}</dd>"
            for name in _ATTEMPT_FIELDS
            if name in a
        )
        out.append(f'<article class="attempt"><h3>attempt {text(number)}</h3><dl>{facts}</dl>')
        if type(number) is int and 0 < number <= len(feedback):
            out.append(f"<h4>feedback</h4>{block(feedback[number - 1], css='feedback')}")
        out.append("</article>")
    out.append("</section>")
    return "".join(out)


def _value(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return f'<code class="sha">{text(value)}</code>'
    return text(value)


def verify_section(phases: list[dict[str, Any]], report: dict[str, Any] | None) -> str:
    verify = report.get("verify") if report else None
    runs = [p for p in phases if p["phase"] == "VERIFY"]
    if verify is None and not runs:
        return ""
    out = ['<section id="verify"><h2>VERIFY</h2>']
    if isinstance(verify, dict):
        facts = [
            ("command", f"<code>{text(verify.get('command'))}</code>"),
            ("exit code", text(verify.get("exit_code"))),
            ("timed out", text(verify.get("timed_out"))),
            ("duration", text(f"{verify.get('duration_s')} s")),
        ]
        if verify.get("output_file"):
            # A path on disk: named, never opened (a store is not trusted to point at files).
            facts.append(("complete output", f"<code>{text(verify['output_file'])}</code>"))
        out.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>")
    for p in runs:
        out.append(f"<h3>attempt {text(p['attempt'])}: {status(p['status'])}</h3>")
        out.append(block(p["detail"], css="out"))
    out.append("</section>")
    return "".join(out)


def changes_section(effects: dict[str, Any], report: dict[str, Any] | None) -> str:
    """Each changed file with its hashes and its part of the diff; the diff's other parts
    (none, normally) after them; then the files APPLY_BACK wrote."""
    changed = effects["changed_files"]
    chunks = _chunks(str(report.get("diff") or "") if report else "")
    out = ['<section id="changes"><h2>Changes</h2>']
    if not changed:
        out.append("<p>No change recorded.</p>")
    budget = MAX_TOTAL
    for f in changed:
        path = str(f.get("path"))
        chunk = None
        for header in _headers(path):
            chunk = chunk if chunk is not None else chunks.pop(header, None)
        out.append('<article class="file">')
        out.append(f'<h3 class="path">{text(path)}</h3>')
        facts = [
            ("action", text(f.get("action"))),
            ("before sha256", _sha(f.get("before_sha256"), "before")),
            ("after sha256", _sha(f.get("after_sha256"), "after")),
            ("mode", text(f"{f.get('before_mode') or '-'} -> {f.get('after_mode') or '-'}")),
        ]
        out.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>")
        if chunk is not None:
            shown, budget = _diff(chunk, budget)
            out.append(shown)
        out.append("</article>")
    for header, chunk in chunks.items():
        out.append(f'<article class="file"><h3 class="path">{text(header)}</h3>')
        shown, budget = _diff(chunk, budget)
        out.append(shown + "</article>")
    if report and report.get("diff_sha256"):
        out.append(
            f'<p>diff sha256 <code class="sha">{text(report["diff_sha256"])}</code> '
            f"(T0 <code>{text(report.get('t0_ref') or '-')}</code>)</p>"
        )
    applied = effects["applied_files"]
    if applied:
        cells = (
            (
                text(a.get("action")),
                text(a.get("path")),
                _sha(a.get("before_sha256"), "before"),
                _sha(a.get("after_sha256"), "after"),
            )
            for a in applied
        )
        out.append("<h3>written to the work tree</h3>")
        out.append(table(("action", "path", "before sha256", "after sha256"), rows(cells)))
    out.append("</section>")
    return "".join(out)


def _sha(value: object, side: str) -> str:
    if not value:
        return "-"
    return f'<code class="sha" data-side="{side}">{text(value)}</code>'


def _headers(path: str) -> tuple[str, str]:
    """The ``diff --git`` line of ``path``, as git writes it plain and C-quoted."""
    quoted = (git_quoted(f"{side}/{path}").decode("ascii") for side in "ab")
    return f"diff --git a/{path} b/{path}", "diff --git " + " ".join(quoted)


def _chunks(diff: str) -> dict[str, str]:
    """The diff split at each ``diff --git`` line, by that line (in order)."""
    out: dict[str, str] = {}
    header: str | None = None
    lines: list[str] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git "):
            if header is not None:
                out[header] = "".join(lines)
            header, lines = line.rstrip("\n"), []
        lines.append(line)
    if header is not None:
        out[header] = "".join(lines)
    elif diff:
        out["diff"] = diff
    return out


def _diff(chunk: str, budget: int) -> tuple[str, int]:
    """One file's diff, lines marked added, removed or hunk headers; cut once the page's
    ``budget`` of characters is spent. Returns the markup and the budget left."""
    shown, left = cut(chunk, max(budget, 0))
    lines = []
    for line in shown.splitlines():
        css = ""
        if line.startswith("+") and not line.startswith("+++"):
            css = "add"
        elif line.startswith("-") and not line.startswith("---"):
            css = "del"
        elif line.startswith("@@"):
            css = "hunk"
        lines.append(f'<span class="{css}">{text(line)}</span>' if css else text(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>" + more(left), budget - len(shown)


def tool_calls_section(calls: list[dict[str, Any]]) -> str:
    if not calls:
        return ""
    cells = (
        (
            f'<code class="call">{text(c["tool_call_id"])}</code>',
            text(c["canonical_tool"]),
            status(c["status"]),
            f'<code class="sha">{text(c["input_sha256"])}</code>',
            "-" if c["effects"] is None else json_block(c["effects"], EFFECTS_TEXT),
        )
        for c in calls[:MAX_CALLS]
    )
    headers = ("call", "tool", "status", "input sha256", "host-attested effects")
    note = f'<p class="note">The first {MAX_CALLS} of {len(calls)} calls.</p>'
    return (
        '<section id="tools"><h2>Tool calls</h2>'
        + table(headers, rows(cells), css="tools")
        + (note if len(calls) > MAX_CALLS else "")
        + "</section>"
    )


def transcript_section(events: list[dict[str, Any]]) -> str:
    """The model's turns and the tool calls, in the trace's order."""
    shown = [e for e in events if str(e["kind"]).startswith(("agent.", "tool."))]
    if not shown:
        return ""
    cells = (
        (
            text(number),
            text(e["kind"]),
            text(e["attempt"] if e["attempt"] is not None else "-"),
            text(e["phase"] or "-"),
            _line(_summary(str(e["kind"]), e["payload"])),
        )
        for number, e in enumerate(shown[:MAX_EVENTS], start=1)
    )
    note = f'<p class="note">The first {MAX_EVENTS} of {len(shown)} events.</p>'
    return (
        '<section id="transcript"><h2>Transcript</h2>'
        '<p class="note">Model turns and tool calls as the trace holds them: no model prose '
        "is stored, only its length and digest.</p>"
        + table(("#", "event", "attempt", "phase", "what"), rows(cells), css="transcript")
        + (note if len(shown) > MAX_EVENTS else "")
        + "</section>"
    )


def _line(summary: str) -> str:
    shown, left = cut(summary, SUMMARY_TEXT)
    return text(shown) + (f" ... ({left} more characters)" if left else "")


def _summary(kind: str, payload: dict[str, Any]) -> str:
    """One event in a line of plain text (``markup.text`` escapes it)."""
    p = payload
    if kind == "agent.turn":
        calls = ", ".join(str(c) for c in p.get("tool_calls") or []) or "none"
        return (
            f"step {p.get('step')}: {p.get('stop_reason')}; {p.get('input_tokens')} tokens in, "
            f"{p.get('output_tokens')} out; {p.get('text_chars')} characters of text; "
            f"tools called: {calls}"
        )
    if kind == "tool.requested":
        return f"{p.get('canonical_tool')} (input {p.get('input_sha256')})"
    if kind == "tool.finished":
        return f"{p.get('status')} (result {p.get('result_sha256')})"
    if kind == "agent.finished":
        sequence = ", ".join(str(t) for t in p.get("tool_sequence") or []) or "none"
        return (
            f"{p.get('status')} after {p.get('steps')} step(s), {p.get('tool_calls')} tool "
            f"call(s) ({sequence}); {p.get('input_tokens')} tokens in, "
            f"{p.get('output_tokens')} out"
        )
    if kind == "agent.started":
        return f"{p.get('model')} in {p.get('phase')}, budget {p.get('budget')}"
    return json.dumps(sanitize_value(p), sort_keys=True, ensure_ascii=False)
