"""Each attempt's proposal on a run's page: the text the planner proposed (SEARCH/REPLACE
blocks, a unified diff, whole files), read from the blob the run kept under
``refs/tidegate/runs/<run-id>/attempt-<n>/proposal`` (``flow.progress``; once the run
ended, ``refs/tidegate/keep:<run-id>/attempt-<n>/proposal``), with the blob's
SHA-256. A proposal is the model's or the objective's text: it is shown through
``markup.text`` like every stored value, never as markup."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from tidegate.inspector.markup import block, text

MAX_ATTEMPTS = 20
"""The most attempts a run has (``RunRequest.max_attempts``)."""
_RUN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,127}")
"""A run id that can name a ref; any other (a planted one) has no proposal to read."""


def read_proposals(root: str, run_id: str, attempts: int) -> list[tuple[int, bytes]]:
    """The kept proposal blobs of attempts 1..``attempts`` of ``run_id`` (those that exist)."""
    from tidegate.errors import TidegateError
    from tidegate.workspace.keep import RUNS_PREFIX, kept_spec
    from tidegate.workspace.repo import discover

    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        return []
    try:
        git = discover(Path(root)).git
        out = []
        for number in range(1, min(attempts, MAX_ATTEMPTS) + 1):
            name = f"attempt-{number}/proposal"
            for spec in (f"{RUNS_PREFIX}/{run_id}/{name}", kept_spec(run_id, name)):
                res = git.run("cat-file", "blob", spec, check=False)
                if res.returncode == 0:
                    out.append((number, res.stdout))
                    break
        return out
    except TidegateError:
        return []


def proposals_section(proposals: list[tuple[int, bytes]]) -> str:
    if not proposals:
        return ""
    out = ['<section id="proposals"><h2>Proposals</h2>']
    for number, data in proposals:
        digest = hashlib.sha256(data).hexdigest()
        out.append(
            f'<article class="proposal"><h3>attempt {text(number)}</h3>'
            f'<p class="note">kept blob, sha256 <code class="sha">{text(digest)}</code></p>'
            f"{_proposal(data)}</article>"
        )
    out.append("</section>")
    return "".join(out)


def _proposal(data: bytes) -> str:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        shown = data.decode("utf-8", "backslashreplace")
        return '<p class="note">not a proposal record:</p>' + block(shown, css="proposal")
    parts: list[str] = []
    for name in ("search_replace", "diff"):
        if isinstance(value.get(name), str) and value[name]:
            parts.append(
                f"<h4>{text(name.replace('_', '/'))}</h4>{block(value[name], css='proposal')}"
            )
    for edit in _dicts(value.get("edits")):
        parts.append(f'<h4 class="path">{text(edit.get("path"))}</h4>{_content(edit)}')
    checks = [
        f"<li>{text(c.get('path'))}: {text(c.get('contains'))}</li>"
        for c in _dicts(value.get("checks"))
    ]
    if checks:
        parts.append(f"<h4>checks</h4><ul>{''.join(checks)}</ul>")
    return "".join(parts) or "<p>An empty proposal.</p>"


def _content(edit: dict[str, Any]) -> str:
    encoded = edit.get("content")
    if encoded is None:
        return "<p>deleted</p>"
    try:
        raw = base64.b64decode(str(encoded), validate=True)
        shown = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return f"<p>{text(len(str(encoded)))} characters of base64, not UTF-8 text</p>"
    return block(shown, css="proposal")


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
