"""Supervising a spawned command: both pipes drained until it is gone, stopped at its end
or on cancel, its whole process group killed."""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import Literal

from tidegate.exec.streams import LineWatch, Stream

STRAY_GRACE_S = 1.0
"""How long to keep draining after the process group is dead (pipes held elsewhere)."""
_CANCEL_POLL_S = 0.02
_CHUNK = 1 << 20
_F_SETPIPE_SZ = 1031

StopReason = Literal["timeout", "deadline", "cancelled"]


def supervise(
    proc: subprocess.Popen[bytes],
    streams: tuple[Stream, Stream],
    end: float,
    reason: StopReason,
    cancel: threading.Event | None,
    watch: LineWatch | None = None,
) -> tuple[StopReason | None, bool]:
    """Drain both pipes until the process is gone and the pipes are closed; stop it at
    ``end`` or on ``cancel``. Returns (why it was stopped, whether a stray kept a pipe).
    ``watch``: shown every read, and woken for when its latest line is due."""
    sel, pipes, pidfd = _selector(proc, streams)
    stop: StopReason | None = None
    gone_at: float | None = None
    stray = False
    try:
        while True:
            now = time.monotonic()
            if gone_at is None and _exited(proc.pid):
                gone_at = now
                _kill_group(proc.pid)  # what the command left running in its group
                if pidfd is not None:
                    sel.unregister(pidfd)
            if gone_at is not None:
                if not any(fd in pipes for fd in sel.get_map()):
                    break
                if now - gone_at > STRAY_GRACE_S:
                    stray = True
                    break
            elif stop is None and cancel is not None and cancel.is_set():
                stop = "cancelled"
                _kill_group(proc.pid)
            elif stop is None and now >= end:
                stop = reason
                _kill_group(proc.pid)
            wait = _wait_time(now, end, gone_at, stop, cancel, pidfd)
            if watch is not None and (due := watch.wait(now)) is not None:
                wait = min(wait, due)
            _drain(sel, pipes, wait, watch)
            if watch is not None:
                watch.tick()
    finally:
        sel.close()
        _reap(proc, pidfd)
    return stop, stray


def _selector(
    proc: subprocess.Popen[bytes], streams: tuple[Stream, Stream]
) -> tuple[selectors.BaseSelector, dict[int, Stream], int | None]:
    """A selector on the command's two pipes (each fed to its stream) and, where the kernel
    has one, on a pidfd that wakes it when the process exits."""
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    pipes = {proc.stdout.fileno(): streams[0], proc.stderr.fileno(): streams[1]}
    for fd in pipes:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _F_SETPIPE_SZ, _CHUNK)  # fewer, larger reads
        sel.register(fd, selectors.EVENT_READ)
    pidfd = _pidfd(proc.pid)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)
    return sel, pipes, pidfd


def _drain(
    sel: selectors.BaseSelector,
    pipes: Mapping[int, Stream],
    wait: float,
    watch: LineWatch | None,
) -> None:
    """Read what the pipes have within ``wait`` seconds into their streams (and show it to
    ``watch``); a pipe at its end is unregistered."""
    for key, _ in sel.select(wait):
        fd = int(key.fd)
        if fd not in pipes:
            continue  # the pidfd: the process exited, handled at the loop's top
        data = os.read(fd, _CHUNK)
        if data:
            pipes[fd].feed(data)
            if watch is not None:
                watch.seen(data)
        else:
            sel.unregister(fd)


def _reap(proc: subprocess.Popen[bytes], pidfd: int | None) -> None:
    """Kill what is left of the group, reap the process, close its pipes and pidfd."""
    if pidfd is not None:
        os.close(pidfd)
    _kill_group(proc.pid)
    proc.wait()
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()


def _wait_time(
    now: float,
    end: float,
    gone_at: float | None,
    stop: StopReason | None,
    cancel: threading.Event | None,
    pidfd: int | None,
) -> float:
    if gone_at is not None:
        return max(0.0, gone_at + STRAY_GRACE_S - now)
    if stop is not None or pidfd is None:
        return _CANCEL_POLL_S  # killed, or no pidfd: poll for the exit
    wait = max(0.0, end - now)
    return min(wait, _CANCEL_POLL_S) if cancel is not None else wait


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it: while the zombie holds the pid, the
    process group id cannot be reused, so killing the group stays safe."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux >= 5.3)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill_group(pgid: int) -> None:
    """Kill what is left of the command's process group (children that outlived it too)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
