"""Running a command: direct spawn, a deadline, the whole process group killed on timeout,
complete output spilled to files and only a bounded tail kept in memory.

A shell string only ever runs through the published interpreter, ``/bin/sh -c``; nothing
is spawned with an implicit shell.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SHELL = ("/bin/sh", "-c")
TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    exit_code: int | None
    """None when the command was killed at its deadline."""
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    stdout_file: Path
    stderr_file: Path
    stdout_truncated: bool
    stderr_truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def combined_tail(self) -> str:
        return "\n".join(t for t in (self.stdout_tail, self.stderr_tail) if t)


def shell_argv(command: str) -> list[str]:
    return [*SHELL, command]


def run_command(
    argv: Sequence[str],
    cwd: Path,
    timeout_s: float,
    spill_dir: Path,
    env: Mapping[str, str] | None = None,
    label: str = "cmd",
) -> CommandResult:
    """Run ``argv`` in its own session; on timeout kill the whole process group."""
    spill_dir.mkdir(parents=True, exist_ok=True)
    out_path = spill_dir / f"{label}.stdout"
    err_path = spill_dir / f"{label}.stderr"
    start = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc.pid)
            proc.wait()
    duration = time.monotonic() - start
    out_tail, out_cut = _tail(out_path)
    err_tail, err_cut = _tail(err_path)
    return CommandResult(
        argv=list(argv),
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        duration_s=duration,
        stdout_tail=out_tail,
        stderr_tail=err_tail,
        stdout_file=out_path,
        stderr_file=err_path,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
    )


def _kill_group(pgid: int) -> None:
    """Kill what is left of the command's process group (children that outlived it too)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _tail(path: Path) -> tuple[str, bool]:
    size = path.stat().st_size
    with path.open("rb") as fh:
        if size > TAIL_BYTES:
            fh.seek(size - TAIL_BYTES)
        data = fh.read()
    return data.decode("utf-8", "replace"), size > TAIL_BYTES
