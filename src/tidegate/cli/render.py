"""Rendering for people: phase progress on stderr and the final report on stdout.

Everything the CLI prints goes through ``console()`` or ``dump_json()``: text is
sanitised (``tidegate.text.sanitize``: secrets redacted, terminal control characters made
visible), so a file name, a command's output or a model's words can neither leak a key
onto the screen nor drive the terminal (clear it, move the cursor, write the clipboard).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from tidegate.cli.output import dump_json
from tidegate.records.modes import Phase
from tidegate.records.report import PhaseEvent
from tidegate.text.paths import visible
from tidegate.text.sanitize import sanitize

__all__ = ["ProgressPrinter", "SafeConsole", "console", "dump_json"]


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
