"""Who is working on a run, and whether that process still lives."""

from __future__ import annotations

import os

import msgspec

from tidegate.disk.owners import holder_alive, process_start


class ProcessIdentity(msgspec.Struct, frozen=True):
    """Who is working on a run: pid plus the process's start time, so a reused pid is not
    mistaken for the original holder."""

    pid: int
    start: str
    host: str

    @classmethod
    def current(cls) -> ProcessIdentity:
        return cls(os.getpid(), process_start(os.getpid()) or "", os.uname().nodename)

    def local(self) -> bool:
        """Whether the holder was recorded on this machine."""
        return self.host == os.uname().nodename

    def alive(self) -> bool:
        return holder_alive(self.pid, self.start, self.host)
