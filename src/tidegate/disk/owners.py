"""Which live process owns something: a pid and the kernel's start time of that process.

A pid alone is not an owner: after the process dies the kernel may give its pid to
another. The pair (pid, start time) names one process for as long as the machine runs,
so an owner is alive exactly when ``/proc/<pid>/stat`` shows the same start time.

A temporary directory can carry its owner in its name (``owned_prefix``): the name is
made in the same system call as the directory, so there is no moment when the directory
exists and its owner is unknown. ``exec.containment`` and ``workspace`` both use this,
which is why it lives on the ground floor.
"""

from __future__ import annotations

import os

from tidegate.text.numbers import whole_number

_UNKNOWN = "unknown"
SANDBOX_PREFIX = "tidegate-sandbox-"
"""Containment's private TMPDIR and HOME for one command (``exec.containment.launch``)."""


def process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            stat = file.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] if len(fields) > 19 else None


def pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_alive(pid: int, start: str, host: str) -> bool:
    """Whether a run's recorded holder still lives: another host's is assumed to (there is
    no telling); here, the same start time as recorded, or, where ``/proc`` cannot say,
    whether some process has the pid."""
    if host != os.uname().nodename:
        return True
    now = process_start(pid)
    if now is not None:
        return now == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not os.path.exists("/proc/self/stat")  # /proc exists but not this pid: dead


def owner_alive(pid: int, start: str | None) -> bool:
    """Is the process that was ``pid`` when it started at ``start`` still running? Without
    a start time, only whether some process has the pid."""
    return process_start(pid) == start if start else pid_exists(pid)


def owned_prefix(prefix: str) -> str:
    """``prefix`` followed by this process's pid and start time, for ``mkdtemp``:
    ``tidegate-sandbox-4242-81234567-``."""
    pid = os.getpid()
    return f"{prefix}{pid}-{process_start(pid) or _UNKNOWN}-"


def owner_in_name(name: str, prefix: str) -> tuple[int, str | None] | None:
    """The (pid, start time) ``owned_prefix`` put in ``name``; None for a name that does
    not carry one."""
    if not name.startswith(prefix):
        return None
    fields = name[len(prefix) :].split("-", 2)
    pid = whole_number(fields[0]) if len(fields) == 3 and fields[2] else None
    if pid is None:
        return None
    start = fields[1]
    if start != _UNKNOWN and whole_number(start) is None:
        return None
    return pid, None if start == _UNKNOWN else start
