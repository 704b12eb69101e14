"""Output that never needs rich: JSON for machines and plain lines for people, both through
the one sanitiser (``tidegate.text.sanitize``), so the fast path (``cli/fast.py``) and the typer
commands print the same, safe bytes."""

from __future__ import annotations

import json
import sys

from tidegate.text.sanitize import redact_value, sanitize

TYPE_CHECKING = False  # the fast path (``tidegate.cli.quickread``) does not import typing
if TYPE_CHECKING:
    from typing import Any

    from tidegate.records.report import FlowReport


def dump_json(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON for stdout: secrets redacted, every control character and every
    non-ASCII character written as an escape (``\\u001b``), never raw."""
    return json.dumps(redact_value(value), indent=indent, ensure_ascii=True)


def safe_line(text: str, *, stream: Any = None) -> None:
    """One line for a person: secrets redacted, control characters made visible."""
    (stream or sys.stdout).write(sanitize(text) + "\n")


def print_report(report: FlowReport, as_json: bool, *, with_diff: bool = True) -> None:
    """A run's report on standard output: JSON, or for a person the one renderer's text
    (``cli.report_text``; ``with_diff``: the change's diff last) through ``shown``."""
    if as_json:
        sys.stdout.write(dump_json(report.model_dump(mode="json")) + "\n")
        return
    from tidegate.cli.report_text import report_text, terminal_styles

    data = report.model_dump(mode="json")
    if not with_diff:
        data["diff"] = ""
    shown(report_text(data, terminal_styles()))


def shown(text: str) -> None:
    """Text for a person on standard output: through the user's pager when it is a
    terminal (``tidegate.exec.pager``, loaded only then), written as it is otherwise."""
    if sys.stdout.isatty():
        import os

        from tidegate.exec.pager import named_by_environment, page

        page(text, None if named_by_environment(os.environ) else _configured_pager())
    else:
        sys.stdout.write(text)


def _configured_pager() -> str | None:
    """The user's own ``core.pager`` (``git config --global``), or None: a repository's
    configuration is never asked, since whoever wrote the repository could have set it."""
    from pathlib import Path

    from tidegate.errors import GitError
    from tidegate.git.command import Git

    try:
        res = Git(Path("/")).run("config", "--global", "--get", "core.pager", check=False)
    except (GitError, OSError):
        return None
    return res.text.rstrip("\n") if res.returncode == 0 else None
