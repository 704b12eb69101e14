"""The process groups of this process's commands, recorded while they run, so that when
tidegate itself is killed (SIGKILL, the OOM killer) what it started does not run on
unwatched: ``tidegate recover``, ``resume`` and ``gc`` kill the groups a dead process
recorded (``workspace.owned_temp.stop_dead_groups``).

A contained command needs no record to die with tidegate (bubblewrap's
``--die-with-parent``, and its pid namespace ends with it), but an uncontained one runs in
a session of its own, and nothing else stops it. The record is an empty file
``g-<pgid>-<start>`` in the process's own directory (``sandbox_dirs.process_dir``, whose
name names its owner), made after the spawn and removed once the group was killed and
reaped. A recorded group is killed only while it is still that group: its leader alive
with the recorded start time, or the leader gone and members left (a group id is never
given to a new process while the group has members); a leader pid now another process's
is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from tidegate.disk.owners import process_start
from tidegate.exec.sandbox_dirs import process_dir
from tidegate.text.numbers import whole_number

PREFIX = "g-"


@contextlib.contextmanager
def recorded(pid: int) -> Iterator[None]:
    """Record ``pid``'s process group (``pid`` is its leader) for as long as the block
    runs; the block kills and reaps it. Recording is best effort: a command is never
    refused for want of a record."""
    path = _record(pid)
    try:
        yield
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _record(pid: int) -> Path | None:
    start = process_start(pid)
    if start is None:
        return None  # already gone (or no /proc): nothing to tell a successor
    try:
        path = process_dir() / f"{PREFIX}{pid}-{start}"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError:
        return None
    return path


def kill_recorded(parent: Path, dry_run: bool = False) -> list[int]:
    """Kill the process groups recorded in ``parent``, a dead process's own directory
    (the caller checked its owner is dead); the group ids killed, sorted (``dry_run``:
    those that would be, none killed)."""
    killed: list[int] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return killed
    for name in names:
        parsed = _parse(name)
        if parsed is None:
            continue
        pgid, start = parsed
        now = process_start(pgid)
        if now is not None and now != start:
            continue  # the pid was given to another process: not that group
        try:
            os.killpg(pgid, 0 if dry_run else signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pgid)
    return sorted(killed)


def _parse(name: str) -> tuple[int, str] | None:
    if not name.startswith(PREFIX):
        return None
    fields = name[len(PREFIX) :].split("-")
    if len(fields) != 2:
        return None
    pgid, start = whole_number(fields[0]), fields[1]
    if pgid is None or pgid <= 1 or whole_number(start) is None:
        return None
    return pgid, start
