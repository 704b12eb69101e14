"""A real pseudo-terminal for the command-line tests: what a command writes to a terminal of
a given width, and answers typed at its prompts."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from pathlib import Path


def on_a_terminal(
    argv: list[str],
    cwd: Path,
    columns: int = 80,
    *,
    stderr: Path | None = None,
    env: dict[str, str | None] | None = None,
    prompt: bytes = b"",
    answers: Sequence[bytes] = (),
    code: int = 0,
    timeout_s: float = 60,
) -> bytes:
    """What ``argv`` writes to a pseudo-terminal ``columns`` wide, stdin, stdout and stderr
    (or stderr to the file ``stderr``), with ``env`` over the environment (None: unset);
    each time ``prompt`` appears once more, the next of
    ``answers`` is typed. The command must exit with ``code``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    for name, value in (env or {}).items():  # None: not set
        environ.pop(name, None)
        if value is not None:
            environ[name] = value
    err = slave if stderr is None else os.open(stderr, os.O_WRONLY | os.O_CREAT, 0o600)
    proc = subprocess.Popen(argv, cwd=cwd, env=environ, stdin=slave, stdout=slave, stderr=err)
    os.close(slave)
    if stderr is not None:
        os.close(err)
    out, typed, deadline = b"", 0, time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if prompt and typed < len(answers) and out.count(prompt) > typed:
                os.write(master, answers[typed])
                typed += 1
            if not select.select([master], [], [], 0.5)[0]:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        if proc.poll() is None and time.monotonic() >= deadline:
            proc.kill()
    assert proc.wait(timeout=timeout_s) == code, out.decode(errors="replace")
    return out
