"""One run's page, from ``store.views.run_view`` and the run's trace: the run and its
report's message, the evidence (the checkpoint chain as verified or refused, the replay
hash recomputed), the phases of each attempt on a timeline, then the sections of
``inspector.sections`` (attempts with their feedback, each attempt's proposal text
(``inspector.proposals``), VERIFY, the changes with their hashes and diff, tool calls with
their host-attested effects, the transcript). A running run's page refreshes itself."""

from __future__ import annotations

from typing import Any

from tidegate.inspector.markup import block, page, rows, status, table, text, when
from tidegate.inspector.proposals import proposals_section
from tidegate.inspector.runs import REFRESH_S
from tidegate.inspector.sections import (
    attempts_section,
    changes_section,
    tool_calls_section,
    transcript_section,
    verify_section,
)

_BAR = 1000
"""The timeline's width in SVG units (it is scaled to the page's width)."""
_MIN_SHARE = 8
"""The narrowest phase on a timeline, in SVG units, so a fast phase stays visible."""


def run_page(
    base: str,
    view: dict[str, Any],
    events: list[dict[str, Any]],
    proposals: list[tuple[int, bytes]] | None = None,
) -> str:
    """The page of the run ``view`` describes; ``events``: its trace; ``proposals``: each
    attempt's kept proposal blob."""
    run, report = view["run"], view["report"]
    live = run["status"] == "running"
    parts = [
        _header(base, run, report),
        _held(run, view["landings"]),
        _evidence(view),
        _timeline(view["phases"]),
        attempts_section(view["attempts"], report),
        proposals_section(proposals or []),
        verify_section(view["phases"], report),
        changes_section(view["effects"], report),
        tool_calls_section(view["effects"]["tool_calls"]),
        transcript_section(events),
        _report_notes(report),
    ]
    if live:
        parts.append(f'<p class="note">Running: this page refreshes every {REFRESH_S} s.</p>')
    body = "".join(parts) + "</main>"
    return page(
        f"tidegate run {run['run_id']}",
        body,
        css_href=base + "style.css",
        refresh=REFRESH_S if live else None,
    )


def _header(base: str, run: dict[str, Any], report: dict[str, Any] | None) -> str:
    failure = ""
    if run["error_class"]:
        failure = f" {text(run['error_class'])} in {text(run['failure_phase'] or '-')}"
    facts = [
        ("mode", text(run["mode"])),
        ("kind", text(run["kind"])),
        ("task", text(run["task_id"])),
        ("repository", text(run["repo"])),
        ("attempts", text(run["attempts"])),
        ("started", text(when(run["started_ms"]))),
        ("updated", text(when(run["updated_ms"]))),
        ("execution", text(run["execution_id"] or "-")),
    ]
    if report is not None:
        facts.append(("planner", text(report.get("planner") or "-")))
    message = ""
    if report is not None and report.get("message"):
        message = f'<p class="message">{text(report["message"])}</p>'
    return (
        f'<header><p class="nav"><a href="{text(base)}">all runs</a></p>'
        f'<h1>run <span class="id">{text(run["run_id"])}</span></h1>'
        f"<p>{status(run['status'])}{failure}</p>{message}{_facts(facts)}</header><main>"
    )


def _held(run: dict[str, Any], landings: list[dict[str, Any]]) -> str:
    """What became of a held run's change: still held (and how to answer), or the
    landings recorded since (applied, discarded, undone)."""
    if run["status"] != "held" and not landings:
        return ""
    if not landings:
        rid = text(run["run_id"])
        return (
            '<section id="held"><p class="verdict unknown">Held: verified, not applied. '
            f"Accept it with <code>tidegate apply {rid}</code> or drop it with "
            f"<code>tidegate discard {rid}</code> (or answer it in the editor).</p></section>"
        )
    items = "".join(
        f"<li>{text(landing['action'])} at {text(when(landing['at_ms']))}</li>"
        for landing in landings
    )
    return f'<section id="held"><h2>Landing</h2><ul>{items}</ul></section>'


