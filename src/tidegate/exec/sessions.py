"""Supervised non-interactive command sessions (the tool host's command.session).

A session is one long-running process started through the published interpreter, under
the same containment as command.run, in its own process group (and, contained, its own pid
namespace). Its stdin is a pipe the model writes to with ``send``; it has no TTY. Two
reader threads drain stdout and stderr into buffers bounded at ``BUFFER_BYTES`` each:
when a process outpaces the reads, the oldest unread bytes are dropped and counted, so a
chatty server can never exhaust memory. ``read`` returns at most ``max_bytes`` per stream
and says how much more is pending. Stopping kills the whole group; the supervisor stops
every session when it is closed or when the run's deadline has passed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import IO

import msgspec

from tidegate.exec.containment import ContainmentPolicy, ContainmentReport, launch
from tidegate.exec.environment import command_environment, without_secrets
from tidegate.exec.groups import started
from tidegate.exec.guard import Clearance

BUFFER_BYTES = 1 << 20
SETTLE_S = 0.05
_STDIN_TIMEOUT_S = 2.0


class _Buffer(msgspec.Struct):
    data: bytearray = msgspec.field(default_factory=bytearray)
    dropped: int = 0
    closed: bool = False

    def feed(self, chunk: bytes) -> None:
        self.data += chunk
        excess = len(self.data) - BUFFER_BYTES
        if excess > 0:
            del self.data[:excess]
            self.dropped += excess

    def take(self, limit: int) -> tuple[bytes, int, int]:
        """Up to ``limit`` bytes (not splitting a UTF-8 character), dropped, pending."""
        cut = min(limit, len(self.data))
        while 0 < cut < len(self.data) and 0x80 <= self.data[cut] <= 0xBF:
            cut -= 1
        out = bytes(self.data[:cut])
        del self.data[:cut]
        dropped, self.dropped = self.dropped, 0
        return out, dropped, len(self.data)


class SessionRead(msgspec.Struct):
    stdout: str
    stderr: str
    dropped_bytes: int
    pending_bytes: int
    running: bool
    exit_code: int | None


class Session(msgspec.Struct):
    session_id: str
    command: str
    proc: subprocess.Popen[bytes]
    containment: ContainmentReport
    stack: ExitStack
    out: _Buffer = msgspec.field(default_factory=_Buffer)
    err: _Buffer = msgspec.field(default_factory=_Buffer)
    changed: threading.Condition = msgspec.field(default_factory=threading.Condition)
    threads: list[threading.Thread] = msgspec.field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.proc.poll() is None


class SessionError(Exception):
    """An expected session failure (unknown id, too many sessions, stdin closed)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class SessionSupervisor:
    def __init__(self, max_sessions: int = 4) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    @property
    def any_running(self) -> bool:
        with self._lock:
            sessions = list(self._sessions.values())
        return any(s.running for s in sessions)

    def start(
        self,
        argv: list[str],
        command: str,
        cwd: Path,
        policy: ContainmentPolicy | None,
        env: dict[str, str] | None = None,
        *,
        clearance: Clearance,
    ) -> Session:
        with self._lock:
            alive = [s for s in self._sessions.values() if s.running]
        if len(alive) >= self.max_sessions:
            raise SessionError("too_many_sessions", f"{len(alive)} sessions already running")
        stack = ExitStack()
        try:
            # no secret-shaped variable reaches it; by default only the allowlist
            base = command_environment() if env is None else without_secrets(env)
            sandbox = stack.enter_context(
                launch(policy, cwd, clearance=clearance, path=base.get("PATH"))
            )
            proc = stack.enter_context(  # killed by `recover` if we die
                started(
                    [*sandbox.prefix, *argv],
                    cwd,
                    {**base, **sandbox.env},
                    gated=not sandbox.prefix,  # as the runner's
                    stdin=True,
                )
            )
        except BaseException:
            stack.close()
            raise
        session = Session(secrets.token_hex(6), command, proc, sandbox.report, stack)
        assert proc.stdout is not None and proc.stderr is not None
        for pipe, buf in ((proc.stdout, session.out), (proc.stderr, session.err)):
            thread = threading.Thread(target=_drain, args=(pipe, buf, session), daemon=True)
            thread.start()
            session.threads.append(thread)
        with self._lock:
            self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str) -> Session:
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise SessionError("unknown_session", f"no session {session_id!r}")
        return session

    def send(self, session_id: str, text: str) -> None:
        session = self.get(session_id)
        stdin = session.proc.stdin
        if stdin is None or stdin.closed or not session.running:
            raise SessionError("session_not_running", f"session {session_id} has exited")
        data = text.encode("utf-8")
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        end = time.monotonic() + _STDIN_TIMEOUT_S
        try:
            while data:
                try:
                    data = data[os.write(fd, data) :]
                except BlockingIOError:
                    if time.monotonic() > end:
                        raise SessionError(
                            "stdin_full", "the process is not reading its input"
                        ) from None
                    time.sleep(0.01)
        except BrokenPipeError:
            raise SessionError("session_not_running", "the process closed its input") from None

    def read(self, session_id: str, wait_s: float, max_bytes: int) -> SessionRead:
        """Wait up to ``wait_s`` for output (or the exit); once output has come, wait until
        it has settled (``SETTLE_S`` without new bytes) so a line is not cut in pieces."""
        session = self.get(session_id)
        end = time.monotonic() + wait_s
        with session.changed:
            seen = -1
            while session.running and time.monotonic() < end:
                size = len(session.out.data) + len(session.err.data)
                if size and size == seen:
                    break  # nothing new during the last settle interval
                seen = size if size else -1
                session.changed.wait(max(0.0, min(SETTLE_S, end - time.monotonic())))
        if not session.running:
            for thread in session.threads:  # the pipes close soon after the exit
                thread.join(timeout=0.5)
        return self._collect(session, max_bytes)

    def stop(self, session_id: str, max_bytes: int) -> SessionRead:
        session = self.get(session_id)
        self._kill(session)
        read = self._collect(session, max_bytes)
        with self._lock:
            self._sessions.pop(session_id, None)
        return read

    def stop_expired(self, deadline: float | None) -> None:
        if deadline is not None and time.monotonic() >= deadline:
            self.close()

    def close(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            self._kill(session)

    def _kill(self, session: Session) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(session.proc.pid, signal.SIGKILL)
        session.proc.wait()
        for thread in session.threads:
            thread.join(timeout=2.0)
        if session.proc.stdin is not None:
            with contextlib.suppress(OSError):
                session.proc.stdin.close()
        session.stack.close()

    @staticmethod
    def _collect(session: Session, max_bytes: int) -> SessionRead:
        with session.changed:
            out, out_dropped, out_pending = session.out.take(max_bytes)
            err, err_dropped, err_pending = session.err.take(max_bytes)
        code = session.proc.poll()
        return SessionRead(
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            dropped_bytes=out_dropped + err_dropped,
            pending_bytes=out_pending + err_pending,
            running=code is None,
            exit_code=code,
        )


def _drain(pipe: IO[bytes], buf: _Buffer, session: Session) -> None:
    fd = pipe.fileno()
    try:
        while chunk := os.read(fd, 65536):
            with session.changed:
                buf.feed(chunk)
                session.changed.notify_all()
    except OSError:
        pass
    finally:
        with session.changed:
            buf.closed = True
            session.changed.notify_all()
        with contextlib.suppress(OSError):
            pipe.close()
