"""The runs of a repository: one row per run (``store.views.listing``), newest first, each
linking to its page. A running run makes the page refresh itself."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from tidegate.inspector.markup import page, rows, status, table, text, when

LIMIT = 200
"""Runs listed (the newest)."""
REFRESH_S = 3
"""Seconds between refreshes while a run is running."""


def run_href(base: str, run_id: str) -> str:
    """The path of a run's page: the run id percent-encoded whole (no ``/``, no ``.``
    segment, no scheme can come out of it)."""
    return f"{base}run/{quote(run_id, safe='', errors='backslashreplace')}"


def runs_page(base: str, repo: str, listed: list[dict[str, Any]]) -> str:
    """The page listing ``listed`` (``listing`` rows) of the repository at ``repo``."""
    cells = []
    for r in listed:
        rid = str(r["run_id"])
        link = f'<a href="{text(run_href(base, rid))}">{text(rid)}</a>'
        problem = f'<div class="bad">{text(r["problem"])}</div>' if r.get("problem") else ""
        cells.append(
            (
                link + problem,
                status(r["status"]),
                text(r["kind"]),
                text(r["mode"]),
                text(r["error_class"] or ""),
                text(r["attempts"]),
                text(f"{float(r['duration_s'] or 0):.1f} s"),
                text(when(r["started_ms"])),
            )
        )
    live = any(r["status"] == "running" for r in listed)
    body = f'<header><h1>tidegate runs</h1><p class="where">{text(repo)}</p></header><main>'
    if not listed:
        body += "<p>No recorded runs for this repository.</p>"
    else:
        headers = ("run", "status", "kind", "mode", "error", "attempts", "duration", "started")
        body += table(headers, rows(cells), css="runs")
        if len(listed) >= LIMIT:
            body += f'<p class="note">The newest {LIMIT} runs are shown.</p>'
    if live:
        body += f'<p class="note">A run is running: this page refreshes every {REFRESH_S} s.</p>'
    body += "</main>"
    return page(
        "tidegate runs", body, css_href=base + "style.css", refresh=REFRESH_S if live else None
    )
