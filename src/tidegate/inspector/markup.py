"""HTML out of stored text: every piece of text from the store passes ``text()`` (the one
sanitiser: secrets redacted, control and bidi characters made visible; then HTML escaping
of ``& < > " '``), so a file name, a command's output, a model's words or a planted value
is shown as the characters it holds and never as markup. Long text is cut with a note.

Markup is built only here and in the page modules, from literal tags and ``text()``'s
output: there is no other way for a string to reach a page.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from datetime import UTC, datetime

from tidegate.text.sanitize import sanitize, sanitize_value

LONG_TEXT = 20_000
"""Characters of one output, feedback or detail shown; the rest is cut with a note."""
MAX_TOTAL = 400_000
"""Characters of one diff shown on a page."""


def text(value: object) -> str:
    """Any value as escaped text for an element's content or a quoted attribute."""
    shown = "" if value is None else str(value)
    shown = sanitize(shown)
    if not shown.isascii():  # undecodable bytes kept as surrogates: written as escapes
        shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
    return html.escape(shown, quote=True)


def cut(value: object, limit: int = LONG_TEXT) -> tuple[str, int]:
    """``value`` as text cut to ``limit`` characters, and how many were left out."""
    shown = "" if value is None else str(value)
    if len(shown) <= limit:
        return shown, 0
    return shown[:limit], len(shown) - limit


def block(value: object, limit: int = LONG_TEXT, css: str = "out") -> str:
    """Text in a ``<pre>``, cut to ``limit`` characters with a note saying how much is left."""
    shown, left = cut(value, limit)
    return f'<pre class="{css}">{text(shown)}</pre>' + more(left)


def more(left: int) -> str:
    """The note under text that was cut."""
    if not left:
        return ""
    return (
        f'<p class="note">... {left} more characters not shown '
        "(<code>tidegate read RUN --json --detail</code> has all of it)</p>"
    )


def json_block(value: object, limit: int = LONG_TEXT) -> str:
    """JSON-shaped data, redacted, as indented text in a ``<pre>``."""
    shown = json.dumps(sanitize_value(value), indent=2, sort_keys=True, ensure_ascii=False)
    return block(shown, limit, css="json")


def when(ms: object) -> str:
    """Milliseconds since the epoch as UTC time, to the second."""
    if type(ms) is not int or not 0 <= ms < 253402300800000:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def status(value: object) -> str:
    """A status word in a badge; its class only from a fixed set."""
    word = "" if value is None else str(value)
    known = {"succeeded", "ok", "failed", "conflict", "running", "paused", "interrupted", "held"}
    css = word if word in known else "other"
    return f'<span class="badge {css}">{text(word)}</span>'


def rows(cells: Iterable[Iterable[str]]) -> str:
    """Table rows from cells that are already markup."""
    return "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells)


def table(headers: Iterable[str], body: str, css: str = "") -> str:
    """A table in a scrolling box (wide tables scroll inside it, never the page)."""
    head = "".join(f"<th>{text(h)}</th>" for h in headers)
    klass = f' class="{css}"' if css else ""
    return f'<div class="scroll"><table{klass}><tr>{head}</tr>{body}</table></div>'


def page(title: str, body: str, *, css_href: str, refresh: int | None = None) -> str:
    """A whole page: ``title`` is escaped here, ``body`` is markup, ``css_href`` a path the
    server built (the token and a fixed name)."""
    meta = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"{meta}<title>{text(title)}</title>"
        f'<link rel="stylesheet" href="{text(css_href)}"></head>'
        f"<body>{body}</body></html>\n"
    )