def _facts(facts: list[tuple[str, str]]) -> str:
    """A definition list of (name, markup) pairs."""
    return "<dl>" + "".join(f"<dt>{text(k)}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"


def _evidence(view: dict[str, Any]) -> str:
    evidence, resume = view["evidence"], view["resume"]
    chain = str(evidence["checkpoint_chain"])
    if chain == "verified":
        verdict = '<p class="verdict good">Checkpoint chain verified.</p>'
    elif chain.startswith("refused"):
        verdict = (
            '<p class="verdict bad" id="tampered">Checkpoint chain REFUSED: the record was '
            f"altered after it was written.<br>{text(chain)}</p>"
        )
    else:
        verdict = f'<p class="verdict unknown">Checkpoint chain: {text(chain)}</p>'
    replay, again = evidence["replay_hash"], evidence["replay_hash_recomputed"]
    same = "-" if not replay or not again else ("matches" if replay == again else "DIFFERS")
    last = evidence["last_checkpoint"]
    facts = [
        ("checkpoints", text(evidence["checkpoints"])),
        ("last checkpoint", "-" if last is None else _last(last)),
        ("trace events", text(evidence["trace_events"])),
        ("replay hash", f'<code class="sha">{text(replay or "-")}</code>'),
        ("recomputed", f'<code class="sha">{text(again or "-")}</code> ({text(same)})'),
        ("diff sha256", f'<code class="sha">{text(evidence["diff_sha256"] or "-")}</code>'),
    ]
    resumable = ""
    if resume:
        after = f"after {resume['after']}" if resume["after"] else "at the start"
        resumable = (
            f'<p class="note">Resumable {text(after)} of attempt {text(resume["attempt"])}: '
            f"<code>{text(resume['command'])}</code></p>"
        )
    return f'<section id="evidence"><h2>Evidence</h2>{verdict}{_facts(facts)}{resumable}</section>'


def _last(last: dict[str, Any]) -> str:
    return (
        f"{text(last['seq'])} ({text(last['reason'])}) "
        f'<code class="sha">{text(last["hash"])}</code>'
    )


def _timeline(phases: list[dict[str, Any]]) -> str:
    """Each attempt's phases as a bar (widths by duration) and a table."""
    if not phases:
        return '<section id="phases"><h2>Phases</h2><p>No phase recorded.</p></section>'
    attempts: dict[object, list[dict[str, Any]]] = {}
    for p in phases:
        attempts.setdefault(p["attempt"], []).append(p)
    out = ['<section id="phases"><h2>Phases</h2>']
    for number, group in attempts.items():
        out.append(f"<h3>attempt {text(number)}</h3>{_bar(group)}")
        cells = (
            (
                text(p["phase"]),
                status(p["status"]),
                text(p["effect"]),
                text(f"{_ms(p['duration_ms']):.1f} ms"),
                text(p["error_class"] or ""),
                block(p["detail"], css="detail"),
            )
            for p in group
        )
        headers = ("phase", "status", "effect", "duration", "error", "detail")
        out.append(table(headers, rows(cells), css="phases"))
    out.append("</section>")
    return "".join(out)


def _ms(value: object) -> float:
    return float(value) if isinstance(value, int | float) and value == value else 0.0


def _bar(group: list[dict[str, Any]]) -> str:
    """An SVG bar: one rectangle per phase, its width its share of the attempt's time (at
    least ``_MIN_SHARE``), its class from its status, its name and detail in a tooltip."""
    durations = [max(_ms(p["duration_ms"]), 0.0) for p in group]
    total = sum(durations) or 1.0
    room = _BAR - _MIN_SHARE * len(group)
    widths = [_MIN_SHARE + max(room, 0) * d / total for d in durations]
    scale = _BAR / sum(widths)
    x, shapes = 0.0, []
    for p, width in zip(group, widths, strict=True):
        w = width * scale
        css = {"ok": "ok", "failed": "failed"}.get(str(p["status"]), "other")
        tip = f"{p['phase']} {p['status']} {_ms(p['duration_ms']):.1f} ms: {p['detail'] or ''}"
        shapes.append(
            f'<rect class="{css}" x="{x:.2f}" y="0" width="{w:.2f}" height="20">'
            f"<title>{text(tip[:300])}</title></rect>"
        )
        x += w
    return (
        f'<svg class="timeline" viewBox="0 0 {_BAR} 20" preserveAspectRatio="none" '
        f'role="img" aria-label="phases by duration">{"".join(shapes)}</svg>'
    )


def _report_notes(report: dict[str, Any] | None) -> str:
    if report is None:
        return ""
    out = []
    for finding in report.get("findings") or []:
        where = f"{finding.get('path')}:{finding.get('line') or ''} " if finding.get("path") else ""
        out.append(
            f"<li>[{text(finding.get('severity'))}] {text(where)}{text(finding.get('message'))}</li>"
        )
    findings = f"<h3>findings</h3><ul>{''.join(out)}</ul>" if out else ""
    rejects = report.get("rejects") or []
    rejected = ""
    if rejects:
        items = "".join(f"<li>{text(r)}</li>" for r in rejects)
        rejected = f"<h3>rejects in {text(report.get('rejects_dir') or '-')}</h3><ul>{items}</ul>"
    notes = "".join(f"<li>{text(n)}</li>" for n in report.get("notes") or [])
    noted = f"<h3>notes</h3><ul>{notes}</ul>" if notes else ""
    if not (findings or rejected or noted):
        return ""
    return f'<section id="notes"><h2>Report</h2>{findings}{rejected}{noted}</section>'
