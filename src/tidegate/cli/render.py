"""Rendering for people: phase progress on stderr and the final report on stdout.

Everything the CLI prints goes through ``console()`` or ``dump_json()``: text is
sanitised (``tidegate.text.sanitize``: secrets redacted, terminal control characters made
visible), so a file name, a command's output or a model's words can neither leak a key
onto the screen nor drive the terminal (clear it, move the cursor, write the clipboard).
"""

from __future__ import annotations

import base64
import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.status import Status
from rich.table import Table
from rich.text import Text

from tidegate.cli.output import dump_json
from tidegate.records.modes import Phase
from tidegate.records.report import FlowReport, PhaseEvent
from tidegate.text.paths import quote_path, visible
from tidegate.text.sanitize import sanitize

__all__ = ["ProgressPrinter", "SafeConsole", "console", "dump_json", "print_report"]


class SafeConsole(Console):
    """A rich Console whose ``print`` sanitises every string it is given (renderables such
    as tables are built from sanitised cells by their callers)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(sanitize(o) if isinstance(o, str) else o for o in objects), **kwargs)


def console(*, stderr: bool = False, markup: bool = True) -> Console:
    """The console every command prints through."""
    return SafeConsole(stderr=stderr, highlight=False, soft_wrap=True, markup=markup)


_MARK = {"ok": "[green]✓[/green]", "failed": "[red]✗[/red]"}


class ProgressPrinter:
    """A PhaseObserver that prints one line per phase as the run goes; on a terminal, a
    spinner with the elapsed time shows which phase is running (VERIFY can take minutes)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._attempt = 0
        self._status: Status | None = None

    def phase_started(self, attempt: int, phase: Phase) -> None:
        if attempt != self._attempt:
            self._attempt = attempt
            self.console.print(f"[bold]attempt {attempt}[/bold]")
        if self.console.is_terminal:
            self._status = self.console.status(f"{phase.value} ...", spinner="dots")
            self._status.start()

    def activity(self, text: str) -> None:
        """A line about work inside the running phase (a model's tool call)."""
        self.console.print(f"      [dim]· {escape(visible(text))}[/dim]")

    def phase_finished(self, event: PhaseEvent) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
        mark = _MARK[event.status]
        detail = escape(visible(event.detail))
        self.console.print(
            f"  {mark} {event.phase:<15} [dim]{event.duration_ms:>8.1f} ms[/dim]  {detail}"
        )


def print_report(console: Console, report: FlowReport) -> None:
    colour = {"succeeded": "green", "failed": "red", "conflict": "yellow"}.get(
        report.status, "cyan"
    )
    console.print(
        f"[bold {colour}]{report.status}[/bold {colour}] {report.mode} run {report.run_id} "
        f"after {report.attempts} attempt(s): {escape(visible(report.message))}",
        highlight=False,
    )
    if report.status == "paused":
        console.print(f"  continue it with: tidegate resume {report.run_id}", highlight=False)
    elif report.failure_phase:
        console.print(f"  failed in {report.failure_phase} ({report.error_class})")
    if report.changed_files:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("change")
        table.add_column("path")
        table.add_column("before sha256")
        table.add_column("after sha256")
        for f in report.changed_files:
            # Text, not a str: a name like "[bold]x" is a name, not markup.
            table.add_row(
                f.action,
                Text(sanitize(_shown(f.path, f.path_bytes))),
                (f.before_sha256 or "-")[:16],
                (f.after_sha256 or "-")[:16],
            )
        console.print(table)
    if report.diff_sha256:
        console.print(f"  diff sha256 {report.diff_sha256}  (T0 {report.t0_ref})")
    for finding in report.findings:
        where = f"{finding.path}:{finding.line or ''} " if finding.path else ""
        console.print(f"  [{finding.severity}] {visible(where + finding.message)}", markup=False)
    if report.rejects:
        console.print(f"  rejects written to {visible(report.rejects_dir or '')}:", markup=False)
        for rej in report.rejects:
            console.print(f"    {quote_path(rej)}", markup=False)
    for number, text in enumerate(report.feedback, start=1):
        console.print(f"  feedback from attempt {number}:", markup=False)
        lines = text.splitlines()
        for line in lines[:15]:
            console.print(f"    {visible(line)}", markup=False)
        if len(lines) > 15:
            console.print(
                f"    ... ({len(lines) - 15} more lines in the --json report)", markup=False
            )
    for note in report.notes:
        console.print(f"  note: {visible(note)}", markup=False)


def _shown(path: str, raw_b64: str | None) -> str:
    """A reported path quoted for the terminal, from its exact bytes when it has them."""
    if raw_b64 is None:
        return quote_path(path)
    return quote_path(os.fsdecode(base64.b64decode(raw_b64)))
