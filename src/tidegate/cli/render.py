"""Rendering for people: phase progress on stderr and the final report on stdout.

Everything the CLI prints goes through ``console()`` or ``dump_json()``: text is
sanitised (``tidegate.text.sanitize``: secrets redacted, terminal control characters made
visible), so a file name, a command's output or a model's words can neither leak a key
onto the screen nor drive the terminal (clear it, move the cursor, write the clipboard).
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.status import Status
from rich.text import Text

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


def elapsed(seconds: float) -> str:
    """``7s``, ``2m05s``, ``1h02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole // 60 % 60:02d}m"


class _Running:
    """The status line of the running phase, drawn afresh at every refresh: its name, the
    time since it started and the latest line of its command's output (sanitised: the
    command can never drive the terminal), cut to one terminal line."""

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.started = time.monotonic()
        self.line = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = Text(f"{self.phase} {elapsed(time.monotonic() - self.started)}")
        if self.line:
            text.append("  ")
            text.append(self.line, style="dim")
        text.truncate(max(1, options.max_width), overflow="ellipsis")
        yield text


class ProgressPrinter:
    """A PhaseObserver that prints one line per phase as the run goes; on a terminal, a
    spinner shows which phase is running, its elapsed time and the latest line of its
    command's output (VERIFY can take minutes)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._attempt = 0
        self._status: Status | None = None
        self._running: _Running | None = None

    def phase_started(self, attempt: int, phase: Phase) -> None:
        if attempt != self._attempt:
            self._attempt = attempt
            self.console.print(f"[bold]attempt {attempt}[/bold]")
        if self.console.is_terminal:
            self._running = _Running(phase.value)
            self._status = self.console.status(self._running, spinner="dots")
            self._status.start()

    def command_output(self, line: str) -> None:
        """The latest line of the running phase's command (from the runner's thread)."""
        running = self._running
        if running is not None:
            running.line = sanitize(line.strip()).replace("\t", " ")

    def activity(self, text: str) -> None:
        """A line about work inside the running phase (a model's tool call)."""
        self.console.print(f"      [dim]· {escape(visible(text))}[/dim]")

    def phase_finished(self, event: PhaseEvent) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
            self._running = None
        mark = _MARK[event.status]
        detail = escape(visible(event.detail))
        self.console.print(
            f"  {mark} {event.phase:<15} [dim]{event.duration_ms:>8.1f} ms[/dim]  {detail}"
        )
