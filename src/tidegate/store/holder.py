"""Who is working on a run, and whether that process still lives."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessIdentity:
    """Who is working on a run: pid plus the process's start time, so a reused pid is not
    mistaken for the original holder."""

    pid: int
    start: str
    host: str

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls(os.getpid(), _start_time(os.getpid()) or "", socket.gethostname())

    def local(self) -> bool:
        """Whether the holder was recorded on this machine."""
        return self.host == socket.gethostname()

    def alive(self) -> bool:
        if not self.local():
            return True  # another machine's process: cannot tell, assume it lives
        start = _start_time(self.pid)
        if start is not None:
            return start == self.start
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not Path("/proc/self/stat").exists()  # /proc exists but not this pid: dead


def _start_time(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None
