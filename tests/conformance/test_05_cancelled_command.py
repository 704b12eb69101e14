"""Conformance 5 (the command half): cancelling a running command stops it and its whole
process tree promptly (children, double-forked grandchildren, and under bubblewrap even a
process that called setsid), keeps the output produced so far, and is reported as
cancelled, never as a success or an ordinary exit."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.conformance._commands import BACKENDS, run_sh


def _sleepers(token: str) -> list[int]:
    """Live host processes running ``sleep <token>``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().split(") ", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline == f"sleep\0{token}\0".encode() and state != "Z":
            found.append(int(entry))
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancel_stops_the_command_tree(backend: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    token = f"{60 + os.getpid() % 30}.{time.time_ns() % 10**6:06d}"
    escape = f"setsid sleep {token} & " if backend == "bubblewrap" else ""
    command = (
        f"echo before; sleep {token} & (sleep {token} &) ; {escape}"
        f"sh -c 'sleep {token}'; echo never"
    )
    cancel = threading.Event()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    start = time.monotonic()
    res = run_sh(backend, ws, command, cancel=cancel, timeout_s=60)
    elapsed = time.monotonic() - start
    timer.cancel()
    assert elapsed < 5
    assert res.cancelled and res.stop_reason == "cancelled"
    assert res.exit_code is None and not res.ok and not res.timed_out
    assert res.stdout_tail == "before\n" and res.stdout_file.read_text() == "before\n"
    deadline = time.monotonic() + 5
    while _sleepers(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(token) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancel_before_the_start_spawns_nothing(backend: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cancel = threading.Event()
    cancel.set()
    res = run_sh(backend, ws, "touch ran", cancel=cancel)
    assert res.cancelled and res.exit_code is None
    assert not (ws / "ran").exists()
